package bot

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	tele "gopkg.in/telebot.v3"

	"github.com/deskbot/deskbot"
)

// OutboxConfig configures an Outbox.
type OutboxConfig struct {
	ChatID   int64  // the team's group
	Group    string // consumer group on the event stream; default OutboxGroup
	Consumer string // this process's name in the group; default "bot"
	Now      deskbot.Now
	// PictureRoot returns the folder a desk's pictures must be in
	// (DataDir/desks/<desk>); "" refuses every picture of the desk.
	PictureRoot func(desk string) string
	Batch       int // events read at once; default 20
	// Block is how long a read waits for new events; default 1s. A read in
	// progress is not interrupted when ctx ends, so this bounds how long
	// Run takes to return.
	Block time.Duration
	// Sleep waits between attempts after a failure; tests inject one.
	Sleep func(ctx context.Context, d time.Duration) error
	// Book reads a desk's book, so a held broker call is shown in trading
	// words (the position it leaves, the desk's P&L); nil renders without.
	Book func(ctx context.Context, desk string) (deskbot.Book, error)
}

// Outbox delivers events to the group durably: it reads the event stream as
// a consumer group, sends each event in order through the Sender, and
// acknowledges an event only once Telegram accepted what it produced. After
// a crash the unacknowledged events come back; a note per event (and per
// part of a long message) records what was already accepted, so nothing is
// sent twice unless the crash fell between Telegram's answer and the note.
//
// One Outbox runs per process; Run is not safe to call twice at once.
type Outbox struct {
	cfg    OutboxConfig
	events deskbot.EventLog
	notes  deskbot.Notes
	s      *Sender
	log    *slog.Logger
	topics *topics // desks' forum topics; nil: everything in General
}

// NewOutbox builds an Outbox; Run starts it. A nil log logs nothing.
func NewOutbox(cfg OutboxConfig, events deskbot.EventLog, notes deskbot.Notes, s *Sender, log *slog.Logger) *Outbox {
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
	if cfg.Batch <= 0 {
		cfg.Batch = 20
	}
	if cfg.Block <= 0 {
		cfg.Block = time.Second
	}
	if cfg.Sleep == nil {
		cfg.Sleep = deskbot.Sleep
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Outbox{cfg: cfg, events: events, notes: notes, s: s, log: log}
}

// Run delivers events until ctx ends, and returns ctx's error. Failures
// (Redis down, Telegram refusing the bot) are logged and retried with
// backoff up to a minute; the events wait in the stream meanwhile.
func (o *Outbox) Run(ctx context.Context) error {
	backoff := deskbot.Backoff{Min: time.Second, Max: time.Minute}
	for {
		evs, err := o.events.ReadEvents(ctx, o.cfg.Group, o.cfg.Consumer, o.cfg.Batch, o.cfg.Block)
		if err == nil {
			err = o.deliver(ctx, evs)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err == nil {
			backoff.Reset()
			continue
		}
		wait := backoff.Next()
		o.log.WarnContext(ctx, "outbox: delivery stalled, will retry", "err", err.Error(), "wait", wait)
		if err := o.cfg.Sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// deliver handles a batch in order, stopping at the first event it could
// not deliver (it comes back with the next read, as do those after it).
func (o *Outbox) deliver(ctx context.Context, evs []deskbot.Event) error {
	for i := 0; i < len(evs); {
		n, err := o.coalesce(ctx, evs[i:])
		if err != nil {
			return err
		}
		if n > 0 {
			i += n
			continue
		}
		if err := o.one(ctx, evs[i]); err != nil {
			return fmt.Errorf("event %s (%s): %w", evs[i].ID, evs[i].Kind, err)
		}
		i++
	}
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
	case deskbot.EventDeskMessage:
		err = o.deskMessage(ctx, ev)
	case deskbot.EventModelUnreachable:
		err = o.once(ctx, ev.ID, 1, func() (*tele.Message, error) {
			return o.s.Send(ctx, o.cfg.ChatID, RenderWarning(ev.Desk, ev.Text), nil)
		}, noAfter)
	default:
		return o.events.AckEvent(ctx, o.cfg.Group, ev.ID) // not for the chat
	}
	if err != nil && TelegramCode(err) == 400 {
		// Telegram refuses this message for good (our rendering or a
		// vanished message). Retrying would block every later event, so
		// it is logged and passed over.
		o.log.ErrorContext(ctx, "outbox: Telegram refused an event's message; skipped", "event", ev.ID, "kind", ev.Kind, "desk", ev.Desk, "err", err.Error())
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
	text, kb := RenderRequestBook(ev.Request, o.book(ctx, ev.Request))
	if ev.Request.State != deskbot.StateOpen {
		// Decided or lapsed before it reached the chat (an outage, a
		// backlog): show the outcome, never buttons that can do nothing.
		text, kb = RenderOutcome(ev.Request), nil
	}
	return o.once(ctx, ev.ID, 1, func() (*tele.Message, error) {
		return o.s.Send(ctx, o.cfg.ChatID, text, htmlOpts(kb))
	}, o.noteRequest(ev.Request.ID))
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
	text := RenderOutcome(ev.Request)
	loc, err := o.notes.Note(ctx, requestMessageKey(ev.Request.ID))
	if deskbot.ErrorCode(err) != deskbot.ENOTFOUND && err != nil {
		return err
	}
	if chatID, msgID, ok := parseMessageRef(loc); ok {
		err := o.s.Edit(ctx, chatID, msgID, text, nil)
		if TelegramCode(err) != 400 {
			return err
		}
		o.log.WarnContext(ctx, "outbox: request message not editable; sending the outcome anew", "request", ev.Request.ID, "err", err.Error())
	}
	return o.once(ctx, ev.ID, 1, func() (*tele.Message, error) {
		return o.s.Send(ctx, o.cfg.ChatID, text, nil)
	}, o.noteRequest(ev.Request.ID))
}
