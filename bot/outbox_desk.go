package bot

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	tele "gopkg.in/telebot.v3"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/argtext"
	"github.com/deskbot/deskbot/deskfs"
	"github.com/deskbot/deskbot/words"
)

func htmlOpts(kb *tele.ReplyMarkup) *tele.SendOptions {
	return &tele.SendOptions{ParseMode: tele.ModeHTML, ReplyMarkup: kb, DisableWebPagePreview: true}
}

// deskMessage sends a desk's words, split if long, with its picture when the
// picture is a regular file in the desk's own folder. Every message sent is
// noted as the desk's, so a reply to it reaches the desk.
func (o *Outbox) deskMessage(ctx context.Context, ev deskbot.Event) error {
	if ev.RequestID != "" {
		return o.whyAnswer(ctx, ev)
	}
	parts := RenderDeskMessages(ev.Desk, ev.Text)
	if ev.Picture != "" {
		if done, err := o.sent(ctx, ev.ID+":0"); err != nil {
			return err
		} else if !done {
			if err := o.deskPicture(ctx, ev, &parts); err != nil {
				return err
			}
		}
	}
	for i, p := range parts {
		if err := o.once(ctx, ev.ID, i+1, func() (*tele.Message, error) {
			return o.sendDesk(ctx, ev.Desk, p)
		}, o.noteDesk(ev.Desk)); err != nil {
			return err
		}
	}
	return nil
}

// deskPicture sends a desk's picture, with the desk's words as its caption
// when they fit one (parts is then emptied). A picture that may not be sent
// is left out with a note on the last part saying why.
func (o *Outbox) deskPicture(ctx context.Context, ev deskbot.Event, parts *[]string) error {
	f, size, why := o.picture(ev.Desk, ev.Picture)
	if f == nil {
		o.log.WarnContext(ctx, "outbox: a desk's picture was not sent", "desk", ev.Desk, "event", ev.ID, "why", why)
		p := *parts
		if last := p[len(p)-1] + "\n\n(A picture was left out: " + why + ".)"; argtext.Length(last) <= MaxMessage {
			p[len(p)-1] = last
		}
		return nil
	}
	defer f.Close()
	caption := "💬 <b>" + esc(ev.Desk) + "</b>"
	if one := RenderDeskMessage(ev.Desk, ev.Text); len(*parts) == 1 && argtext.Length(one) <= MaxCaption {
		caption, *parts = one, nil
	}
	return o.once(ctx, ev.ID, 0, func() (*tele.Message, error) {
		thread := o.thread(ctx, ev.Desk)
		m, err := o.s.SendPhotoIn(ctx, o.cfg.ChatID, thread, f, size, caption)
		if thread != 0 && threadGone(err) {
			o.topics.forget(ctx, ev.Desk, thread)
			return o.s.SendPhoto(ctx, o.cfg.ChatID, f, size, caption)
		}
		return m, err
	}, o.noteDesk(ev.Desk))
}

// thread is the forum topic desk's chatter goes to: its own with
// TELEGRAM_TOPICS on, else 0, the General topic (or a chat without topics).
func (o *Outbox) thread(ctx context.Context, desk string) int {
	if o.topics == nil {
		return 0
	}
	return o.topics.thread(ctx, desk)
}

