package agent

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/model"
	"github.com/deskbot/deskbot/retry"
	"github.com/deskbot/deskbot/words"
)

// Deps is what the desks run on. Store is the desks' one store, taken
// whole: a turn is opened and closed through it in one round trip each,
// and a trigger already queued is taken with its turn's reads. The
// executor every call goes through is built from these parts in New, so
// the service and its tests run the same one.
type Deps struct {
	Store  deskbot.TurnStore
	Gate   Gatekeeper
	Tools  Registries
	Models map[string][]Backend // each desk's failover chain
	// Reader reads each call once where it enters (ToolCallExecutor.Reader).
	Reader Reader
	Now    deskbot.Now
	Log    *slog.Logger

	// Poll is how long a desk waits for a trigger, and a paused desk sleeps,
	// before looking again (default 1s).
	Poll time.Duration
	// RetryMin and RetryMax bound the backoff before a desk whose models all
	// failed tries its trigger again (default 10s and 5m).
	RetryMin, RetryMax time.Duration
	// HistoryMessages is how many past messages a turn shows the model
	// (default 40: twenty turns, each kept as two messages).
	HistoryMessages int
	// MaxRepeats is the loop guard's identical calls per turn (default 3).
	MaxRepeats int
}

// Desks runs every configured desk: one goroutine per desk, each handling
// its triggers one at a time, plus the scheduler.
type Desks struct {
	deps  Deps
	exec  *ToolCallExecutor
	names []string
	desks map[string]*desk
	sched *Scheduler
}

// New prepares the desks; Run starts them.
func New(cfg []DeskConfig, deps Deps) *Desks {
	if deps.Now == nil {
		deps.Now = time.Now
	}
	if deps.Log == nil {
		deps.Log = discard
	}
	deps.Poll = orDefault(deps.Poll, time.Second)
	deps.RetryMin = orDefault(deps.RetryMin, 10*time.Second)
	deps.RetryMax = max(orDefault(deps.RetryMax, 5*time.Minute), deps.RetryMin)
	if deps.HistoryMessages <= 0 {
		deps.HistoryMessages = 40
	}
	d := &Desks{deps: deps, desks: map[string]*desk{}, exec: &ToolCallExecutor{
		Runner: deps.Tools, Gate: deps.Gate, Events: deps.Store, Memory: deps.Store,
		Now: deps.Now, MaxRepeats: deps.MaxRepeats, Reader: deps.Reader, Log: deps.Log,
	}}
	for _, c := range cfg {
		d.names = append(d.names, c.Name)
		d.desks[c.Name] = &desk{
			cfg: c, d: d, models: deps.Models[c.Name], reg: deps.Tools[c.Name],
			log: deps.Log.With("desk", c.Name), mayBeDown: true,
			backoff: retry.Backoff{Min: deps.RetryMin, Max: deps.RetryMax},
		}
	}
	sched, err := NewScheduler(cfg)
	if err != nil {
		// LoadDesks validated the expressions; this is a caller's bypass.
		deps.Log.Error("schedules ignored", "err", err)
		sched = &Scheduler{}
	}
	sched.Inbox, sched.Notes, sched.Now, sched.Log = deps.Store, deps.Store, deps.Now, deps.Log
	d.sched = sched
	return d
}

// NewModels builds each desk's chain of model backends, logging to log
// (nil discards). A provider named in backends is built by it; any other
// comes from model.New.
func NewModels(cfg []DeskConfig, log *slog.Logger, backends Backends) (map[string][]Backend, error) {
	if log == nil {
		log = discard
	}
	out := make(map[string][]Backend, len(cfg))
	for _, c := range cfg {
		for _, mc := range c.Models {
			mc.Log = log.With("desk", c.Name)
			var b Backend
			var err error
			if f, ok := backends[mc.Provider]; ok {
				b.Turns, err = f(c, mc)
			} else {
				b.Model, err = model.New(mc)
			}
			if err != nil {
				return nil, deskbot.Errorf(deskbot.EINVALID, "desk %s: %s", c.Name, deskbot.ErrorMessage(err))
			}
			out[c.Name] = append(out[c.Name], b)
		}
	}
	return out, nil
}

// TellUnreachable tells the group, once per outage, that desk reaches none
// of its models (failures: each one's), in the words its own turn would
// use: a probe at the start found it so, and nobody should wait on a desk
// that cannot think. The desk's loop ends the outage ("reaches its model
// again") when one answers. Safe before Run.
func (d *Desks) TellUnreachable(ctx context.Context, desk string, failures []string) {
	now := d.deps.Now()
	first, err := d.deps.Store.PutNoteOnce(ctx, words.ModelOutageNote(desk), now.UTC().Format(time.RFC3339), 0)
	if err != nil || !first {
		return
	}
	if err := d.deps.Store.Publish(ctx, deskbot.Event{Kind: deskbot.EventModelUnreachable, Desk: desk, Time: now,
		Text: words.ModelUnreachable(desk, failures)}); err != nil {
		d.deps.Log.Warn("could not tell the chat that a desk reaches no model", "desk", desk, "err", deskbot.ErrorMessage(err))
	}
}

// Run runs every desk until ctx ends. It returns an error at once if a desk
// has no model or no registry.
func (d *Desks) Run(ctx context.Context) error {
	for _, n := range d.names {
		k := d.desks[n]
		if len(k.models) == 0 || k.reg == nil {
			return deskbot.Errorf(deskbot.EINVALID, "desk %q has no model chain or no tools", n)
		}
	}
	var wg sync.WaitGroup
	for _, n := range d.names {
		wg.Go(func() { d.desks[n].run(ctx) })
	}
	wg.Go(func() { d.sched.Run(ctx) })
	wg.Wait()
	return nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// discard is the logger of a part given none.
var discard = slog.New(slog.DiscardHandler)
