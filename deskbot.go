// Package deskbot holds the domain: the types every other package talks in
// (desks, tool calls, permission requests, events, triggers, grants) and the
// small interfaces that the adapters implement (store on Redis, sandbox on
// bash, bot on Telegram, agent on model backends).
//
// Nothing here talks to a network. The one exception to "no I/O" is
// deskfile.go: the bot, the agent and the sandbox all open files that a
// (hostile) desk controls, and must do it in one safe way. Packages depend on
// this one and never on each other's insides; cmd/deskbot wires them
// together. Shared habits live here too: the desk-name rule (name.go) and
// the retry backoff (backoff.go).
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

// Clock renders t as HH:MM in India time, the form used in every message.
func Clock(t time.Time) string { return t.In(IST).Format("15:04") }

// Now is the clock the service runs on; tests inject their own.
type Now func() time.Time
