package bot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	tele "gopkg.in/telebot.v3"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/argtext"
	"github.com/deskbot/deskbot/retry"
	"github.com/deskbot/deskbot/words"
)

// OutboxEvents is the event stream as the outbox reads it: paging through
// what it holds unacknowledged after a restart, then new events past the
// many it may hold in its lanes.
type OutboxEvents interface {
	ReadEventsAfter(ctx context.Context, group, consumer, after string, count int, block time.Duration) ([]deskbot.Event, error)
	AckEvent(ctx context.Context, group, id string) error
	// AckEvents acknowledges several in one round trip.
	AckEvents(ctx context.Context, group string, ids ...string) error
}

// Events is the event stream as the bot reads it: the outbox's reads, and
// how far the outbox is behind, which the last flush at a stop waits on
// (Bot.Flush).
type Events interface {
	OutboxEvents
	// EventBacklog reports how far group is behind: events handed out
	// and not acknowledged, and events not read yet.
	EventBacklog(ctx context.Context, group string) (pending, undelivered int64, err error)
}

// OutboxConfig configures an Outbox.
type OutboxConfig struct {
	ChatID   int64  // the team's group
	Group    string // consumer group on the event stream; default OutboxGroup
	Consumer string // this process's name in the group; default "bot"
	Now      deskbot.Now
	// PictureRoot returns the folder a desk's pictures must be in
	// (DataDir/desks/<desk>); "" refuses every picture of the desk.
	PictureRoot func(desk string) string
	// Request reads a request as it stands now, checked right before its
	// message goes out; nil trusts the state the event was read with.
	Request func(ctx context.Context, id string) (*deskbot.Request, error)
	// Open lists the open requests, for the digests; nil turns digests off.
	Open func(ctx context.Context) ([]*deskbot.Request, error)
	// DigestAfter is how many held calls may wait to be shown one by one;
	// more than that are shown as one digest message per desk (default 3).
	DigestAfter int
	Batch       int // events read at once; default 100
	// Block is how long a read waits for new events; default 1s. A read in
	// progress is not interrupted when ctx ends, so this bounds how long
	// Run takes to return.
	Block time.Duration
	// Sleep waits between attempts after a failure; tests inject one.
	Sleep func(ctx context.Context, d time.Duration) error
	// Book reads a desk's book, so a held broker call is shown in trading
	// words (the position it leaves, the desk's P&L); nil renders without.
	Book func(ctx context.Context, desk string) (deskbot.Book, error)
	// Product is the product a desk's orders take when they name none
	// (deskbot.Policies.Product), which a held order's words name; nil
	// names none.
	Product func(desk string) string
	// PriceMaxAge is PRICE_MAX_AGE: a held order's last price older than
	// it is shown as stale (words.LastPriceLine).
	PriceMaxAge time.Duration
	// Price is the market's last price of a symbol with its time
	// (deskbot.Market), read for a held option's underlying; nil: the
	// underlying's price read when the order was sized, if any.
	Price func(ctx context.Context, symbol string) (deskbot.Price, bool, error)
	// LastPrice is the market's last price of a symbol (deskbot.Market),
	// at which a held order at market is valued; nil values it at none.
	LastPrice func(ctx context.Context, symbol string) (float64, bool, error)
	// Margin is what a held order needs of the account's margin and what
	// is available (deskbot.Broker's Margin); nil shows no margin.
	Margin func(ctx context.Context, o deskbot.Order) (deskbot.OrderMargin, bool, error)
	// Orders reads a desk's orders of the day (deskbot.Broker's Orders),
	// so a held cancel_order names the order it cancels; nil names none.
	Orders func(ctx context.Context, desk string) ([]deskbot.PlacedOrder, error)
	// Shown records what a request's message shows of the desk's book
	// (deskbot.Gate's Shown) before it goes out; nil records nothing.
	Shown func(ctx context.Context, id, state string) error
	// Quiet is what goes out without a notification sound (TELEGRAM_QUIET).
	Quiet Quiet
	// Pin pins a held call's message while the request is open
	// (TELEGRAM_PIN; pin.go).
	Pin bool
}

