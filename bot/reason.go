package bot

import (
	"context"
	"fmt"
	"html"
	"regexp"
	"strings"

	"github.com/deskbot/deskbot"
	tele "gopkg.in/telebot.v3"
)

// ReasonPrompt is the question asked after a Deny.
const ReasonPrompt = "Why, or what should the desk do instead?"

// askReason asks the person who denied for an optional reason. The denial
// has already taken effect; the desk is told when the reason arrives, on
// Skip, or when the gate's sweep finds DENY_REASON_WAIT over.
//
// Telegram gives a message one reply_markup: the prompt carries the Skip
// button and asks for a forced reply, selective to the person mentioned, and
// a client shows whichever it honours. A plain reply to the prompt works
// either way.
func (b *Bot) askReason(ctx context.Context, c tele.Context, r *deskbot.Request, p deskbot.Person) {
	chatID := c.Callback().Message.Chat.ID
	text := fmt.Sprintf("%s\n<a href=\"tg://user?id=%d\">%s</a>, reply to this message to tell %s why you denied %s, or tap Skip.",
		ReasonPrompt, p.ID, html.EscapeString(p.Name), bold(r.Desk), code(r.Content.ToolName))
	kb := &tele.ReplyMarkup{
		ForceReply:     true,
		Selective:      true,
		Placeholder:    "Reason for " + r.Desk,
		InlineKeyboard: [][]tele.InlineButton{{{Unique: ActSkipReason, Data: r.ID, Text: "Skip"}}},
	}
	b.prompts.Lock()
	defer b.prompts.Unlock()
	msg := b.say(ctx, chatID, text, kb)
	if msg == nil {
		return // the sweep tells the desk without a reason
	}
	if err := b.deps.Notes.PutNote(ctx, reasonPromptKey(chatID, msg.ID), r.ID, reasonTTL); err != nil {
		b.log.WarnContext(ctx, "could not remember a reason prompt; a reply to it will not be routed", "request", r.ID, "err", b.scrub(err.Error()))
	}
}

// skipReason tells the desk of a denial now, without a reason.
func (b *Bot) skipReason(ctx context.Context, c tele.Context, id string) {
	p := person(c.Sender())
	r, err := b.deps.Gate.AddReason(ctx, id, "", p)
	switch deskbot.ErrorCode(err) {
	case "":
	case deskbot.ECONFLICT:
		b.answer(c, deskbot.ErrorMessage(err), false)
		b.closePrompt(ctx, c.Callback().Message, "")
		return
	default:
		b.answer(c, b.tapRefusal(ctx, err), true)
		return
	}
	b.answer(c, "Skipped; "+r.Desk+" is told now.", false)
	b.closePrompt(ctx, c.Callback().Message, "Skipped by "+bold(p.Name)+"; "+bold(r.Desk)+" was told of the denial.")
}

// closePrompt replaces a reason prompt's text and removes its Skip button.
func (b *Bot) closePrompt(ctx context.Context, m *tele.Message, text string) {
	if m == nil {
		return
	}
	if text == "" {
		text = ReasonPrompt + "\nClosed: the desk was already told."
	}
	if err := b.sender.Edit(ctx, m.Chat.ID, m.ID, text, nil); err != nil {
		b.log.Debug("could not close a reason prompt", "err", b.scrub(err.Error()))
	}
}

