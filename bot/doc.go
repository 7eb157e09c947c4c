// Package bot is deskbot's face: the Telegram bot through which the team
// sees held calls and desk messages and decides, in one group chat.
//
// It owns the telebot client and long polling (poll.go), who may do what
// (access.go: approvers decide, strangers get an alert and change nothing),
// the button taps (callbacks.go) and commands (commands.go, desks.go), the
// deny-reason prompt (reason.go), and the one place an error becomes chat
// text (errors.go). Outgoing messages go through the Sender (sender.go:
// paced within Telegram's limits, retrying 429s, 5xx and network errors)
// and, for events, the Outbox (outbox.go).
//
// Concurrency: telebot runs each update's handler in its own goroutine, so
// handlers share nothing but the store; a request's fate is decided by the
// gate's atomic transition, never by the order taps arrive in.
//
// Delivery: events are read from the store's stream in a consumer group and
// acknowledged only after Telegram accepted the message, so a restart or an
// outage loses nothing; a note per sent event keeps a redelivered one from
// being sent twice (only a hard crash between Telegram's answer and that
// note can duplicate a message). Updates Telegram redelivers after a crash
// are deduplicated before anything with a side effect runs. Callback data
// carries no trust: every tap is checked against the store.
package bot