// Outbox delivers events to the group durably: it reads the event stream as
// a consumer group into lanes (lanes.go) and acknowledges an event only
// once Telegram accepted what it produced. After a crash the
// unacknowledged events come back, and the lanes are rebuilt from them; a
// note per event (and per part of a long message) records what was already
// accepted, so nothing is sent twice unless the crash fell between
// Telegram's answer and the note.
//
// Two workers drain the lanes side by side, each sending through the
// Sender in its own lane: approvals (held calls first, then what closes
// them) and chatter (desks in turn, each desk's words in order). The Sender
// decides who goes first, so a held call overtakes chatter already waiting.
//
// One Outbox runs per process; Run is not safe to call twice at once.
type Outbox struct {
	cfg    OutboxConfig
	events OutboxEvents
	notes  deskbot.Notes
	s      *Sender
	log    *slog.Logger
	topics *topics // desks' forum topics; nil: everything in General
	q      *lanes
}

// NewOutbox builds an Outbox; Run starts it. A nil log logs nothing.
func NewOutbox(cfg OutboxConfig, events OutboxEvents, notes deskbot.Notes, s *Sender, log *slog.Logger) *Outbox {
	if cfg.Group == "" {
		cfg.Group = OutboxGroup
	}
	if cfg.Consumer == "" {
		cfg.Consumer = "bot"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.PictureRoot == nil {
		cfg.PictureRoot = func(string) string { return "" }
	}
	if cfg.DigestAfter <= 0 {
		cfg.DigestAfter = 3
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 100
	}
	if cfg.Block <= 0 {
		cfg.Block = time.Second
	}
	if cfg.Sleep == nil {
		cfg.Sleep = retry.Sleep
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Outbox{cfg: cfg, events: events, notes: notes, s: s, log: log, q: newLanes()}
}

// Run delivers events until ctx ends, and returns ctx's error. Failures
// (Redis down, Telegram refusing the bot) are logged and retried with
// backoff up to a minute; the events wait in the stream meanwhile.
func (o *Outbox) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() { o.work(ctx, "approvals", o.approvals) })
	wg.Go(func() { o.work(ctx, "chatter", o.chatter) })
	o.read(ctx)
	wg.Wait()
	return ctx.Err()
}

// read fills the lanes: first every event this consumer holds
// unacknowledged (a restart), page by page, then new ones.
func (o *Outbox) read(ctx context.Context) {
	backoff := retry.Backoff{Min: time.Second, Max: time.Minute}
	after := "0"
	for ctx.Err() == nil {
		block := o.cfg.Block
		if after != ">" {
			block = 0
		}
		evs, err := o.events.ReadEventsAfter(ctx, o.cfg.Group, o.cfg.Consumer, after, o.cfg.Batch, block)
		if err == nil {
			err = o.enqueue(ctx, evs)
		}
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			wait := backoff.Next()
			o.log.WarnContext(ctx, "outbox: cannot read the event stream, will retry", "err", err, "wait", wait)
			if o.cfg.Sleep(ctx, wait) != nil {
				return
			}
			continue
		}
		backoff.Reset()
		switch {
		case after == ">":
		case len(evs) == 0:
			after = ">"
		default:
			after = evs[len(evs)-1].ID
		}
	}
}

// enqueue puts each event in its lane; what is not for the chat (or was
// trimmed from the stream) is acknowledged at once, the batch's in one
// round trip (a burst of held calls brings two such events per call).
func (o *Outbox) enqueue(ctx context.Context, evs []deskbot.Event) error {
	var chat []deskbot.Event
	var other []string
	for _, ev := range evs {
		switch ev.Kind {
		case deskbot.EventUserRequest, deskbot.EventRequestDecided, deskbot.EventRequestLapsed,
			deskbot.EventRequestApproved, deskbot.EventRequestChanged, deskbot.EventDeskMessage, deskbot.EventModelUnreachable,
			deskbot.EventRisk, deskbot.EventBroker, deskbot.EventBrokerLogin, deskbot.EventOrder:
			chat = append(chat, ev)
		case deskbot.EventToolResult:
			if ev.Grant == nil || ev.Call == nil {
				other = append(other, ev.ID) // held or unguarded: its request, if any, speaks
				break
			}
			chat = append(chat, ev) // ran under a grant: the team is told whose
		default:
			other = append(other, ev.ID)
		}
	}
	o.q.add(chat...)
	return o.events.AckEvents(ctx, o.cfg.Group, other...)
}

