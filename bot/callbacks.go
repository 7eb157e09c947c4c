package bot

import (
	"context"
	"slices"
	"strings"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/argtext"
	"github.com/deskbot/deskbot/words"
	tele "gopkg.in/telebot.v3"
)

// The texts a tap can be answered with (callback answers: at most 200
// characters, shown as a toast or an alert).
const (
	onlyApprovers = "Only approvers can decide; nothing was changed."
	refusedData   = "Sorry, I don't recognise that button, so nothing was done."
	unknownReq    = "Sorry, I don't know that request (it may be too old), so nothing was done."
	openFirst     = "This row does not show the whole call. Tap Open to see it whole, and allow it there."
)

// onCallback handles every tap. Callback data carries no trust: it is
// parsed strictly, the person is checked against the approvers, and every
// request, desk and grant it names is checked against the store.
func (b *Bot) onCallback(c tele.Context) error {
	ctx, cancel := b.handlerContext()
	defer cancel()
	cb := c.Callback()
	action, arg, err := ParseCallback(cb.Data)
	if err != nil {
		b.log.InfoContext(ctx, "refused malformed callback data", "from", senderID(c))
		b.answer(c, refusedData, true)
		return nil
	}
	if !b.approver(c.Sender()) {
		b.log.InfoContext(ctx, "refused a tap by a non-approver", "from", senderID(c), "action", action)
		b.answer(c, onlyApprovers, true)
		return nil
	}
	switch action {
	case ActAllowOnce:
		id, changes, _ := ShownCall(arg) // parsed strictly above
		b.decide(ctx, c, id, changes, "", deskbot.AllowOnce)
	case ActAlwaysAllow:
		id, changes, _ := ShownCall(arg)
		b.askGrant(ctx, c, arg, id, changes)
	case ActGrantConfirm:
		shown, terms, _ := strings.Cut(arg, termsSep)
		id, changes, _ := ShownCall(shown)
		b.decide(ctx, c, id, changes, terms, deskbot.AlwaysAllow)
		b.closeGrantConfirm(ctx, c, "")
	case ActGrantCancel:
		b.answer(c, "No grant given.", false)
		b.closeGrantConfirm(ctx, c, words.GrantCancelled)
	case ActDeny:
		b.decide(ctx, c, arg, -1, "", deskbot.Deny)
	case ActChange:
		id, changes, _ := ShownCall(arg)
		b.askChange(ctx, c, id, changes)
	case ActSkipReason:
		b.skipReason(ctx, c, arg)
	case ActFlattenAsk, ActFlattenConfirm, ActCancel:
		b.flattenTap(ctx, c, action, arg)
	case ActRevoke:
		b.revoke(ctx, c, arg)
	case ActOpen:
		b.open(ctx, c, arg)
	case ActResumeHalted:
		b.resumeHalted(ctx, c, arg)
	case ActWhy:
		b.why(ctx, c, arg)
	case ActLogin:
		b.answer(c, "The login button is below.", false)
		b.login(ctx, c)
	default:
		b.answer(c, refusedData, true)
	}
	return nil
}

// decide takes a person's decision on a request through the gate, which
// takes it, runs a won allow on the service's lifetime and words the
// answer; the tap is answered at once and the outbox edits the message
// when the call ends. Of any number of taps (two approvers at once, a
// redelivered update, a tap as the request lapses) exactly one wins; the
// others are answered with what already happened and run nothing.
//
// What the tapped message showed goes with the decision (deskbot.Seen):
// how many times the call had been changed (changes), whether it showed
// the call whole (the message offers no Allow on a call it cut, and a
// forged tap must not do what no button does), and the grant's terms a
// confirmation showed (terms). A digest row that does not show the call
// whole sends the approver to its own message first.
func (b *Bot) decide(ctx context.Context, c tele.Context, id string, changes int, terms string, d deskbot.Decision) {
	p := person(c.Sender())
	seen := deskbot.Seen{Changes: changes, Whole: true, Terms: terms}
	if d != deskbot.Deny {
		// A failed read is left to Decide, which reports it the same way.
		if r, err := b.deps.Gate.Request(ctx, id); err == nil {
			seen.Whole = shownWhole(r)
			if seen.Whole && b.onDigest(ctx, c, r) && !rowShowsWhole(r) {
				b.log.WarnContext(ctx, "refused an allow from a digest row that does not show the call whole", "request", id, "from", senderID(c))
				b.answer(c, openFirst, true)
				return
			}
		}
	}
	ans, err := b.deps.Gate.Decide(ctx, id, seen, d, "", p)
	if err != nil {
		// A refusal of a call not shown whole is an alert, as the missing
		// button's would be.
		b.answer(c, b.tapRefusal(ctx, err), deskbot.ErrorMessage(err) == words.NotShownWholeAnswer)
		return
	}
	b.answer(c, ans.Text, false)
	if ans.AwaitsReason {
		b.askReason(ctx, c, ans.Request, p)
	}
}

