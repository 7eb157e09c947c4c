// Package agenttest is the one test world for a desk: the desks built by
// agent.New on the real store (Redis, or the embedded one), the real gate,
// the paper broker and the metrics wrappers, as the service builds them,
// with one fake clock. The agent, claudecode and benchmark tests add only
// their desk's chain and tools. It is imported only from _test files.
//
// A World's helpers are called from the test's goroutine; the desks run
// on their own until Start's stop or the test's end.
package agenttest

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/agent"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/gate"
	"github.com/deskbot/deskbot/gate/gatetest"
	"github.com/deskbot/deskbot/ops"
	"github.com/deskbot/deskbot/sizing"
	"github.com/deskbot/deskbot/store"
	"github.com/deskbot/deskbot/store/storetest"
)

// World is one desk service in one process.
type World struct {
	Store   *store.Store
	Gate    *gate.Gate // set by Start
	Paper   *broker.Paper
	Clock   *deskbottest.Clock
	DataDir string
	Log     *slog.Logger
	Metrics *ops.Metrics

	// Desk is the desk Start runs (default "main", no prompt).
	Desk agent.DeskConfig
	// Guarded is APPROVAL_TOOLS (default place_order).
	Guarded []string
	// Tools are the desk's own tools beside the broker's and the message
	// tools.
	Tools func(desk string) []deskbot.Tool
	// Wrap, when set, stands between the desks and the store, as the
	// service's stop does; it must forward the port whole.
	Wrap func(deskbot.TurnStore) deskbot.TurnStore

	events []deskbot.Event
}

// New is a world on a fresh store whose clock stands at FixedNow.
func New(t testing.TB) *World {
	t.Helper()
	w := &World{
		Store:   storetest.MustOpen(t),
		Clock:   deskbottest.NewClock(deskbottest.FixedNow),
		DataDir: t.TempDir(),
		Log:     slog.New(slog.NewTextHandler(io.Discard, nil)),
		Desk:    agent.DeskConfig{Name: "main"},
		Metrics: ops.NewMetrics(func(context.Context) (int64, int64, error) { return 0, 0, nil }),
	}
	w.Paper = broker.NewPaper(w.Store, w.Clock.Now)
	return w
}

// Registries builds the desk's tools on st as the service does (counted by
// the metrics): the world's own, the broker's, then the message tools.
func (w *World) Registries(t testing.TB, st *store.Store) agent.Registries {
	t.Helper()
	own := w.Tools
	if own == nil {
		own = func(string) []deskbot.Tool { return nil }
	}
	regs, err := agent.BuildRegistries([]agent.DeskConfig{w.Desk},
		w.Metrics.WrapTools(own),
		w.Metrics.WrapTools(func(string) []deskbot.Tool { return broker.Tools(w.Paper, nil, nil) }),
		w.Metrics.WrapTools(agent.MessageTools(st, w.DataDir, w.Clock.Now)))
	if err != nil {
		t.Fatal(err)
	}
	return regs
}

// Start runs the desk with chain on st (the world's store, or a reopened
// one after a "restart") until the returned stop is called or the test
// ends.
func (w *World) Start(t testing.TB, st *store.Store, chain ...agent.Backend) (stop func()) {
	t.Helper()
	regs := w.Registries(t, st)
	guarded := w.Guarded
	if guarded == nil {
		guarded = []string{"place_order"}
	}
	w.Gate = gatetest.MustNew(t, gate.Config{Tools: guarded, Expiry: 5 * time.Minute, Books: w.Paper,
		Limits: gatetest.HardLimits(nil, nil, w.Paper, st, w.Clock.Now)}, st, regs, w.Clock.Now, w.Log)
	var ts deskbot.TurnStore = st
	if w.Wrap != nil {
		ts = w.Wrap(ts)
	}
	d := agent.New([]agent.DeskConfig{w.Desk}, agent.Deps{
		Store: ts, Gate: w.Gate, Tools: regs,
		// Orders are read once where they enter, as in the service.
		Reader: &sizing.Sizer{Market: w.Paper, Check: w.Paper.Check, Orders: w.Paper, Now: w.Clock.Now},
		Models: w.Metrics.WrapChains(map[string][]agent.Backend{w.Desk.Name: chain}),
		Now:    w.Clock.Now, Log: w.Log,
		Poll: 20 * time.Millisecond, RetryMin: 20 * time.Millisecond, RetryMax: 50 * time.Millisecond,
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// Tell queues a message from Asha for the desk.
func (w *World) Tell(t testing.TB, text string) {
	t.Helper()
	tr := deskbot.Trigger{Desk: w.Desk.Name, Kind: deskbot.TriggerMessage, Text: text, From: "Asha", CreatedAt: w.Clock.Now()}
	if err := w.Store.Enqueue(context.Background(), tr); err != nil {
		t.Fatal(err)
	}
}

// ReadEvents collects what was published since the last call and returns
// every event seen so far.
func (w *World) ReadEvents(t testing.TB) []deskbot.Event {
	t.Helper()
	ctx := context.Background()
	for {
		evs, err := w.Store.ReadEvents(ctx, "test", "t", 100, 5*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 0 {
			return w.events
		}
		for _, e := range evs {
			w.events = append(w.events, e)
			if err := w.Store.AckEvent(ctx, "test", e.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// OfKind is the events of kind seen so far (by ReadEvents).
func (w *World) OfKind(kind deskbot.EventKind) []deskbot.Event {
	var out []deskbot.Event
	for _, e := range w.events {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// Count reads the events and counts those of kind.
func (w *World) Count(t testing.TB, kind deskbot.EventKind) int {
	t.Helper()
	w.ReadEvents(t)
	return len(w.OfKind(kind))
}

// WaitEvent waits for an event matching ok and returns it.
func (w *World) WaitEvent(t testing.TB, what string, ok func(deskbot.Event) bool) deskbot.Event {
	t.Helper()
	var found deskbot.Event
	deskbottest.Eventually(t, what, func() bool {
		for _, e := range w.ReadEvents(t) {
			if ok(e) {
				found = e
				return true
			}
		}
		return false
	})
	return found
}

// WaitMessage waits for the desk to say something containing text.
func (w *World) WaitMessage(t testing.TB, text string) deskbot.Event {
	t.Helper()
	return w.WaitEvent(t, "desk_message "+text, func(e deskbot.Event) bool {
		return e.Kind == deskbot.EventDeskMessage && strings.Contains(e.Text, text)
	})
}

// WaitSettled waits until every trigger is handled and the desk rests in
// state.
func (w *World) WaitSettled(t testing.TB, state deskbot.DeskState) {
	t.Helper()
	ctx := context.Background()
	deskbottest.Eventually(t, "the desk to settle in "+string(state), func() bool {
		n, err := w.Store.PendingTriggers(ctx, w.Desk.Name)
		st, err2 := w.Store.DeskStatus(ctx, w.Desk.Name)
		return err == nil && err2 == nil && n == 0 && st.State == state
	})
}

// Begin starts ex's turn for a trigger from the calls its memory holds
// completed for it, as a desk's turn opens (with its other reads).
func Begin(t testing.TB, ex *agent.ToolCallExecutor, desk, triggerID string) *agent.Turn {
	t.Helper()
	prior, err := ex.Memory.CompletedCalls(context.Background(), triggerID)
	if err != nil {
		t.Fatal(err)
	}
	return ex.Resume(desk, triggerID, prior)
}