// work runs one lane's worker until ctx ends: step handles what the lanes
// hold (false: nothing to do, wait for more); a failure is retried with
// backoff, the event staying at the head of its lane.
func (o *Outbox) work(ctx context.Context, name string, step func(context.Context) (bool, error)) {
	backoff := retry.Backoff{Min: time.Second, Max: time.Minute}
	for ctx.Err() == nil {
		wake := o.q.waiter()
		did, err := step(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			wait := backoff.Next()
			o.log.WarnContext(ctx, "outbox: delivery stalled, will retry", "lane", name, "err", err, "wait", wait)
			if o.cfg.Sleep(ctx, wait) != nil {
				return
			}
			continue
		}
		backoff.Reset()
		if !did {
			select {
			case <-wake:
			case <-ctx.Done():
			}
		}
	}
}

// finish delivers ev, acknowledges it and takes it off its lane. A message
// Telegram refuses for good (our rendering, a vanished message) would block
// every later event if retried, so it is logged and passed over.
func (o *Outbox) finish(ctx context.Context, ev deskbot.Event) error {
	if err := o.one(ctx, ev); err != nil {
		return fmt.Errorf("event %s (%s): %w", ev.ID, ev.Kind, err)
	}
	o.q.drop(ev.ID)
	return nil
}

// one delivers one event and acknowledges it.
func (o *Outbox) one(ctx context.Context, ev deskbot.Event) error {
	if sent, err := o.sent(ctx, sentKey(ev.ID)); err != nil || sent {
		if err != nil {
			return err
		}
		return o.events.AckEvent(ctx, o.cfg.Group, ev.ID)
	}
	var err error
	switch ev.Kind {
	case deskbot.EventUserRequest:
		err = o.request(ctx, ev)
	case deskbot.EventRequestDecided, deskbot.EventRequestLapsed:
		err = o.outcome(ctx, ev)
	case deskbot.EventRequestApproved:
		err = o.approval(ctx, ev)
	case deskbot.EventRequestChanged:
		err = o.changed(ctx, ev)
	case deskbot.EventDeskMessage:
		err = o.deskMessage(withSilent(ctx, o.cfg.Quiet.DeskMessages), ev)
	case deskbot.EventModelUnreachable:
		err = o.once(ctx, ev.ID, 1, func() (*tele.Message, error) {
			return o.s.Send(ctx, o.cfg.ChatID, RenderWarning(ev.Desk, ev.Text), nil)
		}, noAfter)
	case deskbot.EventRisk, deskbot.EventBroker, deskbot.EventBrokerLogin:
		// What the risk rules did goes to General with the outcomes of
		// held calls: a halt is the team's to act on. So does the
		// broker's session: without one no order can be placed. A call
		// to log in carries the login button: a tap by an approver
		// answers with a login page bound to that approver, as /login
		// does; the button itself opens nothing anyone could reuse.
		var kb *tele.ReplyMarkup
		if ev.Kind == deskbot.EventBrokerLogin {
			kb = &tele.ReplyMarkup{InlineKeyboard: [][]tele.InlineButton{{loginButton}}}
		}
		err = o.once(ctx, ev.ID, 1, func() (*tele.Message, error) {
			return o.s.Send(WithLane(ctx, LaneClose), o.cfg.ChatID, esc(argtext.Clip(ev.Text, 3000, "…")), htmlOpts(kb))
		}, noAfter)
	case deskbot.EventToolResult:
		// A guarded call that ran without asking, under a standing grant:
		// told with the outcomes of held calls, in the desk's topic.
		var res deskbot.ToolResult
		if ev.Result != nil {
			res = *ev.Result
		}
		text := words.RanUnderGrantText(ev.Desk, *ev.Call, res, *ev.Grant, o.cfg.Now())
		err = o.once(ctx, ev.ID, 1, func() (*tele.Message, error) {
			return o.sendDesk(WithLane(ctx, LaneClose), ev.Desk, esc(argtext.Clip(text, 3000, "…")))
		}, o.noteDesk(ev.Desk))
	case deskbot.EventOrder:
		// A fill or a rejection is the outcome of trading, an allowed held
		// call's most often: it goes with the outcomes of held calls, not
		// behind the desks' chatter, and to the desk's topic, where the
		// desk's words about it are. A reply to it reaches the desk.
		err = o.once(ctx, ev.ID, 1, func() (*tele.Message, error) {
			return o.sendDesk(withSilent(WithLane(ctx, LaneClose), o.cfg.Quiet.Fills), ev.Desk, esc(argtext.Clip(ev.Text, 3000, "…")))
		}, o.noteDesk(ev.Desk))
	default:
		return o.events.AckEvent(ctx, o.cfg.Group, ev.ID) // not for the chat
	}
	if err != nil && TelegramCode(err) == 400 {
		// Telegram refuses this message for good (our rendering or a
		// vanished message). Retrying would block every later event, so
		// it is logged and passed over.
		o.log.ErrorContext(ctx, "outbox: Telegram refused an event's message; skipped", "event", ev.ID, "kind", ev.Kind, "desk", ev.Desk, "err", err)
		err = nil
	}
	if err != nil {
		return err
	}
	ctx, cancel := bookkeeping(ctx)
	defer cancel()
	return o.done(ctx, ev.ID)
}