// askGrant takes an Always allow tap. A grant of a capped tool (an order:
// deskbot.Policies.GrantCap) is given only once confirmed: the tap is
// answered with what the grant would cover and until when, under buttons
// of its own, and nothing is decided yet. Any other always allow is
// decided at once.
func (b *Bot) askGrant(ctx context.Context, c tele.Context, arg, id string, changes int) {
	g, key, ok, err := b.deps.Gate.GrantTerms(ctx, id)
	if err != nil {
		b.answer(c, b.tapRefusal(ctx, err), false)
		return
	}
	if !ok || g.Limit <= 0 {
		// Nothing to confirm: a tool whose grants are not capped, or an
		// always allow that grants nothing and runs the call once.
		b.decide(ctx, c, id, changes, "", deskbot.AlwaysAllow)
		return
	}
	r, err := b.deps.Gate.Request(ctx, id)
	if err != nil {
		b.answer(c, b.tapRefusal(ctx, err), false)
		return
	}
	if r.State != deskbot.StateOpen {
		b.answer(c, words.Describe(r), false)
		return
	}
	now := b.now()
	// The terms' key goes with the confirmation: the gate grants only
	// while they are still the terms it would give.
	yes, err := NewButton(words.GrantConfirmButton(g, now), ActGrantConfirm, arg+termsSep+key)
	if err != nil {
		b.answer(c, refusedData, true)
		return
	}
	no, err := NewButton("Cancel", ActGrantCancel, id)
	if err != nil {
		b.answer(c, refusedData, true)
		return
	}
	b.answer(c, "Confirm the grant below.", false)
	kb := &tele.ReplyMarkup{InlineKeyboard: [][]tele.InlineButton{{yes}, {no}}}
	b.say(WithLane(ctx, LaneRequest), c.Callback().Message.Chat.ID, esc(words.GrantConfirm(g, now)), kb)
}

// closeGrantConfirm takes the buttons off a grant's confirmation once it
// was used, so it is tapped once: text replaces it ("": it keeps its
// words, and the request's own message shows the outcome).
func (b *Bot) closeGrantConfirm(ctx context.Context, c tele.Context, text string) {
	m := c.Callback().Message
	if m == nil {
		return
	}
	if text == "" {
		text = esc(m.Text)
	} else {
		text = esc(text)
	}
	if err := b.sender.Edit(ctx, m.Chat.ID, m.ID, text, nil); err != nil {
		b.log.WarnContext(ctx, "could not close a grant's confirmation", "err", b.scrub(err.Error()))
	}
}

// onDigest reports whether the tapped message is a page of r's desk's
// digest. Telegram sends the tapped message, keyboard and all, with the
// tap, and a digest page offers Open for a call its row cannot show
// whole: that is known at once, before the page's note (written once the
// page is sent) can be read, so no tap between the two is taken for one on
// the call's own message. A failed read counts as a digest: the stricter
// rule applies.
func (b *Bot) onDigest(ctx context.Context, c tele.Context, r *deskbot.Request) bool {
	m := c.Callback().Message
	if m == nil {
		return true
	}
	if m.ReplyMarkup != nil {
		for _, row := range m.ReplyMarkup.InlineKeyboard {
			for _, btn := range row {
				if act, id, err := ParseCallback(btn.Data); err == nil && act == ActOpen && id == r.ID {
					return true
				}
			}
		}
	}
	v, err := b.deps.Notes.Note(ctx, digestKey(r.Desk))
	if deskbot.ErrorCode(err) == deskbot.ENOTFOUND {
		return false
	}
	return err != nil || slices.Contains(strings.Split(v, ","), messageRef(m.Chat.ID, m.ID))
}

