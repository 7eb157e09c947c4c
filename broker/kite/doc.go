// Package kite is deskbot's side of Zerodha's Kite Connect, through the
// official client (github.com/zerodha/gokiteconnect/v4) only.
//
// What it owns today: the daily login (login.go). A Kite session lasts one
// day and only a person can start it: /login gives an approver a button to
// Kite's login page, the callback on the service's HTTP address exchanges
// Kite's request_token for the day's access token, and the session is kept
// in Redis (the store's notes, under the keys login.go names) for every
// instance to read.
//
// Concurrency: a Login is safe for concurrent use; what two callbacks race
// for (a login's state) is taken first-caller-wins in Redis, so any number
// of instances may serve the callback.
//
// Secrets: the API secret and the access token never reach a log line, an
// error shown to a person, a page or a chat message. Kite's errors are
// reported by their type and status, never by their text, which may quote
// a request.
package kite
