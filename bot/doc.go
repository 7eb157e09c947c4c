// Package bot is deskbot's face: the Telegram bot through which the team
// sees held calls and desk messages and decides, in one group chat.
//
// It owns the telebot client and long polling (poll.go), who may do what
// (access.go: approvers decide, strangers get an alert and change nothing),
// the order updates are handled in (order.go), the button taps
// (callbacks.go) and commands (commands.go, desks.go, desk.go; pnl.go sends
// package report's picture, and the day's at REPORT_AT), the deny-reason
// prompt (reason.go), the one place an error becomes chat text (errors.go),
// and the one place that names what the bot keeps in the store (keys.go).
// Outgoing messages go through the Sender (sender.go: paced within
// Telegram's limits, retrying 429s, 5xx and network errors) and, for events,
// the Outbox (outbox.go; a desk's words in outbox_desk.go, merged when said
// close together). Held calls are rendered in render.go, a broker call in
// trading words above its arguments. With topics on (topics.go) each desk
// speaks in a forum topic of its own while held calls stay in General; an
// order's fill or rejection (an order event) goes to its desk's topic too,
// in the lane of held calls' outcomes. A
// person's /tell is acknowledged with a reaction, not a message.
//
// Concurrency: telebot hands updates over one at a time, in the order
// Telegram numbered them (Settings.Synchronous), and the dispatcher decides
// what runs side by side: a tap on a button (or an update without a chat)
// runs at once in a goroutine of its own, since the gate's atomic transition
// settles any race between taps; the messages of one chat run one after
// another, in the order they were typed, while other chats go on; the bot's
// replies are sent from a queue of their own per chat, so a reply Telegram
// refuses for a while does not hold up the commands after it. An allowed
// held call is run by the gate on the service's lifetime, not the tap's
// (Gate.Decide). Handlers share nothing but the store and the Sender (safe for
// concurrent use); Run waits for every handler it started before it returns. An update taken before a stop is finished, not cut off
// (its handler's context outlives the service's by Config.StopGrace): the
// poller counted it as handed over, so nobody would be given it again.
//
// The group's budget (about 20 sends a minute) goes by lane (lanes.go):
// held calls first, then what closes them, then replies to commands, then
// desk chatter, which never takes the last sends of the minute and whose
// desks take turns (a desk's send_message is told how many of its
// messages wait: ChatBacklog, or Backlog for what is built before the
// bot). A held call is checked right before its message goes
// out and is never offered once closed. When more held calls wait than can
// be shown one by one, each desk's are listed in one digest message edited
// in place (digest.go), a row per request. When APPROVAL_REMIND is left
// before an unanswered request lapses, the leader's scan (remind.go)
// replies to its message mentioning the approvers who have not answered,
// once across restarts (a note taken before the send), in the request
// lane. With TELEGRAM_PIN a held call's message is pinned while it is open
// (pin.go). TELEGRAM_QUIET (quiet.go) sends desk messages, fills and the
// day's report without a sound; held calls, reminders and halts always
// sound.
//
// Delivery: events are read from the store's stream in a consumer group and
// acknowledged only after Telegram accepted the message, so a restart or an
// outage loses nothing (the lanes are a schedule over the unacknowledged
// entries, rebuilt from them at start); a note per sent event keeps a redelivered one from
// being sent twice (only a hard crash between Telegram's answer and that
// note can duplicate a message). At a graceful stop, Flush delivers what is
// left once Run has returned, up to a bound, so that the team sees the last
// outcomes before the service goes away. Updates Telegram redelivers after a crash
// are deduplicated before anything with a side effect runs. Callback data
// carries no trust: every tap is checked against the store.
//
// Several processes: only the leader runs a bot (Deps.Leader). It keeps
// the Telegram update offset in the store, written with its fencing token
// before Telegram is told (poll.go), so the next leader starts where it
// stopped: no confirmed update is given again, none is skipped; and a
// process that may have lost the lease hands no update over.
package bot