func (o *Outbox) done(ctx context.Context, id string) error {
	if err := o.notes.PutNote(ctx, sentKey(id), "1", noteTTL); err != nil {
		return err
	}
	return o.events.AckEvent(ctx, o.cfg.Group, id)
}

// sent reports whether the note key (sentKey or sentPartKey) is there.
func (o *Outbox) sent(ctx context.Context, key string) (bool, error) {
	_, err := o.notes.Note(ctx, key)
	switch deskbot.ErrorCode(err) {
	case "":
		return true, nil
	case deskbot.ENOTFOUND:
		return false, nil
	}
	return false, err
}

func (o *Outbox) request(ctx context.Context, ev deskbot.Event) error {
	if ev.Request == nil {
		o.log.WarnContext(ctx, "outbox: user_request without its request; skipped", "event", ev.ID)
		return nil
	}
	live, err := o.shownLive(ctx, ev.Request)
	if err != nil {
		return err
	}
	text, kb := RenderRequest(ev.Request, live)
	// The request is checked right before its message goes out: one that
	// was decided or lapsed meanwhile is not offered; its outcome is
	// folded into one notice (closeAll).
	ctx = withCheck(WithLane(ctx, LaneRequest), func(ctx context.Context) error {
		r, err := o.current(ctx, ev)
		if err == nil && !o.live(r) {
			err = errClosed
		}
		return err
	})
	err = o.once(ctx, ev.ID, 1, func() (*tele.Message, error) {
		return o.s.Send(ctx, o.cfg.ChatID, text, htmlOpts(kb))
	}, o.pinAfter(o.noteRequest(ev.Request.ID)))
	if errors.Is(err, errClosed) {
		return nil
	}
	return err
}

// changed shows again, at the bottom of the chat, a request whose effect
// changed since its message showed it (an allow found it so and did
// nothing): the old message keeps the call but loses its buttons and points
// below, and the request is sent anew with what it would do now, as a held
// call is. A request closed meanwhile is left to its outcome.
func (o *Outbox) changed(ctx context.Context, ev deskbot.Event) error {
	r, err := o.current(ctx, ev)
	if err != nil || !o.live(r) {
		return err
	}
	loc, err := o.notes.Note(ctx, requestMessageKey(r.ID))
	if err != nil && deskbot.ErrorCode(err) != deskbot.ENOTFOUND {
		return err
	}
	if chatID, msgID, ok := parseMessageRef(loc); ok {
		text, _ := requestText(r, words.Live{Product: o.product(r.Desk)})
		text += "\n\n🔄 What this call would do changed since this message showed it, so it was not allowed. It is shown again below ⬇️ with what it would do now."
		if err := o.s.Edit(WithLane(ctx, LaneRequest), chatID, msgID, text, nil); err != nil && TelegramCode(err) != 400 {
			return err
		}
		if err := o.unpin(WithLane(ctx, LaneRequest), chatID, msgID); err != nil {
			return err
		}
	}
	ev.Request = r
	return o.request(ctx, ev)
}

