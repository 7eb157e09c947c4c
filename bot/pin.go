package bot

import (
	"context"
	"errors"

	tele "gopkg.in/telebot.v3"
)

// With TELEGRAM_PIN a held call's message is pinned while its request is
// open, so an approver opening the group finds it at the top whatever the
// desks said since; it is unpinned when the request ends (decided or
// lapsed), and when it is shown again below (changed). A request shown
// only as a digest row has no message of its own and is not pinned.
//
// Pinning is a courtesy: a bot without the right to pin (Telegram answers
// 400) is logged and the held call goes on unpinned; `deskbot check` says
// the right is missing.

// pinAfter runs after (which records the request's message), then pins
// that message. A failed pin never fails the send: the message is out,
// and failing here would send it again.
func (o *Outbox) pinAfter(after func(context.Context, *tele.Message) error) func(context.Context, *tele.Message) error {
	if !o.cfg.Pin {
		return after
	}
	return func(ctx context.Context, m *tele.Message) error {
		if err := after(ctx, m); err != nil {
			return err
		}
		// The request is read again right before the pin, as before the
		// send: one closed meanwhile is not pinned, its outcome follows.
		if err := o.s.Pin(ctx, m.Chat.ID, m.ID); err != nil && !errors.Is(err, errClosed) {
			o.log.WarnContext(ctx, "outbox: could not pin a held call's message (does the bot have the right to pin?)", "message", m.ID, "err", err)
		}
		return nil
	}
}

// unpin unpins a request's message once the request ended. Telegram's
// refusal (no right, the message gone) is logged and passed over; a
// failure to reach it is returned, so the outcome is tried again.
func (o *Outbox) unpin(ctx context.Context, chatID int64, msgID int) error {
	if !o.cfg.Pin {
		return nil
	}
	err := o.s.Unpin(ctx, chatID, msgID)
	if err != nil && TelegramCode(err) == 400 {
		o.log.WarnContext(ctx, "outbox: could not unpin a request's message", "message", msgID, "err", err)
		return nil
	}
	return err
}
