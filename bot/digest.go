package bot

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	tele "gopkg.in/telebot.v3"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/argtext"
)

// Digests keep a flood of held calls answerable within the group's budget
// of 20 sends a minute: when more calls wait than can be shown one by one,
// each desk's open calls are listed in one message (more pages when they do
// not fit one), edited in place as requests come and go. Each row decides
// exactly one request: Deny always; Allow only when the row shows the call
// whole (tool and every shown argument), since an approver must see the
// whole call before any button can run it. A row whose call is too long for
// one line offers Open instead, which sends the request's own message with
// the call whole and its usual buttons.

const (
	// digestRows bounds a page: two buttons a row keeps it well within
	// Telegram's 100 buttons.
	digestRows = 40
	// rowWhole is the longest call (tool and shown arguments, in UTF-16
	// units) a row shows whole and so may offer Allow for.
	rowWhole = 300
	// rowCut is how much of a longer call a row shows.
	rowCut = 80
	// digestMark is the request message note of a request shown in its
	// desk's digest.
	digestMark = "digest"
)

// approvals is the approvals worker's step: held calls first (one by one,
// or in digests when many wait, or when their desk has a digest up), then
// what closes requests. One worker does both, so a held call waits for the
// step in progress: a close gives way between its events (closeAll).
func (o *Outbox) approvals(ctx context.Context) (bool, error) {
	if reqs := o.q.heldCalls(); len(reqs) > 0 {
		if o.cfg.Open != nil {
			if len(reqs) > o.cfg.DigestAfter {
				return true, o.digestRequests(ctx, reqs)
			}
			if _, err := o.notes.Note(ctx, digestKey(reqs[0].Desk)); err == nil {
				return true, o.digestRequests(ctx, reqs[:1])
			} else if deskbot.ErrorCode(err) != deskbot.ENOTFOUND {
				return true, err
			}
		}
		return true, o.finish(ctx, reqs[0])
	}
	if closes := o.q.closing(); len(closes) > 0 {
		return true, o.closeAll(WithLane(ctx, LaneClose), closes)
	}
	return false, nil
}

// chatter is the chatter worker's step: the next desk in turn says what it
// has waiting (a run of its words merged into one message when they fit).
func (o *Outbox) chatter(ctx context.Context) (bool, error) {
	evs := o.q.nextDesk()
	if len(evs) == 0 {
		return false, nil
	}
	ctx = WithLane(ctx, LaneChatter)
	n, err := o.coalesce(ctx, evs)
	if err != nil {
		return true, err
	}
	for _, e := range evs[:n] {
		o.q.drop(e.ID)
	}
	if n > 0 {
		return true, nil
	}
	return true, o.finish(ctx, evs[0])
}

