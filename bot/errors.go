package bot

import (
	"context"
	"strings"

	"github.com/deskbot/deskbot"
)

// genericFailure is what the chat sees for a system failure: its details
// (addresses, a library's words, possibly the token in a URL) are for the
// log, not for the group.
const genericFailure = "Something went wrong on our side, so nothing was done; it has been logged."

// explain is the one place that turns an error into what the chat sees. A
// coded error's message was written for people; anything else is a system
// failure, logged as an error (the only errors logged as such) and shown as
// a generic line.
func (b *Bot) explain(ctx context.Context, what string, err error) string {
	switch deskbot.ErrorCode(err) {
	case "":
		return ""
	case deskbot.EINTERNAL:
		b.log.ErrorContext(ctx, what, "err", b.scrub(err.Error()))
		return genericFailure
	case deskbot.EUNAVAILABLE:
		b.log.WarnContext(ctx, what, "err", b.scrub(err.Error()))
	}
	return b.scrub(deskbot.ErrorMessage(err))
}

// scrub removes the bot token from text bound for a log or the chat:
// telebot's errors can quote request URLs, and /bot<token>/ is in every one.
func (b *Bot) scrub(s string) string {
	if b.cfg.Token == "" {
		return s
	}
	return strings.ReplaceAll(s, b.cfg.Token, "<token>")
}

// errChangeNote answers a reply to a change prompt whose note cannot be
// read as a request: nothing is changed.
const errChangeNote = "Sorry, I can't tell which held call that change is for, so nothing was changed."