// sendDesk sends a desk's words (HTML) to the desk's topic. telebot keeps
// no topic by itself, so the thread is named on every send. A topic a
// person deleted is forgotten and the words go to General; the desk's next
// words get a new topic.
func (o *Outbox) sendDesk(ctx context.Context, desk, text string) (*tele.Message, error) {
	thread := o.thread(ctx, desk)
	opt := &tele.SendOptions{ParseMode: tele.ModeHTML, DisableWebPagePreview: true, ThreadID: thread}
	m, err := o.s.Send(ctx, o.cfg.ChatID, text, opt)
	if thread != 0 && threadGone(err) {
		o.topics.forget(ctx, desk, thread)
		return o.s.Send(ctx, o.cfg.ChatID, text, nil)
	}
	return m, err
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

// mergeGap is how close together a desk's messages must be to be merged:
// each within this of the one before it, by the time the desk said it.
const mergeGap = 30 * time.Second

// coalesce sends a run of two or more plain desk_message events of one desk
// at the head of evs, each said within mergeGap of the one before, as a
// single message under one header, as many as fit in one, and acknowledges
// them. It returns how many it handled; 0 leaves the head to be delivered
// on its own.
//
// Exactly once across a restart: the merged message is the head's part 1,
// and as soon as Telegram accepts it every merged event is marked sent,
// before that part is; a redelivered event marked sent is acknowledged
// without a send. Only a crash between Telegram's answer and those notes
// can repeat a message, as for any event.
func (o *Outbox) coalesce(ctx context.Context, evs []deskbot.Event) (int, error) {
	plain := func(e deskbot.Event) bool { return e.Kind == deskbot.EventDeskMessage && e.Picture == "" }
	if len(evs) < 2 || !plain(evs[0]) {
		return 0, nil
	}
	var texts []string
	for i, e := range evs {
		if !plain(e) || e.Desk != evs[0].Desk || (i > 0 && e.Time.Sub(evs[i-1].Time) > mergeGap) {
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
	note := o.noteDesk(evs[0].Desk)
	err := o.once(ctx, evs[0].ID, 1, func() (*tele.Message, error) {
		return o.sendDesk(ctx, evs[0].Desk, text)
	}, func(ctx context.Context, m *tele.Message) error {
		if err := note(ctx, m); err != nil {
			return err
		}
		for _, e := range evs[:n] {
			if err := o.notes.PutNote(ctx, sentKey(e.ID), "1", noteTTL); err != nil {
				return err
			}
		}
		return nil
	})
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

// bookWait bounds how long a held broker call's message waits for what
// its trading words read besides the call (the desk's book, the last
// price, the margin): those words are a convenience, the call is the
// truth.
const bookWait = 2 * time.Second

// liveWords reads what r's trading words show besides the call (words.Live):
// the desk's product at once, and the book, the last price of an order at
// market and the margin an open order needs side by side, each left out
// when it is not configured, fails or has not answered within bookWait. A
// port that ignores its context cannot hold the message back: liveWords stops
// waiting at bookWait whatever is still running, and what comes later is
// dropped. books, when not nil, keeps the desks' books read (nil for one
// that could not be read) so that several requests of a desk read it
// once.
func (o *Outbox) liveWords(ctx context.Context, r *deskbot.Request, books map[string]*deskbot.Book) words.Live {
	l := words.Live{Product: o.product(r.Desk)}
	if !brokerCall(r) {
		return l
	}
	ctx, cancel := context.WithTimeout(ctx, bookWait)
	defer cancel()
	var (
		book   chan *deskbot.Book
		last   chan float64
		under  chan deskbot.Price
		margin chan *deskbot.OrderMargin
		orders chan []deskbot.PlacedOrder
	)
	if words.NeedsOrders(r) && o.cfg.Orders != nil {
		orders = make(chan []deskbot.PlacedOrder, 1)
		go func() {
			os, err := o.cfg.Orders(ctx, r.Desk)
			if err != nil {
				os = nil
			} else if os == nil {
				os = []deskbot.PlacedOrder{} // read: the desk has none
			}
			orders <- os
		}()
	}
	if b, ok := books[r.Desk]; ok && words.NeedsBook(r) {
		l.Book = b
	} else if o.cfg.Book != nil && words.NeedsBook(r) {
		book = make(chan *deskbot.Book, 1)
		go func() {
			b, err := o.cfg.Book(ctx, r.Desk)
			if err != nil {
				o.log.WarnContext(ctx, "outbox: a request is shown without the desk's book", "request", r.ID, "desk", r.Desk, "err", err)
				book <- nil
				return
			}
			book <- &b
		}()
	}
	if g, ok := words.GTTOf(asRuns(r).Content.Arguments); ok && r.Content.ToolName == deskbot.ToolPlaceGTT && o.cfg.LastPrice != nil {
		// A GTT's triggers are shown with their distance from the last
		// price.
		last = make(chan float64, 1)
		go func() {
			p, ok, err := o.cfg.LastPrice(ctx, g.Symbol)
			if err != nil || !ok {
				p = 0
			}
			last <- p
		}()
	}
	if order, ok := words.OrderOf(asRuns(r).Content.Arguments); ok && r.Content.ToolName == deskbot.ToolPlaceOrder {
		order = order.ForDesk(l.Product)
		// The last price read when the order was sized, aged as the
		// message is drawn.
		l.Now, l.MaxAge = o.cfg.Now(), o.cfg.PriceMaxAge
		if s := r.Call().Order; s != nil && s.Instrument.Option() && s.Instrument.Underlying != "" && o.cfg.Price != nil {
			under = make(chan deskbot.Price, 1)
			go func() {
				p, ok, err := o.cfg.Price(ctx, s.Instrument.Underlying)
				if err != nil || !ok {
					p = deskbot.Price{}
				}
				under <- p
			}()
		}
		if words.NeedsLastPrice(order) && o.cfg.LastPrice != nil {
			last = make(chan float64, 1)
			go func() {
				p, ok, err := o.cfg.LastPrice(ctx, order.Symbol)
				if err != nil || !ok {
					p = 0
				}
				last <- p
			}()
		}
		if r.State == deskbot.StateOpen && o.cfg.Margin != nil {
			// Only while it waits for a decision: the margin is for the
			// approver, and a decided order's margin says nothing.
			margin = make(chan *deskbot.OrderMargin, 1)
			go func() {
				m, ok, err := o.cfg.Margin(ctx, order)
				if err != nil || !ok {
					margin <- nil
					return
				}
				margin <- &m
			}()
		}
	}
	// A nil channel is never ready: what was not asked for is not waited
	// for.
	for book != nil || last != nil || under != nil || margin != nil || orders != nil {
		select {
		case p := <-under:
			l.Underlying, under = p, nil
		case os := <-orders:
			l.Orders, orders = os, nil
		case b := <-book:
			l.Book, book = b, nil
			if books != nil {
				books[r.Desk] = b
			}
		case p := <-last:
			l.LastPrice, last = p, nil
		case m := <-margin:
			l.Margin, margin = m, nil
		case <-ctx.Done():
			if book != nil && books != nil {
				books[r.Desk] = nil
			}
			return l
		}
	}
	return l
}

// product is the product desk's orders take when they name none.
func (o *Outbox) product(desk string) string {
	if o.cfg.Product == nil {
		return ""
	}
	return o.cfg.Product(desk)
}

// shownLive is liveWords, for the request's own message: what that message
// will show of the desk's book (deskbot.ShownState) is recorded with the
// gate first, so an allow runs the call only while the book still gives
// the same. A copy shown elsewhere (/requests) notes nothing: an
// allow from it is checked against the request's own message.
func (o *Outbox) shownLive(ctx context.Context, r *deskbot.Request) (words.Live, error) {
	l := o.liveWords(ctx, r, nil)
	if l.Book == nil {
		return l, nil
	}
	if st := deskbot.ShownState(r.Content.Call(), *l.Book); st != "" && o.cfg.Shown != nil {
		if err := o.cfg.Shown(ctx, r.ID, st); err != nil {
			return l, err
		}
	}
	return l, nil
}

// maxPicture is the largest photo Telegram takes.
const maxPicture = 10 << 20

// picture opens a desk's picture for upload, or says why it may not be
// sent. The path names a file in the desk's own folder: relative to it, or
// absolute (the message tool resolves it) under the folder as configured or
// as its symlinks resolve. The file is opened by deskfs.Open, so a
// symlink out of the folder, a FIFO or a device is refused without
// blocking, and the upload reads from this handle, never from the name.
func (o *Outbox) picture(desk, p string) (f *os.File, size int64, why string) {
	const outside = "it is not a file in the desk's folder"
	root := o.cfg.PictureRoot(desk)
	if root == "" {
		return nil, 0, outside
	}
	rel, ok := inside(root, p)
	if !ok {
		return nil, 0, outside
	}
	f, fi, err := deskfs.Open(root, rel)
	switch {
	case deskbot.ErrorCode(err) == deskbot.ENOTFOUND:
		return nil, 0, "there is no such file in the desk's folder"
	case err != nil:
		return nil, 0, outside
	case fi.Size() > maxPicture:
		f.Close()
		return nil, 0, fmt.Sprintf("it is larger than %d MB", maxPicture>>20)
	case fi.Size() == 0:
		f.Close()
		return nil, 0, "it is empty"
	}
	return f, fi.Size(), ""
}

// inside returns p as a path relative to root, if it names something under
// root; a relative p is taken as relative to root already.
func inside(root, p string) (string, bool) {
	if !filepath.IsAbs(p) {
		return p, filepath.IsLocal(p)
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", false
	}
	roots := []string{abs}
	if real, err := filepath.EvalSymlinks(abs); err == nil && real != abs {
		roots = append(roots, real)
	}
	for _, r := range roots {
		if rel, err := filepath.Rel(r, p); err == nil && filepath.IsLocal(rel) {
			return rel, true
		}
	}
	return "", false
}

// whyAnswer posts a desk's answer to Why? as a reply to its request's
// message (where the request is shown; in General otherwise), clipped to
// one message, and ends the question so another may be asked.
func (o *Outbox) whyAnswer(ctx context.Context, ev deskbot.Event) error {
	text := "💬 <b>" + esc(ev.Desk) + "</b> answers why (request " + esc(words.ShortID(ev.RequestID)) + "):\n" + esc(argtext.Clip(showProse(ev.Text), MaxMessage-200, "…"))
	// Sent even if the request's message is gone: the answer still matters.
	opt := &tele.SendOptions{ParseMode: tele.ModeHTML, DisableWebPagePreview: true, AllowWithoutReply: true}
	loc, err := o.notes.Note(ctx, requestMessageKey(ev.RequestID))
	if deskbot.ErrorCode(err) != deskbot.ENOTFOUND && err != nil {
		return err
	}
	chatID := o.cfg.ChatID
	if c, msgID, ok := parseMessageRef(loc); ok {
		chatID, opt.ReplyTo = c, &tele.Message{ID: msgID, Chat: &tele.Chat{ID: c}}
	}
	if err := o.once(ctx, ev.ID, 1, func() (*tele.Message, error) {
		return o.s.Send(WithLane(ctx, LaneClose), chatID, text, opt)
	}, noAfter); err != nil {
		return err
	}
	if err := o.notes.DeleteNote(ctx, whyKey(ev.RequestID)); err != nil && deskbot.ErrorCode(err) != deskbot.ENOTFOUND {
		o.log.WarnContext(ctx, "outbox: could not end a question to a desk", "request", ev.RequestID, "err", err)
	}
	return nil
}
