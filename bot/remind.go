package bot

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	tele "gopkg.in/telebot.v3"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/argtext"
	"github.com/deskbot/deskbot/words"
)

// Reminders (APPROVAL_REMIND): when Config.Remind is left before an
// unanswered request lapses, the bot replies to the request's message
// naming, with mentions that notify them, the approvers who have neither
// approved nor denied it. Under four eyes an approver who already approved
// is not reminded.
//
// Once: a note per request, written first-caller-wins before the reminder
// is sent, so a rescan, a restart or a new leader never reminds again (a
// crash between the note and the send loses that reminder rather than
// repeat it). The scan runs only where the bot runs, on the leader.
//
// Digest rows: the calls shown in a desk's digest are reminded of
// together, in one reply to the digest naming each call that lapses soon
// (within half as long again as Config.Remind), once any of them is due.
// A flood is one reminder per digest, not a message per call.
//
// Approvals first: a reminder waits until the outbox holds no held call
// still to be shown, then goes in its own lane (LaneRemind), after held
// calls and what closes requests, before replies and chatter, and with
// chatter's share of the group's minute: it never takes a send a held call
// nobody has seen could use. It is checked right before it goes out like a
// held call: a request decided or lapsed (or due to lapse) meanwhile is
// left out of it, and with none left it is not sent.

// minRemindEvery bounds how often the scan runs however short Remind is:
// each scan reads every open request.
const minRemindEvery = 250 * time.Millisecond

