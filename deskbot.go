// Package deskbot is the domain: the types every other package talks in
// (desks, tool calls, orders, permission requests, events, triggers,
// grants), the ports that the adapters implement (store on Redis, sandbox on
// bash, bot on Telegram, agent on model backends, the broker), the one error
// type with its codes, and the rules of the domain: desk names, policies and
// grants, and what place_order's arguments mean (ParseOrder, CheckOrder).
//
// Nothing here does I/O. The words people and models read live in package
// words, the canonical and shown forms of arguments in argtext, retries in
// retry, and the desks' folders in deskfs. Packages depend on this one and
// never on each other's insides; cmd/deskbot wires them together.
package deskbot

import (
	"time"
	_ "time/tzdata" // India time must work in a bare container with no zoneinfo.
)

// IST is the only zone a person sees: every time in chat, logs meant for
// people and the texts a model reads are India time.
var IST = mustLoadIST()

func mustLoadIST() *time.Location {
	loc, err := time.LoadLocation("Asia/Kolkata")
	if err != nil {
		panic("deskbot: time zone data missing: " + err.Error())
	}
	return loc
}

// Now is the clock the service runs on; tests inject their own.
type Now func() time.Time
