package agent

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/model"
	"github.com/deskbot/deskbot/retry"
)

// Deps is what the desks run on. The store provides Inbox, State, History,
// Notes and Events.
//
// When State is also a TurnStore (the store is), a turn reads and writes
// through it in fewer round trips; it then stands for History and Events
// too (the history and the events it writes are theirs), and for the
// Inbox's acknowledgement: a turn closed through it is acknowledged with
// its last writes, and Inbox.AckTrigger is called only when that failed.
// When the Inbox is then also a TurnTaker (the store is), a trigger already
// queued is taken and its turn opened in one round trip.
type Deps struct {
	Inbox      deskbot.Inbox
	State      deskbot.DeskStore
	History    deskbot.History
	Notes      deskbot.Notes
	Events     deskbot.Publisher
	Executor   *ToolCallExecutor
	Registries Registries
	Models     map[string][]deskbot.Model // each desk's failover chain
	// Requests, when set, lets a desk rest as "waiting for approval" while
	// any of its requests is open, not only those of its last turn. When it
	// also counts a desk's open requests (OpenRequestCount(ctx, desk)
	// (int64, error), as the store does in constant time), that is used
	// instead of reading every open request.
	Requests interface {
		OpenRequests(ctx context.Context) ([]*deskbot.Request, error)
	}
	Now deskbot.Now
	Log *slog.Logger

	// Poll is how long a desk waits for a trigger, and a paused desk sleeps,
	// before looking again (default 1s).
	Poll time.Duration
	// RetryMin and RetryMax bound the backoff before a desk whose models all
	// failed tries its trigger again (default 10s and 5m).
	RetryMin, RetryMax time.Duration
	// HistoryMessages is how many past messages a turn shows the model
	// (default 40: twenty turns, each kept as two messages).
	HistoryMessages int
}

// TurnStore reads what a desk's turn starts from and writes what it ends
// with in one round trip each (package store documents each method).
type TurnStore interface {
	// OpenTurn reads the desk's status, its last historyLimit messages and
	// the calls already completed for the trigger, and unless the desk is
	// paused saves and announces it working at at.
	OpenTurn(ctx context.Context, desk, triggerID string, historyLimit int, at time.Time) (deskbot.DeskStatus, []deskbot.Message, []deskbot.CompletedCall, error)
	// AnnounceDeskState saves the desk's state and publishes its event.
	AnnounceDeskState(ctx context.Context, desk string, state deskbot.DeskState, at time.Time) error
	// CloseTurn publishes words (nil: none), appends history, saves and
	// announces the state the desk rests in (waiting when heldNow or any
	// request of the desk is open, else idle), then acknowledges ack (nil:
	// none), all or nothing, and returns that state. It acknowledges on the
	// store the Inbox reads.
	CloseTurn(ctx context.Context, desk string, words *deskbot.Event, history []deskbot.Message, heldNow bool, at time.Time, ack *deskbot.Trigger) (deskbot.DeskState, error)
}

// TurnTaker takes a desk's next trigger and opens its turn (as
// TurnStore.OpenTurn) in one round trip, when one is in hand or queued
// already; it returns a nil trigger when it took none. When the Inbox is
// one (the store is) and State is a TurnStore, the desk asks it first, and
// only when it took nothing waits on Inbox.NextTrigger and opens the turn
// with OpenTurn.
type TurnTaker interface {
	TakeTurn(ctx context.Context, desk string, historyLimit int, at time.Time) (*deskbot.Trigger, deskbot.DeskStatus, []deskbot.Message, []deskbot.CompletedCall, error)
}

// Desks runs every configured desk: one goroutine per desk, each handling
// its triggers one at a time, plus the scheduler.
type Desks struct {
	deps  Deps
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
	d := &Desks{deps: deps, desks: map[string]*desk{}}
	for _, c := range cfg {
		d.names = append(d.names, c.Name)
		d.desks[c.Name] = &desk{
			cfg: c, d: d, models: deps.Models[c.Name], reg: deps.Registries[c.Name],
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
	sched.Inbox, sched.Notes, sched.Now, sched.Log = deps.Inbox, deps.Notes, deps.Now, deps.Log
	d.sched = sched
	return d
}

// NewModels builds each desk's chain of model backends, logging to log
// (nil discards). A provider named in backends is built by it; any other
// comes from model.New.
func NewModels(cfg []DeskConfig, log *slog.Logger, backends Backends) (map[string][]deskbot.Model, error) {
	if log == nil {
		log = discard
	}
	out := make(map[string][]deskbot.Model, len(cfg))
	for _, c := range cfg {
		for _, mc := range c.Models {
			mc.Log = log.With("desk", c.Name)
			var m deskbot.Model
			var err error
			if f, ok := backends[mc.Provider]; ok {
				m, err = f(c, mc)
			} else {
				m, err = model.New(mc)
			}
			if err != nil {
				return nil, deskbot.Errorf(deskbot.EINVALID, "desk %s: %s", c.Name, deskbot.ErrorMessage(err))
			}
			out[c.Name] = append(out[c.Name], m)
		}
	}
	return out, nil
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
