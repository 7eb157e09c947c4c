package bot

import (
	"context"
	"fmt"
	"html"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/words"
	tele "gopkg.in/telebot.v3"
)

// ChangePrompt is the question asked after Change… on a held order.
const ChangePrompt = "What should change?"

// askChange asks the approver who tapped Change… for the changes, as a
// reply prompt (the pattern of a deny reason, askReason): a forced reply
// selective to them, routed back by a note keyed by the prompt's message
// that names the request and the call it showed ("<id>.<changes>"), so a
// reply to a prompt about a call changed since changes nothing.
func (b *Bot) askChange(ctx context.Context, c tele.Context, id string, changes int) {
	r, err := b.deps.Gate.Request(ctx, id)
	if err != nil {
		b.answer(c, b.tapRefusal(ctx, err), false)
		return
	}
	if r.State != deskbot.StateOpen {
		b.answer(c, "That request is already closed; nothing was changed.", false)
		return
	}
	if r.Content.ToolName != deskbot.ToolPlaceOrder {
		b.answer(c, refusedData, true)
		return
	}
	if r.Changes != changes {
		b.answer(c, words.ChangedAgain, true)
		return
	}
	b.answer(c, "", false)
	p := person(c.Sender())
	chatID := c.Callback().Message.Chat.ID
	text := fmt.Sprintf("%s\n<a href=\"tg://user?id=%d\">%s</a>, reply to this message with the changes to %s's %s, such as <code>quantity 25</code> or <code>price 24500</code>. A change may only lower the order's risk: a smaller quantity, a price no worse for the desk (lower for a buy, higher for a sell). Your change counts as your approval.",
		ChangePrompt, p.ID, html.EscapeString(p.Name), bold(r.Desk), code(r.Content.ToolName))
	kb := &tele.ReplyMarkup{ForceReply: true, Selective: true, Placeholder: "quantity 25"}
	b.prompts.Lock()
	defer b.prompts.Unlock()
	msg := b.say(ctx, chatID, text, kb)
	if msg == nil {
		return
	}
	if err := b.deps.Notes.PutNote(ctx, changePromptKey(chatID, msg.ID), shownArg(r), reasonTTL); err != nil {
		b.log.WarnContext(ctx, "could not remember a change prompt; a reply to it will not be routed", "request", r.ID, "err", b.scrub(err.Error()))
	}
}

// change hands a reply to a change prompt to the gate, through the one
// decision flow (Gate.Change): refused, with the gate's line, unless it
// comes from an approver and lowers the risk of the call the prompt was
// about; a change that meets the count runs the changed call.
func (b *Bot) change(ctx context.Context, c tele.Context, note, text string) error {
	if !b.approver(c.Sender()) {
		return b.reply(ctx, c, words.ChangeNotApprover, nil)
	}
	id, changes, ok := ShownCall(note)
	if !ok {
		return b.reply(ctx, c, errChangeNote, nil)
	}
	if first, err := b.firstDelivery(ctx, c); !first {
		return err
	}
	p := person(c.Sender())
	ans, err := b.deps.Gate.Change(ctx, id, text, changes, p)
	if err != nil {
		return b.reply(ctx, c, esc(b.explain(ctx, "could not change a held call", err)), nil)
	}
	return b.reply(ctx, c, esc(ans.Text), nil)
}
