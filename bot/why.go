package bot

import (
	"context"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/words"
	tele "gopkg.in/telebot.v3"
)

// Why? on a held call asks its desk to explain before anyone decides: the
// desk gets the question as a trigger of its own and answers in a turn
// with no tools, and its answer is posted as a reply to the request's
// message. The request stays open and lapses when it would have. One
// question per request is outstanding at a time (a note, first caller
// wins, kept until the answer is posted or the request lapses), and a
// desk that is paused or halted is not asked: it would not answer.

// AskWhy asks request id's desk why it wants the call, for p (an approver,
// in the chat or on the desks page), and returns the person's answer.
func (b *Bot) AskWhy(ctx context.Context, id string, p deskbot.Person) (string, error) {
	r, err := b.deps.Gate.Request(ctx, id)
	if err != nil {
		return "", err
	}
	if r.State != deskbot.StateOpen {
		return "", deskbot.Errorf(deskbot.ECONFLICT, "That request is already closed; nobody was asked.")
	}
	st, err := b.deps.Desks.DeskStatus(ctx, r.Desk)
	if err != nil {
		return "", err
	}
	switch {
	case st.Halt != nil:
		return "", deskbot.Errorf(deskbot.ECONFLICT, "%s is halted by a risk rule, so it is not asked; decide on what the request shows.", r.Desk)
	case st.Paused:
		return "", deskbot.Errorf(deskbot.ECONFLICT, "%s is paused, so it is not asked; decide on what the request shows, or /resume it first.", r.Desk)
	}
	now := b.now()
	ttl := max(r.ExpiresAt.Sub(now), time.Second)
	first, err := b.deps.Notes.PutNoteOnce(ctx, whyKey(id), p.Audited(), ttl)
	if err != nil {
		return "", err
	}
	if !first {
		return "Already asked; the desk's answer comes as a reply to the request.", nil
	}
	if err := b.deps.Inbox.Enqueue(ctx, words.WhyTrigger(r, now)); err != nil {
		_ = b.deps.Notes.DeleteNote(context.WithoutCancel(ctx), whyKey(id)) // asked again at the next tap
		return "", err
	}
	if err := b.deps.Audit.Audit(ctx, deskbot.AuditEntry{Action: "why", Desk: r.Desk, Tool: r.Content.ToolName, RequestID: id, By: p.Audited(), At: now}); err != nil {
		b.log.WarnContext(ctx, "could not audit a question to a desk", "request", id, "err", b.scrub(err.Error()))
	}
	return "Asked " + r.Desk + " why; its answer comes as a reply to the request. It still lapses at " + words.Time(r.ExpiresAt) + " IST.", nil
}

// why answers a tap on Why?.
func (b *Bot) why(ctx context.Context, c tele.Context, id string) {
	text, err := b.AskWhy(ctx, id, person(c.Sender()))
	if err != nil {
		b.answer(c, b.tapRefusal(ctx, err), true)
		return
	}
	b.answer(c, text, false)
}
