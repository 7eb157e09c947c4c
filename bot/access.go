package bot

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/deskbot/deskbot"
	tele "gopkg.in/telebot.v3"
)

// person names the sender of an update (deskbot.PersonOf).
func person(u *tele.User) deskbot.Person {
	if u == nil {
		return deskbot.Person{Name: "someone"}
	}
	return deskbot.PersonOf(u.ID, u.FirstName, u.Username)
}

// approver reports whether u may decide, flatten, resume, revoke or tell.
// A nil sender (channel posts, anonymous admins) never may.
func (b *Bot) approver(u *tele.User) bool {
	return u != nil && b.approvers[u.ID]
}

// mayPause reports whether the sender of c may pause a desk: any approver,
// and any member of the team's group writing there as themselves. Stopping
// a desk's turns is always safe, so a member who sees a runaway desk need
// not wait for an approver; only an approver resumes it. A post made as a
// chat (an anonymous admin, a channel) names no one the audit could name.
func (b *Bot) mayPause(c tele.Context) bool {
	if b.approver(c.Sender()) {
		return true
	}
	m, ch := c.Message(), c.Chat()
	return c.Sender() != nil && ch != nil && ch.ID == b.cfg.ChatID && (m == nil || m.SenderChat == nil)
}

// listens reports whether the bot acts on messages in c's chat: the team's
// group, and private chats with approvers. Everything else is a stranger's
// chat, where only /whoami is answered.
func (b *Bot) listens(c tele.Context) bool {
	ch := c.Chat()
	if ch == nil {
		return false
	}
	if ch.ID == b.cfg.ChatID {
		return true
	}
	return ch.Type == tele.ChatPrivate && b.approver(c.Sender())
}

// guard is the middleware every handler runs in: it hands the work to the
// dispatcher (order.go), recovers panics (telebot has no recovery, and one
// panic would end the service), counts the handler so Run can wait for it,
// drops messages that are not the sender's own words (secondHand), and
// drops messages from chats the bot does not serve.
func (b *Bot) guard(anywhere bool) tele.MiddlewareFunc {
	return func(next tele.HandlerFunc) tele.HandlerFunc {
		return func(c tele.Context) error {
			if !b.track.Add() {
				return nil // shutting down; Telegram will redeliver it
			}
			b.dispatch.dispatch(c, func() {
				defer b.track.Done()
				defer func() {
					if v := recover(); v != nil {
						b.log.Error("panic in a Telegram handler", "panic", b.scrub(fmt.Sprint(v)), "stack", b.scrub(string(debug.Stack())))
						b.failed(c)
					}
				}()
				if m := c.Message(); c.Callback() == nil && m != nil && m.Chat != nil {
					b.sender.Saw(m.Chat.ID, m.ID) // people's words scroll the chat too
				}
				if c.Callback() == nil && secondHand(c.Message()) {
					b.secondHand(c)
					return
				}
				if !anywhere && c.Callback() == nil && !b.listens(c) {
					var chat int64
					if c.Chat() != nil {
						chat = c.Chat().ID
					}
					b.log.Debug("ignored a message from a chat the bot does not serve", "chat", chat)
					return
				}
				if !b.mayHandle(c.Update().ID) {
					b.log.Warn("not handling an update: the lease passed to another process before this one confirmed it, so that one is given it", "update", c.Update().ID)
					return
				}
				if err := next(c); err != nil {
					b.log.Error("telegram handler failed", "err", b.scrub(err.Error()))
				}
			})
			return nil
		}
	}
}

// handlerContext bounds one handler's work by a deadline, so a hung Redis or
// Telegram cannot pile up goroutines, and by the stop's grace (Run), not by
// the service's lifetime: an update taken before the stop is finished.
func (b *Bot) handlerContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(b.handlers(), 30*time.Second)
}

// once reports whether key is seen for the first time. Telegram delivers the
// last batch of updates again after a crash, so a side effect (a /tell, a
// flatten) is marked before it is done: at most once is the safer failure
// for a person's command, who sees no answer and can repeat it.
func (b *Bot) once(ctx context.Context, key string) (bool, error) {
	return b.deps.Notes.PutNoteOnce(ctx, key, "1", onceTTL)
}

// firstDelivery reports whether this is the first time the message of c
// is handled, so a message Telegram delivers again after a crash does not
// act twice. When it cannot tell, it answers the person and returns false.
func (b *Bot) firstDelivery(ctx context.Context, c tele.Context) (bool, error) {
	m := c.Message()
	first, err := b.once(ctx, messageOnceKey(m.Chat.ID, m.ID))
	if err != nil {
		return false, b.reply(ctx, c, b.explain(ctx, "could not record a message", err), nil)
	}
	return first, nil
}

// failed tells the person a handler broke, so a tap or a command is not met
// with silence.
func (b *Bot) failed(c tele.Context) {
	if c.Callback() != nil {
		b.answer(c, genericFailure, true)
		return
	}
	if c.Chat() == nil || !b.listens(c) {
		return
	}
	ctx, cancel := b.handlerContext()
	defer cancel()
	b.reply(ctx, c, genericFailure, nil)
}

// ForwardedNotACommand answers an approver who forwarded a command (or sent
// one via a bot), so they learn why nothing happened.
const ForwardedNotACommand = "Forwarded messages are not taken as commands."

// secondHand reports whether m carries words that are not its sender's own:
// a forward, in the shape of Bot API 7.0 (forward_origin) or of the older
// fields (forward_from, forward_from_chat, forward_sender_name,
// forward_date), a channel post forwarded automatically into the group, or
// a message sent via an inline bot. Only people's own words are commands,
// replies to a desk or reasons for a denial: whoever forwards a message is
// not its author, and the author may be a stranger or a desk. telebot's
// IsForwarded looks only at forward_from and forward_from_chat, which Bot
// API 7.0 no longer sends, so every field is checked here.
func secondHand(m *tele.Message) bool {
	return m != nil && (m.Origin != nil || m.OriginalSender != nil || m.OriginalChat != nil ||
		m.OriginalSenderName != "" || m.OriginalUnixtime != 0 || m.AutomaticForward || m.Via != nil)
}

// secondHand drops a message that is not its sender's own words. It is
// answered only when an approver forwarded a command in a chat the bot
// serves, so they are not met with silence; anything else (forwards shared
// to discuss, and anything from people who are not approvers) is dropped
// without a word, so forwards cannot be used to make the bot spend the
// group's message budget.
func (b *Bot) secondHand(c tele.Context) {
	m := c.Message()
	var chat int64
	if m.Chat != nil {
		chat = m.Chat.ID
	}
	b.log.Info("ignored a message that is forwarded or sent via a bot", "chat", chat, "from", senderID(c))
	if !strings.HasPrefix(m.Text, "/") || !b.approver(c.Sender()) || !b.listens(c) {
		return
	}
	ctx, cancel := b.handlerContext()
	defer cancel()
	b.reply(ctx, c, ForwardedNotACommand, nil)
}