// reminders scans the open requests every RemindEvery until ctx ends. A
// failed scan is logged and the next one tries again.
func (b *Bot) reminders(ctx context.Context) {
	if b.cfg.Remind <= 0 || b.deps.Requests == nil {
		return
	}
	t := time.NewTicker(b.cfg.RemindEvery)
	defer t.Stop()
	for {
		if err := b.remindDue(ctx); err != nil && ctx.Err() == nil {
			b.log.WarnContext(ctx, "reminders: scan failed, will try again", "err", b.scrub(err.Error()))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// remindDue sends the reminders due now, each once: a request shown in its
// own message gets a reply of its own; the rows of a desk's digest are
// reminded of together, in one reply to the digest, once any of them is
// due.
func (b *Bot) remindDue(ctx context.Context) error {
	rs, err := b.deps.Requests.OpenRequests(ctx)
	if err != nil {
		return err
	}
	now := b.now()
	rows := map[string][]*deskbot.Request{} // a desk's digest rows that lapse soon
	due := map[string]bool{}                // a desk's digest has a row due now
	for _, r := range rs {
		if !remindDue(r, now, b.cfg.Remind+b.cfg.Remind/2) {
			continue
		}
		if len(b.unanswered(r)) == 0 {
			continue
		}
		// A halted desk's calls cannot be allowed: a reminder would ask
		// for a tap that runs nothing. Left unmarked, it is sent if the
		// desk is resumed in time.
		if st, err := b.deps.Desks.DeskStatus(ctx, r.Desk); err != nil {
			return err
		} else if st.Halt != nil {
			continue
		}
		loc, err := b.deps.Notes.Note(ctx, requestMessageKey(r.ID))
		if deskbot.ErrorCode(err) == deskbot.ENOTFOUND {
			continue // not shown yet: the next scan looks again
		} else if err != nil {
			return err
		}
		if loc == digestMark {
			rows[r.Desk] = append(rows[r.Desk], r)
			due[r.Desk] = due[r.Desk] || remindDue(r, now, b.cfg.Remind)
			continue
		}
		chatID, msgID, shown := parseMessageRef(loc)
		if !shown || !remindDue(r, now, b.cfg.Remind) {
			continue
		}
		if first, err := b.deps.Notes.PutNoteOnce(ctx, remindKey(r.ID), "1", noteTTL); err != nil {
			return err
		} else if !first {
			continue
		}
		// A deleted request message should not cost the reminder.
		opt := &tele.SendOptions{ParseMode: tele.ModeHTML, DisableWebPagePreview: true, ReplyTo: &tele.Message{ID: msgID}, AllowWithoutReply: true}
		if err := b.remind(ctx, []*deskbot.Request{r}, func() (int64, *tele.SendOptions, error) { return chatID, opt, nil }); err != nil {
			return err
		}
	}
	for _, desk := range slices.Sorted(maps.Keys(rows)) {
		if !due[desk] {
			continue
		}
		// Every row that lapses soon goes in the one reminder: rows held
		// a few seconds apart (a flood is) would otherwise each fall due
		// in another scan and get a reply of their own.
		var named []*deskbot.Request
		for _, r := range rows[desk] {
			first, err := b.deps.Notes.PutNoteOnce(ctx, remindKey(r.ID), "1", noteTTL)
			if err != nil {
				return err
			}
			if first {
				named = append(named, r)
			}
		}
		if len(named) == 0 {
			continue
		}
		if err := b.remind(ctx, named, func() (int64, *tele.SendOptions, error) { return b.digestReply(ctx, desk) }); err != nil {
			return err
		}
	}
	return nil
}

// digestReply is where a reminder of desk's digest rows goes: a reply to
// the digest's newest page, or the group when the digest is not known.
func (b *Bot) digestReply(ctx context.Context, desk string) (int64, *tele.SendOptions, error) {
	opt := &tele.SendOptions{ParseMode: tele.ModeHTML, DisableWebPagePreview: true, AllowWithoutReply: true}
	v, err := b.deps.Notes.Note(ctx, digestKey(desk))
	if err != nil && deskbot.ErrorCode(err) != deskbot.ENOTFOUND {
		return 0, nil, err
	}
	refs := strings.Split(v, ",")
	if chatID, msgID, ok := parseMessageRef(refs[len(refs)-1]); ok {
		opt.ReplyTo = &tele.Message{ID: msgID}
		return chatID, opt, nil
	}
	return b.cfg.ChatID, opt, nil
}

// remind sends one reminder of rs (one request, or a digest's rows) once
// no held call waits to be shown, to where at says. Requests decided or
// lapsed (or due to lapse) by the time it goes are left out of it, the
// reminder written again for the rest; with none left it is not sent.
func (b *Bot) remind(ctx context.Context, rs []*deskbot.Request, at func() (int64, *tele.SendOptions, error)) error {
	for len(rs) > 0 {
		if err := b.heldCallsFirst(ctx); err != nil {
			return err
		}
		chatID, opt, err := at()
		if err != nil {
			return err
		}
		var text string
		if len(rs) == 1 {
			text = RenderReminder(rs[0], b.people(ctx, b.unanswered(rs[0])))
		} else {
			text = RenderDigestReminder(rs, b.people(ctx, b.unansweredAny(rs)))
		}
		_, err = b.sender.Send(b.remindCheck(WithLane(ctx, LaneRemind), rs), chatID, text, opt)
		var fewer *remindFewer
		switch {
		case err == nil:
			for _, r := range rs {
				b.log.InfoContext(ctx, "reminded the approvers of a request", "desk", r.Desk, "request", r.ID, "approvers", len(b.unanswered(r)), "with", len(rs))
			}
			return nil
		case errors.As(err, &fewer):
			rs = fewer.open
		case errors.Is(err, errClosed):
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		default:
			b.log.WarnContext(ctx, "reminders: a reminder was not sent", "request", rs[0].ID, "with", len(rs), "err", b.scrub(err.Error()))
			return nil
		}
	}
	return nil
}

// heldCallsFirst waits until the outbox holds no held call still to be
// shown: a reminder never takes a slot of the chat such a call could use.
// (One that comes while a reminder waits in the Sender goes first there,
// by its lane.)
func (b *Bot) heldCallsFirst(ctx context.Context) error {
	for {
		waiting, shown := b.outbox.q.heldWaiting()
		if !waiting {
			return nil
		}
		select {
		case <-shown:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// remindDue reports whether r's reminder is due at now: open, within
// remind of its expiry, and not yet past it (a lapsed request is never
// reminded of, even before the sweep lapsed it).
func remindDue(r *deskbot.Request, now time.Time, remind time.Duration) bool {
	return r.State == deskbot.StateOpen && !now.Before(r.ExpiresAt.Add(-remind)) && now.Before(r.ExpiresAt)
}

// remindFewer stops a reminder some of whose requests closed while it
// waited: it is written again for those still open.
type remindFewer struct{ open []*deskbot.Request }

func (e *remindFewer) Error() string {
	return strconv.Itoa(len(e.open)) + " of the reminder's requests still open"
}

// remindCheck makes the Sender read the requests again right before the
// reminder goes out: with none still open (or all due to lapse) it is not
// sent (errClosed); with some, it is written again for them (remindFewer).
func (b *Bot) remindCheck(ctx context.Context, rs []*deskbot.Request) context.Context {
	if b.deps.Gate == nil {
		return ctx
	}
	return withCheck(ctx, func(ctx context.Context) error {
		var open []*deskbot.Request
		for _, x := range rs {
			r, err := b.deps.Gate.Request(ctx, x.ID)
			if deskbot.ErrorCode(err) == deskbot.ENOTFOUND {
				continue
			} else if err != nil {
				return err
			}
			if r.State == deskbot.StateOpen && b.now().Before(r.ExpiresAt) {
				open = append(open, r)
			}
		}
		switch len(open) {
		case 0:
			return errClosed
		case len(rs):
			return nil
		}
		return &remindFewer{open: open}
	})
}

// unanswered are the approvers (TELEGRAM_APPROVERS, in their order) who
// have neither approved r nor decided it.
func (b *Bot) unanswered(r *deskbot.Request) []int64 {
	var out []int64
	for _, id := range b.cfg.Approvers {
		if id == r.DecidedByID || slices.ContainsFunc(r.Approvals, func(a deskbot.Approval) bool { return a.ByID == id }) {
			continue
		}
		out = append(out, id)
	}
	return out
}

// unansweredAny are the approvers (in their order) who have not answered
// at least one of rs.
func (b *Bot) unansweredAny(rs []*deskbot.Request) []int64 {
	var out []int64
	for _, r := range rs {
		for _, id := range b.unanswered(r) {
			if !slices.Contains(out, id) {
				out = append(out, id)
			}
		}
	}
	slices.SortStableFunc(out, func(a, c int64) int {
		return slices.Index(b.cfg.Approvers, a) - slices.Index(b.cfg.Approvers, c)
	})
	return out
}

// people names approvers as the group knows them (getChatMember, asked
// within a few seconds); one Telegram does not name is shown by id. The
// mention notifies them either way.
func (b *Bot) people(ctx context.Context, ids []int64) []deskbot.Person {
	out := make([]deskbot.Person, 0, len(ids))
	for _, id := range ids {
		p := deskbot.Person{ID: id, Name: strconv.FormatInt(id, 10)}
		done := make(chan *tele.ChatMember, 1)
		go func() { // telebot takes no context
			m, err := b.out.ChatMemberOf(&tele.Chat{ID: b.cfg.ChatID}, &tele.User{ID: id})
			if err != nil {
				m = nil
			}
			done <- m
		}()
		select {
		case m := <-done:
			if m != nil && m.User != nil {
				p = deskbot.PersonOf(id, m.User.FirstName, m.User.Username)
			}
		case <-time.After(5 * time.Second):
		case <-ctx.Done():
		}
		out = append(out, p)
	}
	return out
}

// mentions names people each by a text mention, which notifies them.
func mentions(people []deskbot.Person) string {
	names := make([]string, len(people))
	for i, p := range people {
		names[i] = `<a href="tg://user?id=` + strconv.FormatInt(p.ID, 10) + `">` + esc(argtext.Clip(argtext.Show(p.Name), 32, "…")) + "</a>"
	}
	return strings.Join(names, ", ")
}

// RenderReminder renders the reminder of r for people, each named by a
// text mention, which notifies them.
func RenderReminder(r *deskbot.Request, people []deskbot.Person) string {
	s := "⏰ " + mentions(people) + ": <b>" + esc(argtext.Show(r.Desk)) + "</b>'s call to <b>" +
		esc(argtext.Show(r.Content.ToolName)) + "</b> (request <code>" + esc(words.ShortID(r.ID)) + "</code>) lapses at " + ist(r.ExpiresAt) + " unless it is decided."
	if r.Needs() > 1 {
		s += " It needs " + words.More(r) + "."
	}
	return s
}

// digestReminderRows bounds the calls a digest's reminder lists; the rest
// are counted.
const digestReminderRows = 30

// RenderDigestReminder renders one reminder of several rows of a desk's
// digest (rs, of one desk) for people, each named by a text mention: the
// calls that lapse soon, soonest first, each with its request and when it
// lapses. It is sent as a reply to the digest, whose rows decide them.
func RenderDigestReminder(rs []*deskbot.Request, people []deskbot.Person) string {
	rs = slices.Clone(rs)
	slices.SortStableFunc(rs, func(a, b *deskbot.Request) int { return a.ExpiresAt.Compare(b.ExpiresAt) })
	var b strings.Builder
	b.WriteString("⏰ " + mentions(people) + ": " + strconv.Itoa(len(rs)) + " of <b>" + esc(argtext.Show(rs[0].Desk)) +
		"</b>'s held calls in its digest lapse soon unless they are decided:")
	for i, r := range rs {
		if i == digestReminderRows {
			b.WriteString("\n… and " + strconv.Itoa(len(rs)-i) + " more.")
			break
		}
		b.WriteString("\n• <b>" + esc(argtext.Clip(argtext.Show(r.Content.ToolName), 64, "…")) + "</b> (request <code>" +
			esc(words.ShortID(r.ID)) + "</code>) lapses at " + ist(r.ExpiresAt))
		if r.Needs() > 1 {
			b.WriteString("; it needs " + words.More(r))
		}
	}
	return trimUnits(b.String(), MaxMessage)
}