// onText handles replies: to a reason prompt (the reason for a denial) or
// to a desk's message (a new message for that desk); and, with topics, a
// plain message in a desk's topic (for that desk). Other text is chatter
// among people and is left alone.
func (b *Bot) onText(c tele.Context) error {
	m := c.Message()
	if m == nil {
		return nil
	}
	ctx, cancel := b.handlerContext()
	defer cancel()
	text := strings.TrimSpace(m.Text)
	if cmd, ok := unknownCommand(text); ok {
		return b.reply(ctx, c, "Unknown command "+esc(cmd)+". /help lists the commands.", nil)
	}
	desk := ""
	if m.ReplyTo != nil {
		// A prompt being set up may be the one replied to: wait for its note.
		b.prompts.RLock()
		//lint:ignore SA2001 an empty critical section: waiting for the writer is the point
		b.prompts.RUnlock()
		if id, err := b.deps.Notes.Note(ctx, reasonPromptKey(m.Chat.ID, m.ReplyTo.ID)); err == nil {
			return b.reason(ctx, c, id, text)
		} else if deskbot.ErrorCode(err) != deskbot.ENOTFOUND {
			return b.reply(ctx, c, b.explain(ctx, "could not read a note", err), nil)
		}
		if shown, err := b.deps.Notes.Note(ctx, changePromptKey(m.Chat.ID, m.ReplyTo.ID)); err == nil {
			return b.change(ctx, c, shown, text)
		} else if deskbot.ErrorCode(err) != deskbot.ENOTFOUND {
			return b.reply(ctx, c, b.explain(ctx, "could not read a note", err), nil)
		}
		d, err := b.deps.Notes.Note(ctx, deskMessageKey(m.Chat.ID, m.ReplyTo.ID))
		switch deskbot.ErrorCode(err) {
		case "":
			desk = d
		case deskbot.ENOTFOUND: // a reply to something else
		default:
			return b.reply(ctx, c, b.explain(ctx, "could not read a note", err), nil)
		}
	}
	if desk == "" {
		d, err := b.topicDesk(ctx, m)
		if err != nil {
			return b.reply(ctx, c, b.explain(ctx, "could not read a note", err), nil)
		}
		if d == "" {
			return nil
		}
		// People who may not tell a desk anything may still talk in its
		// topic: their words are left alone, without a reply each.
		if !b.approver(c.Sender()) {
			return nil
		}
		desk = d
	}
	if !b.approver(c.Sender()) {
		return b.reply(ctx, c, "Only approvers can tell a desk something.", nil)
	}
	if !b.desks[desk] || text == "" {
		return nil
	}
	return b.tell(ctx, c, desk, text)
}

// commandRx is a command as telebot reads one: "/name", maybe
// "@botname", then a space or the end.
var commandRx = regexp.MustCompile(`^(/\w+)(@\w+)?(\s|$)`)

// unknownCommand reports whether text is a command no handler took, and
// which. telebot routes known commands to their handlers and drops those
// addressed to another bot ("/cmd@otherbot") before any handler runs, so a
// command that reaches the text handler is this bot's and unknown.
func unknownCommand(text string) (string, bool) {
	m := commandRx.FindStringSubmatch(text)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// topicDesk returns the desk whose forum topic m was written in, or ""
// when it was not written in a desk's topic. It goes by is_topic_message,
// not by the thread id alone: in a group without topics, a reply carries a
// thread id too.
func (b *Bot) topicDesk(ctx context.Context, m *tele.Message) (string, error) {
	if b.topics == nil || !m.TopicMessage || m.ThreadID == 0 || m.Chat == nil || m.Chat.ID != b.cfg.ChatID {
		return "", nil
	}
	desk, err := b.topics.desk(ctx, m.ThreadID)
	if deskbot.ErrorCode(err) == deskbot.ENOTFOUND {
		return "", nil
	}
	return desk, err
}

// reason hands a denial's reason to the gate, which tells the desk.
func (b *Bot) reason(ctx context.Context, c tele.Context, id, text string) error {
	if !b.approver(c.Sender()) {
		return b.reply(ctx, c, "Only approvers can give a reason for a denial.", nil)
	}
	if first, err := b.firstDelivery(ctx, c); !first {
		return err
	}
	p := person(c.Sender())
	r, err := b.deps.Gate.AddReason(ctx, id, text, p)
	if err != nil {
		return b.reply(ctx, c, b.explain(ctx, "could not add a reason", err), nil)
	}
	b.closePrompt(ctx, c.Message().ReplyTo, "Reason from "+bold(p.Name)+" for the denial of "+code(r.Content.ToolName)+" on "+bold(r.Desk)+":\n"+html.EscapeString(text))
	return b.reply(ctx, c, "Told "+bold(r.Desk)+", with your reason.", nil)
}
