package bot

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	tele "gopkg.in/telebot.v3"

	"github.com/deskbot/deskbot"
)

func htmlOpts(kb *tele.ReplyMarkup) *tele.SendOptions {
	return &tele.SendOptions{ParseMode: tele.ModeHTML, ReplyMarkup: kb, DisableWebPagePreview: true}
}

// deskMessage sends a desk's words, split if long, with its picture when the
// picture is a file in the desk's own folder. Every message sent is noted
// as the desk's, so a reply to it reaches the desk.
func (o *Outbox) deskMessage(ctx context.Context, ev deskbot.Event) error {
	parts := RenderDeskMessages(ev.Desk, ev.Text)
	if ev.Picture != "" {
		path, ok := o.picture(ev.Desk, ev.Picture)
		if !ok {
			o.log.WarnContext(ctx, "outbox: picture outside the desk's folder; not sent", "desk", ev.Desk, "event", ev.ID)
			if last := parts[len(parts)-1] + "\n\n(A picture was left out: it is not in the desk's folder.)"; utf16Len(last) <= MaxMessage {
				parts[len(parts)-1] = last
			}
		} else {
			caption := "💬 <b>" + esc(ev.Desk) + "</b>"
			if one := RenderDeskMessage(ev.Desk, ev.Text); len(parts) == 1 && utf16Len(one) <= MaxCaption {
				caption, parts = one, nil
			}
			if err := o.once(ctx, ev.ID, 0, func() (*tele.Message, error) {
				return o.s.SendPhoto(ctx, o.cfg.ChatID, path, caption)
			}, o.noteDesk(ev.Desk)); err != nil {
				return err
			}
		}
	}
	for i, p := range parts {
		if err := o.once(ctx, ev.ID, i+1, func() (*tele.Message, error) {
			return o.s.Send(ctx, o.cfg.ChatID, p, nil)
		}, o.noteDesk(ev.Desk)); err != nil {
			return err
		}
	}
	return nil
}

// once runs send for part of event id unless it was done before, then runs
// after with the message and notes the part as done. Once Telegram has
// accepted a message its bookkeeping is written even if ctx ends meanwhile
// (a shutdown), or a restart would send it again.
func (o *Outbox) once(ctx context.Context, id string, part int, send func() (*tele.Message, error), after func(context.Context, *tele.Message) error) error {
	key := sentPartKey(id, part)
	if done, err := o.sent(ctx, key); err != nil || done {
		return err
	}
	m, err := send()
	if err != nil {
		return err
	}
	ctx, cancel := bookkeeping(ctx)
	defer cancel()
	if err := after(ctx, m); err != nil {
		return err
	}
	return o.notes.PutNote(ctx, key, "1", noteTTL)
}

// bookkeeping is the context for recording what Telegram already accepted:
// it outlives ctx's cancellation, briefly.
func bookkeeping(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
}

func noAfter(context.Context, *tele.Message) error { return nil }

func (o *Outbox) noteDesk(desk string) func(context.Context, *tele.Message) error {
	return func(ctx context.Context, m *tele.Message) error {
		return o.notes.PutNote(ctx, deskMessageKey(m.Chat.ID, m.ID), desk, noteTTL)
	}
}

// coalesce sends a run of two or more plain desk_message events of one desk
// at the head of evs as a single message, as many as fit in one, and
// acknowledges them. It returns how many it handled; 0 leaves the head to
// be delivered on its own.
func (o *Outbox) coalesce(ctx context.Context, evs []deskbot.Event) (int, error) {
	plain := func(e deskbot.Event) bool { return e.Kind == deskbot.EventDeskMessage && e.Picture == "" }
	if len(evs) < 2 || !plain(evs[0]) {
		return 0, nil
	}
	var texts []string
	for _, e := range evs {
		if !plain(e) || e.Desk != evs[0].Desk {
			break
		}
		// An event with anything sent already is finished on its own, so a
		// redelivery never repeats what went out.
		if done, err := o.anySent(ctx, e.ID); err != nil || done {
			if err != nil {
				return 0, err
			}
			break
		}
		if len(texts) > 0 && len(RenderDeskMessages(e.Desk, strings.Join(append(texts, e.Text), "\n\n"))) > 1 {
			break
		}
		texts = append(texts, e.Text)
	}
	n := len(texts)
	if n < 2 {
		return 0, nil
	}
	text := RenderDeskMessages(evs[0].Desk, strings.Join(texts, "\n\n"))[0]
	err := o.once(ctx, evs[0].ID, 1, func() (*tele.Message, error) {
		return o.s.Send(ctx, o.cfg.ChatID, text, nil)
	}, o.noteDesk(evs[0].Desk))
	if err != nil {
		return 0, err
	}
	bctx, cancel := bookkeeping(ctx)
	defer cancel()
	for _, e := range evs[:n] {
		if err := o.done(bctx, e.ID); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// anySent reports whether the event, or its first part, was sent already.
func (o *Outbox) anySent(ctx context.Context, id string) (bool, error) {
	if done, err := o.sent(ctx, sentKey(id)); err != nil || done {
		return done, err
	}
	return o.sent(ctx, sentPartKey(id, 1))
}

// picture resolves a desk's picture path, trusting it only if it is a
// regular file inside the desk's folder once symlinks are followed.
func (o *Outbox) picture(desk, p string) (string, bool) {
	root := o.cfg.PictureRoot(desk)
	if root == "" {
		return "", false
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(root, p)
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", false
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", false
	}
	rel, err := filepath.Rel(realRoot, real)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	fi, err := os.Stat(real)
	if err != nil || !fi.Mode().IsRegular() {
		return "", false
	}
	return real, true
}
