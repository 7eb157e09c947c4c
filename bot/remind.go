package bot

import (
	"context"
	"errors"
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
// A reminder goes in its own lane right after the held calls (LaneRemind):
// never behind chatter or anything else, but a held call nobody has seen
// yet goes first, so a burst of reminders cannot delay one. It is checked
// right before it goes out like a held call: a request decided or lapsed
// (or due to lapse) meanwhile gets none.

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

// remindDue sends the reminders due now, each once.
func (b *Bot) remindDue(ctx context.Context) error {
	rs, err := b.deps.Requests.OpenRequests(ctx)
	if err != nil {
		return err
	}
	for _, r := range rs {
		now := b.now()
		if !remindDue(r, now, b.cfg.Remind) {
			continue
		}
		pending := b.unanswered(r)
		if len(pending) == 0 {
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
		chatID, msgID, shown := parseMessageRef(loc)
		if !shown && loc != digestMark {
			continue
		}
		first, err := b.deps.Notes.PutNoteOnce(ctx, remindKey(r.ID), "1", noteTTL)
		if err != nil {
			return err
		}
		if !first {
			continue
		}
		text := RenderReminder(r, b.people(ctx, pending))
		opt := &tele.SendOptions{ParseMode: tele.ModeHTML, DisableWebPagePreview: true}
		if shown {
			// A deleted request message should not cost the reminder.
			opt.ReplyTo, opt.AllowWithoutReply = &tele.Message{ID: msgID}, true
		} else {
			chatID = b.cfg.ChatID // a digest row: the reminder names the request
		}
		_, err = b.sender.Send(b.remindCheck(WithLane(ctx, LaneRemind), r.ID), chatID, text, opt)
		switch {
		case err == nil:
			b.log.InfoContext(ctx, "reminded the approvers of a request", "desk", r.Desk, "request", r.ID, "approvers", len(pending))
		case errors.Is(err, errClosed):
		case ctx.Err() != nil:
			return ctx.Err()
		default:
			b.log.WarnContext(ctx, "reminders: a reminder was not sent", "request", r.ID, "err", b.scrub(err.Error()))
		}
	}
	return nil
}

// remindDue reports whether r's reminder is due at now: open, within
// remind of its expiry, and not yet past it (a lapsed request is never
// reminded of, even before the sweep lapsed it).
func remindDue(r *deskbot.Request, now time.Time, remind time.Duration) bool {
	return r.State == deskbot.StateOpen && !now.Before(r.ExpiresAt.Add(-remind)) && now.Before(r.ExpiresAt)
}

// remindCheck makes the Sender read the request again right before the
// reminder goes out: one no longer open, or due to lapse, gets none.
func (b *Bot) remindCheck(ctx context.Context, id string) context.Context {
	if b.deps.Gate == nil {
		return ctx
	}
	return withCheck(ctx, func(ctx context.Context) error {
		r, err := b.deps.Gate.Request(ctx, id)
		if deskbot.ErrorCode(err) == deskbot.ENOTFOUND {
			return errClosed
		} else if err != nil {
			return err
		}
		if r.State != deskbot.StateOpen || !b.now().Before(r.ExpiresAt) {
			return errClosed
		}
		return nil
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

// RenderReminder renders the reminder of r for people, each named by a
// text mention, which notifies them.
func RenderReminder(r *deskbot.Request, people []deskbot.Person) string {
	names := make([]string, len(people))
	for i, p := range people {
		names[i] = `<a href="tg://user?id=` + strconv.FormatInt(p.ID, 10) + `">` + esc(argtext.Clip(argtext.Show(p.Name), 32, "…")) + "</a>"
	}
	s := "⏰ " + strings.Join(names, ", ") + ": <b>" + esc(argtext.Show(r.Desk)) + "</b>'s call to <b>" +
		esc(argtext.Show(r.Content.ToolName)) + "</b> (request <code>" + esc(words.ShortID(r.ID)) + "</code>) lapses at " + ist(r.ExpiresAt) + " unless it is decided."
	if r.Needs() > 1 {
		s += " It needs " + words.More(r) + "."
	}
	return s
}