// errClosed stops a request's message: the request is no longer open.
var errClosed = errors.New("the request is closed")

// current reads the request of ev as it stands now (as it was read, when
// the outbox has no way to read it again). A vanished request is closed.
func (o *Outbox) current(ctx context.Context, ev deskbot.Event) (*deskbot.Request, error) {
	if o.cfg.Request == nil {
		return ev.Request, nil
	}
	r, err := o.cfg.Request(ctx, ev.RequestID)
	if deskbot.ErrorCode(err) == deskbot.ENOTFOUND {
		return nil, nil
	}
	return r, err
}

// live reports whether r may be offered: open and not past its expiry.
func (o *Outbox) live(r *deskbot.Request) bool {
	return r != nil && r.State == deskbot.StateOpen && o.cfg.Now().Before(r.ExpiresAt)
}

// noteRequest records which message shows the request, for later edits.
func (o *Outbox) noteRequest(id string) func(context.Context, *tele.Message) error {
	return func(ctx context.Context, m *tele.Message) error {
		return o.notes.PutNote(ctx, requestMessageKey(id), messageRef(m.Chat.ID, m.ID), noteTTL)
	}
}

// outcome edits the request's message to show what became of it, or sends
// the outcome anew when that message is unknown or can no longer be edited.
func (o *Outbox) outcome(ctx context.Context, ev deskbot.Event) error {
	if ev.Request == nil {
		o.log.WarnContext(ctx, "outbox: outcome event without its request; skipped", "event", ev.ID)
		return nil
	}
	text := renderOutcome(ev.Request, words.Live{Product: o.product(ev.Request.Desk)})
	loc, err := o.notes.Note(ctx, requestMessageKey(ev.Request.ID))
	if deskbot.ErrorCode(err) != deskbot.ENOTFOUND && err != nil {
		return err
	}
	if chatID, msgID, ok := parseMessageRef(loc); ok {
		err := o.s.Edit(ctx, chatID, msgID, text, nil)
		if err == nil {
			return o.unpin(ctx, chatID, msgID)
		}
		if TelegramCode(err) != 400 {
			return err
		}
		o.log.WarnContext(ctx, "outbox: request message not editable; sending the outcome anew", "request", ev.Request.ID, "err", err)
	}
	// Only a new message sounds: an edit never does.
	ctx = withSilent(ctx, o.cfg.Quiet.Fills && isFill(ev.Request))
	return o.once(ctx, ev.ID, 1, func() (*tele.Message, error) {
		return o.s.Send(ctx, o.cfg.ChatID, text, nil)
	}, o.noteRequest(ev.Request.ID))
}

// approval edits a request's message when an approval is counted and more
// are needed: the same call and buttons, with who has approved. It goes in
// the closing lane (an edit, no new message). A request no longer open is
// left to its outcome's edit; one shown only as a digest row, or whose
// message is not known, is not edited (the tap's answer told the person).
func (o *Outbox) approval(ctx context.Context, ev deskbot.Event) error {
	r, err := o.current(ctx, ev)
	if err != nil || r == nil || !o.live(r) {
		return err
	}
	loc, err := o.notes.Note(ctx, requestMessageKey(r.ID))
	if deskbot.ErrorCode(err) == deskbot.ENOTFOUND {
		return nil
	} else if err != nil {
		return err
	}
	chatID, msgID, ok := parseMessageRef(loc)
	if !ok {
		return nil
	}
	live, err := o.shownLive(ctx, r)
	if err != nil {
		return err
	}
	text, kb := RenderRequest(r, live)
	return o.s.Edit(ctx, chatID, msgID, text, kb)
}