// closeAll handles what closes requests: an outcome of a request shown on
// its own edits that message; outcomes of digest rows refresh each desk's
// digest once; outcomes of requests never shown (closed while they waited)
// are folded into one notice. Warnings go out as they are.
//
// Each event handled on its own takes a slot of the chat (a second apart),
// so a held call that comes meanwhile is not left behind the rest: closeAll
// stops there, and what it has not handled stays in its lane for the next
// step, after the held call.
func (o *Outbox) closeAll(ctx context.Context, evs []deskbot.Event) error {
	var rows, folded []deskbot.Event
	desks := map[string]bool{}
	for _, ev := range evs {
		if held, _ := o.q.heldWaiting(); held {
			break
		}
		// An order event may name the request whose call placed the
		// order; it is still a message of its own, not that request's
		// outcome.
		if ev.Kind == deskbot.EventModelUnreachable || ev.Kind == deskbot.EventRequestApproved || ev.Kind == deskbot.EventRequestChanged || ev.Kind == deskbot.EventOrder || ev.Kind == deskbot.EventToolResult || ev.Request == nil {
			if err := o.finish(ctx, ev); err != nil {
				return err
			}
			continue
		}
		if done, err := o.sent(ctx, sentKey(ev.ID)); err != nil {
			return err
		} else if done {
			if err := o.finish(ctx, ev); err != nil { // acknowledges
				return err
			}
			continue
		}
		loc, err := o.notes.Note(ctx, requestMessageKey(ev.Request.ID))
		switch {
		case deskbot.ErrorCode(err) == deskbot.ENOTFOUND:
			folded = append(folded, ev)
		case err != nil:
			return err
		case loc == digestMark:
			rows = append(rows, ev)
			desks[ev.Request.Desk] = true
		default:
			if err := o.finish(ctx, ev); err != nil {
				return err
			}
		}
	}
	for _, d := range slices.Sorted(maps.Keys(desks)) {
		if err := o.renderDigest(ctx, d, false); err != nil {
			return err
		}
	}
	for _, ev := range rows {
		if err := o.closeOpened(ctx, ev.Request); err != nil {
			return err
		}
	}
	if len(folded) > 0 {
		text := foldNotice(folded)
		if err := o.once(ctx, folded[0].ID, 1, func() (*tele.Message, error) {
			return o.s.Send(ctx, o.cfg.ChatID, text, nil)
		}, noAfter); err != nil && TelegramCode(err) != 400 {
			return err
		}
	}
	bctx, cancel := bookkeeping(ctx)
	defer cancel()
	for _, ev := range append(rows, folded...) {
		if err := o.done(bctx, ev.ID); err != nil {
			return err
		}
		o.q.drop(ev.ID)
	}
	return nil
}

// closeOpened edits the message Open sent for a digest row, if any, to the
// request's outcome.
func (o *Outbox) closeOpened(ctx context.Context, r *deskbot.Request) error {
	loc, err := o.notes.Note(ctx, openMessageKey(r.ID))
	if deskbot.ErrorCode(err) == deskbot.ENOTFOUND {
		return nil
	} else if err != nil {
		return err
	}
	if chatID, msgID, ok := parseMessageRef(loc); ok {
		if err := o.s.Edit(ctx, chatID, msgID, RenderOutcome(r), nil); err != nil && TelegramCode(err) != 400 {
			return err
		}
	}
	return nil
}

// foldNotice is one short line for requests that closed before they could
// be shown: how many, per desk and outcome.
func foldNotice(evs []deskbot.Event) string {
	counts := map[string]map[string]int{}
	for _, ev := range evs {
		word := "lapsed"
		if ev.Kind == deskbot.EventRequestDecided {
			word = map[deskbot.Decision]string{deskbot.AllowOnce: "allowed", deskbot.AlwaysAllow: "allowed", deskbot.Deny: "denied"}[ev.Request.Decision]
			if word == "" {
				word = "decided"
			}
		}
		d := ev.Request.Desk
		if counts[d] == nil {
			counts[d] = map[string]int{}
		}
		counts[d][word]++
	}
	var parts []string
	for _, d := range slices.Sorted(maps.Keys(counts)) {
		var ws []string
		for _, w := range slices.Sorted(maps.Keys(counts[d])) {
			ws = append(ws, fmt.Sprintf("%d %s", counts[d][w], w))
		}
		parts = append(parts, "<b>"+esc(argtext.Show(d))+"</b>: "+strings.Join(ws, ", "))
	}
	n := len(evs)
	what := "requests"
	if n == 1 {
		what = "request"
	}
	return trimUnits(fmt.Sprintf("🕓 %d %s closed before they could be shown (%s). Nothing was offered for them.", n, what, strings.Join(parts, "; ")), MaxMessage)
}