// open sends a request shown in a digest row as its own message: the call
// whole, with the buttons its message always has. Its outcome later edits
// that message too (the outbox's closeAll).
func (b *Bot) open(ctx context.Context, c tele.Context, id string) {
	r, err := b.deps.Gate.Request(ctx, id)
	if err != nil {
		b.answer(c, b.tapRefusal(ctx, err), false)
		return
	}
	if r.State != deskbot.StateOpen {
		b.answer(c, "That request is already closed; nothing was done.", false)
		return
	}
	// Shown with the desk's book, as the request's own message always is:
	// a flatten's plan is what an approver decides on (and what the gate
	// checks an allow against).
	live, err := b.outbox.shownLive(ctx, r)
	if err != nil {
		b.answer(c, b.tapRefusal(ctx, err), false)
		return
	}
	b.answer(c, "", false)
	text, kb := RenderRequest(r, live)
	m := b.say(WithLane(ctx, LaneRequest), c.Callback().Message.Chat.ID, text, kb)
	if m == nil {
		return
	}
	if err := b.deps.Notes.PutNote(ctx, openMessageKey(r.ID), messageRef(m.Chat.ID, m.ID), noteTTL); err != nil {
		b.log.WarnContext(ctx, "could not note an opened request's message", "request", r.ID, "err", b.scrub(err.Error()))
	}
}

// tapRefusal says why a tap did nothing. An unknown request is most often
// forged data or a message older than the store's memory.
func (b *Bot) tapRefusal(ctx context.Context, err error) string {
	switch deskbot.ErrorCode(err) {
	case deskbot.ENOTFOUND:
		return unknownReq
	case deskbot.EINVALID:
		return refusedData
	}
	return b.explain(ctx, "a tap failed", err)
}

// flattenTap handles the flatten buttons: a desk chosen (ask to confirm),
// the confirmation, or cancel.
func (b *Bot) flattenTap(ctx context.Context, c tele.Context, action, target string) {
	if target != deskbot.AllDesks && !b.desks[target] {
		b.answer(c, refusedData, true)
		return
	}
	m := c.Callback().Message
	switch action {
	case ActFlattenAsk:
		b.answer(c, "", false)
		text, kb := b.flattenConfirm(ctx, target)
		b.say(ctx, m.Chat.ID, text, kb)
	case ActCancel:
		b.answer(c, "Cancelled; nothing was closed.", false)
		if err := b.sender.Edit(ctx, m.Chat.ID, m.ID, "Flatten of "+bold(target)+" cancelled by "+bold(person(c.Sender()).Name)+"; nothing was closed.", nil); err != nil {
			b.log.WarnContext(ctx, "could not edit a cancelled flatten", "err", b.scrub(err.Error()))
		}
	case ActFlattenConfirm:
		b.flatten(ctx, c, target)
	}
}

// revoke removes a standing grant; the gate holds that tool again.
func (b *Bot) revoke(ctx context.Context, c tele.Context, key string) {
	desk, tool, ok := strings.Cut(key, "/")
	if !ok || !b.desks[desk] || tool == "" {
		b.answer(c, refusedData, true)
		return
	}
	err := b.deps.Gate.Revoke(ctx, desk, tool, person(c.Sender()))
	switch deskbot.ErrorCode(err) {
	case "":
		b.answer(c, "Revoked: "+desk+" asks again before "+tool+".", false)
	case deskbot.ENOTFOUND:
		b.answer(c, "There is no such grant (already revoked?).", false)
	default:
		b.answer(c, b.explain(ctx, "revoke failed", err), true)
		return
	}
	m := c.Callback().Message
	text, kb, err := b.grantsView(ctx)
	if err == nil {
		err = b.sender.Edit(ctx, m.Chat.ID, m.ID, text, kb)
	}
	if err != nil {
		b.log.WarnContext(ctx, "could not refresh the grants message", "err", b.scrub(err.Error()))
	}
}

// answer answers a tap. Telegram drops answers after a few seconds, and a
// failed answer changes nothing that was decided, so it is only logged.
func (b *Bot) answer(c tele.Context, text string, alert bool) {
	text = argtext.Clip(text, 200, "…")
	if err := b.out.Respond(c.Callback(), &tele.CallbackResponse{Text: text, ShowAlert: alert}); err != nil {
		b.log.Debug("could not answer a tap", "err", b.scrub(err.Error()))
	}
}

func senderID(c tele.Context) int64 {
	if c.Sender() == nil {
		return 0
	}
	return c.Sender().ID
}