// digestRequests shows held calls in their desks' digests: each still
// open is marked as a digest row, each desk's digest is brought up to
// date, and only then are the events acknowledged (a crash in between
// shows them again; the rows are what the store says is open).
func (o *Outbox) digestRequests(ctx context.Context, evs []deskbot.Event) error {
	ctx = WithLane(ctx, LaneRequest)
	desks := map[string]bool{}
	var shown []deskbot.Event
	for _, ev := range evs {
		if ev.Request == nil {
			if err := o.finish(ctx, ev); err != nil {
				return err
			}
			continue
		}
		r, err := o.current(ctx, ev)
		if err != nil {
			return err
		}
		if o.live(r) {
			if err := o.notes.PutNote(ctx, requestMessageKey(r.ID), digestMark, noteTTL); err != nil {
				return err
			}
			desks[r.Desk] = true
		}
		shown = append(shown, ev)
	}
	for _, d := range slices.Sorted(maps.Keys(desks)) {
		if err := o.renderDigest(ctx, d, true); err != nil {
			return err
		}
	}
	bctx, cancel := bookkeeping(ctx)
	defer cancel()
	for _, ev := range shown {
		if err := o.done(bctx, ev.ID); err != nil {
			return err
		}
		o.q.drop(ev.ID)
	}
	return nil
}

// renderDigest brings desk's digest up to date with what the store says is
// open: pages that exist are edited, missing ones sent, ones no longer
// needed edited to say so. With nothing left open the digest ends, and the
// next flood starts a new one at the bottom of the chat.
//
// A held call is never announced only by an edit of a message the chat has
// scrolled past (Telegram notifies nobody of an edit): when held calls
// join the digest (held) and its last page is not the newest message the
// bot has seen in the chat, the whole digest is sent anew at the bottom and
// its old pages are edited into a pointer to it, without buttons.
func (o *Outbox) renderDigest(ctx context.Context, desk string, held bool) error {
	all, err := o.cfg.Open(ctx)
	if err != nil {
		return err
	}
	var rows []*deskbot.Request
	for _, r := range all {
		if r.Desk != desk || !o.live(r) {
			continue
		}
		loc, err := o.notes.Note(ctx, requestMessageKey(r.ID))
		if err != nil && deskbot.ErrorCode(err) != deskbot.ENOTFOUND {
			return err
		}
		if loc == digestMark {
			rows = append(rows, r)
		}
	}
	slices.SortFunc(rows, func(a, b *deskbot.Request) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	pages := DigestPages(desk, rows)
	var refs []string
	if v, err := o.notes.Note(ctx, digestKey(desk)); err == nil && v != "" {
		refs = strings.Split(v, ",")
	} else if err != nil && deskbot.ErrorCode(err) != deskbot.ENOTFOUND {
		return err
	}
	save := func(refs []string) error {
		bctx, cancel := bookkeeping(ctx)
		defer cancel()
		if len(refs) == 0 {
			return o.notes.DeleteNote(bctx, digestKey(desk))
		}
		return o.notes.PutNote(bctx, digestKey(desk), strings.Join(refs, ","), noteTTL)
	}
	var moved []string
	if held && len(refs) > 0 {
		if chatID, msgID, ok := parseMessageRef(refs[len(refs)-1]); !ok || !o.s.AtBottom(chatID, msgID) {
			moved, refs = refs, nil
		}
	}
	for i, p := range pages {
		if i < len(refs) {
			if chatID, msgID, ok := parseMessageRef(refs[i]); ok {
				err := o.s.Edit(ctx, chatID, msgID, p.Text, p.Markup)
				if TelegramCode(err) != 400 {
					if err != nil {
						return err
					}
					continue
				}
			}
			refs = refs[:i] // not editable: this page and those after are sent anew
		}
		m, err := o.s.Send(ctx, o.cfg.ChatID, p.Text, htmlOpts(p.Markup))
		if err != nil {
			return err
		}
		refs = append(refs, messageRef(m.Chat.ID, m.ID))
		if err := save(refs); err != nil {
			return err
		}
	}
	for _, ref := range moved {
		if chatID, msgID, ok := parseMessageRef(ref); ok {
			text := "📋 <b>" + esc(argtext.Show(desk)) + "</b>: its held calls moved to a newer message below ⬇️"
			if err := o.s.Edit(ctx, chatID, msgID, text, nil); err != nil && TelegramCode(err) != 400 {
				return err
			}
		}
	}
	for _, ref := range refs[min(len(pages), len(refs)):] {
		if chatID, msgID, ok := parseMessageRef(ref); ok {
			text := "📋 <b>" + esc(argtext.Show(desk)) + "</b>: nothing more waiting on this page."
			if err := o.s.Edit(ctx, chatID, msgID, text, nil); err != nil && TelegramCode(err) != 400 {
				return err
			}
		}
	}
	return save(refs[:min(len(pages), len(refs))])
}

// DigestPage is one message of a desk's digest.
type DigestPage struct {
	Text   string
	Markup *tele.ReplyMarkup
}

// DigestPages renders a desk's open requests as digest pages: a numbered
// row each, at most digestRows a page and within Telegram's 4,096
// characters. A row shows the call whole and offers Allow and Deny when the
// whole call fits rowWhole; otherwise it shows the call's start, says it is
// cut, and offers Open and Deny.
func DigestPages(desk string, rows []*deskbot.Request) []DigestPage {
	if len(rows) == 0 {
		return nil
	}
	const foot = "\n\nAllow is offered only on calls shown whole here; Open shows a call whole with all its buttons."
	var pages []DigestPage
	var lines []string
	var kb [][]tele.InlineButton
	flush := func() {
		pages = append(pages, DigestPage{Text: strings.Join(lines, "\n"), Markup: &tele.ReplyMarkup{InlineKeyboard: kb}})
		lines, kb = nil, nil
	}
	size := 0
	for i, r := range rows {
		line, buttons := digestRow(i+1, r)
		if len(kb) > 0 && (len(kb) >= digestRows || size+plainLen(line)+1 > MaxMessage-300) {
			flush()
		}
		if len(kb) == 0 {
			size = 0
		}
		lines = append(lines, line)
		kb = append(kb, buttons)
		size += plainLen(line) + 1
	}
	flush()
	for i := range pages {
		head := fmt.Sprintf("📋 <b>%s</b>: %d held calls waiting", esc(argtext.Show(desk)), len(rows))
		if len(pages) > 1 {
			head += fmt.Sprintf(" (page %d of %d)", i+1, len(pages))
		}
		pages[i].Text = head + "\n\n" + pages[i].Text + foot
	}
	return pages
}

// digestRow renders request r as row n of a digest, with its buttons.
func digestRow(n int, r *deskbot.Request) (string, []tele.InlineButton) {
	r = asRuns(r) // the call that runs
	num := strconv.Itoa(n)
	tool := argtext.Show(r.Content.ToolName)
	args := argtext.Arguments(r.Content.Arguments)
	deny := tele.InlineButton{Unique: ActDeny, Data: r.ID, Text: "❌ Deny " + num}
	if rowShowsWhole(r) {
		line := fmt.Sprintf("<b>%s.</b> <b>%s</b> <code>%s</code>", num, esc(tool), esc(args))
		return line, []tele.InlineButton{{Unique: ActAllowOnce, Data: shownArg(r), Text: "✅ Allow " + num}, deny}
	}
	line := fmt.Sprintf("<b>%s.</b> <b>%s</b> <code>%s</code>… (cut; Open shows it whole)", num, esc(argtext.Clip(tool, 64, "…")), esc(argtext.Clip(args, rowCut, "…")))
	return line, []tele.InlineButton{{Unique: ActOpen, Data: r.ID, Text: "🔎 Open " + num}, deny}
}

// rowShowsWhole reports whether a digest row shows r's call whole, so the
// row may offer Allow and a tap on it may be taken. A flatten never does:
// what it would do is its plan, which only its own message shows (Open).
func rowShowsWhole(r *deskbot.Request) bool {
	r = asRuns(r)
	if r.Content.ToolName == deskbot.ToolFlattenDesk {
		return false
	}
	tool := argtext.Show(r.Content.ToolName)
	args := argtext.Arguments(r.Content.Arguments)
	return argtext.Length(tool)+argtext.Length(args) <= rowWhole && shownWhole(r)
}
