package agent_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/agent"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/gate"
	"github.com/deskbot/deskbot/model"
	"github.com/deskbot/deskbot/model/modeltest"
	"github.com/deskbot/deskbot/store"
	"github.com/deskbot/deskbot/store/storetest"
)

// tally is a side-effect-free tool that counts its runs, so a test can see
// that a call was not repeated.
type tally struct {
	mu sync.Mutex
	n  int
}

func (*tally) Name() string        { return "get_quote" }
func (*tally) Description() string { return "Quote a symbol." }
func (*tally) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"symbol":{"type":"string"}}}`)
}
func (*tally) CheckArguments(json.RawMessage) error { return nil }
func (c *tally) Run(ctx context.Context, desk string, args json.RawMessage) (deskbot.ToolResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return deskbot.ToolResult{Text: "quote #" + strconv.Itoa(c.n) + " for " + string(args) + ": 1500.00"}, nil
}
func (c *tally) runs() int { c.mu.Lock(); defer c.mu.Unlock(); return c.n }

// deskWorld is a desk service in one process: real Redis, real gate, the
// paper broker, fake model servers over HTTP.
type deskWorld struct {
	store   *store.Store
	gate    *gate.Gate
	paper   *broker.Paper
	quotes  *tally
	guarded []string // APPROVAL_TOOLS; place_order when nil
	primary *modeltest.Server
	backup  *modeltest.Server
	cfg     agent.DeskConfig
	now     time.Time
	dataDir string
	log     *slog.Logger
	// backupAPI is the backup's provider (default OpenAI-compatible).
	backupAPI string
	events    []deskbot.Event
	// statusReads counts the desks' looks at their pause switch, so a test
	// can wait for the loop to go round rather than sleep.
	statusReads atomic.Int64
	// openReads counts reads of every open request (settling a desk should
	// count its own instead).
	openReads atomic.Int64
	// takes counts the desks' asks to take a queued trigger (TakeTurn).
	takes atomic.Int64
	// piecewise hides the store's TurnStore and TurnTaker from the desks,
	// and its ResultRecorder from the executor.
	piecewise bool
	// model, when set, stands between the desks and each model of the chain.
	model func(deskbot.Model) deskbot.Model
	// inbox, when set, stands between the desks and the store's inbox (a
	// benchmark hands out triggers one at a time through it).
	inbox func(deskbot.Inbox) deskbot.Inbox
	// recordDelay, when set, holds every call's record (its events and its
	// memory) this long before it goes to Redis: a slow round trip.
	recordDelay time.Duration
}

// slowRecorder is the store, its calls' records held back a while.
type slowRecorder struct {
	*store.Store
	delay time.Duration
}

func (s slowRecorder) RecordResult(ctx context.Context, triggerID string, call *deskbot.Event, c *deskbot.CompletedCall, result deskbot.Event) error {
	time.Sleep(s.delay)
	return s.Store.RecordResult(ctx, triggerID, call, c, result)
}

// countingState counts DeskStatus reads.
type countingState struct {
	deskbot.DeskStore
	n *atomic.Int64
}

func (c countingState) DeskStatus(ctx context.Context, desk string) (deskbot.DeskStatus, error) {
	c.n.Add(1)
	return c.DeskStore.DeskStatus(ctx, desk)
}

// The store's one-round-trip turn, through the counting wrapper: opening a
// turn reads the pause switch.
func (c countingState) OpenTurn(ctx context.Context, desk, triggerID string, limit int, at time.Time) (deskbot.DeskStatus, []deskbot.Message, []deskbot.CompletedCall, error) {
	c.n.Add(1)
	return c.DeskStore.(agent.TurnStore).OpenTurn(ctx, desk, triggerID, limit, at)
}

func (c countingState) AnnounceDeskState(ctx context.Context, desk string, s deskbot.DeskState, at time.Time) error {
	return c.DeskStore.(agent.TurnStore).AnnounceDeskState(ctx, desk, s, at)
}

func (c countingState) CloseTurn(ctx context.Context, desk string, words *deskbot.Event, hist []deskbot.Message, held bool, at time.Time, ack *deskbot.Trigger) (deskbot.DeskState, error) {
	return c.DeskStore.(agent.TurnStore).CloseTurn(ctx, desk, words, hist, held, at, ack)
}

// countingInbox is the store's inbox, counting the pause switch among
// what taking a trigger and opening its turn in one round trip reads.
type countingInbox struct {
	*store.Store
	n     *atomic.Int64
	takes *atomic.Int64 // every TakeTurn, a trigger taken or not
}

func (c countingInbox) TakeTurn(ctx context.Context, desk string, limit int, at time.Time) (*deskbot.Trigger, deskbot.DeskStatus, []deskbot.Message, []deskbot.CompletedCall, error) {
	c.takes.Add(1)
	tr, st, hist, prior, err := c.Store.TakeTurn(ctx, desk, limit, at)
	if tr != nil {
		c.n.Add(1)
	}
	return tr, st, hist, prior, err
}

// pieceState is the store's DeskStore without its TurnStore: the desk
// reads and writes a turn piece by piece.
type pieceState struct {
	deskbot.DeskStore
	n *atomic.Int64
}

func (c pieceState) DeskStatus(ctx context.Context, desk string) (deskbot.DeskStatus, error) {
	c.n.Add(1)
	return c.DeskStore.DeskStatus(ctx, desk)
}

// countingRequests is the store, counting reads of every open request.
type countingRequests struct {
	*store.Store
	n *atomic.Int64
}

func (c countingRequests) OpenRequests(ctx context.Context) ([]*deskbot.Request, error) {
	c.n.Add(1)
	return c.Store.OpenRequests(ctx)
}

// fixedNow is Friday 4 December 2026, 10:30 India time.
var fixedNow = time.Date(2026, 12, 4, 5, 0, 0, 0, time.UTC)

func newDeskWorld(t testing.TB) *deskWorld {
	t.Helper()
	w := &deskWorld{
		store:   storetest.MustOpen(t),
		quotes:  &tally{},
		primary: modeltest.New(t),
		backup:  modeltest.New(t),
		cfg:     agent.DeskConfig{Name: "main"},
		now:     fixedNow,
		dataDir: t.TempDir(),
		log:     slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	w.paper = broker.NewPaper(w.store.Client(), w.store.Key, w.clock)
	return w
}

func (w *deskWorld) clock() time.Time { return w.now }

func (w *deskWorld) chain(t testing.TB) []deskbot.Model {
	t.Helper()
	var ms []deskbot.Model
	for i, s := range []*modeltest.Server{w.primary, w.backup} {
		c := model.Config{Name: []string{"primary", "backup"}[i], BaseURL: s.URL + "/v1", Model: "fake", Timeout: 5 * time.Second}
		if i == 1 && w.backupAPI == model.Anthropic {
			c.Provider, c.BaseURL, c.APIKey = model.Anthropic, s.URL, "sk-ant-test"
		}
		m, err := model.New(c)
		if err != nil {
			t.Fatal(err)
		}
		ms = append(ms, m)
	}
	return ms
}

// models is the chain the desks are given.
func (w *deskWorld) models(t testing.TB) []deskbot.Model {
	ms := w.chain(t)
	if w.model != nil {
		for i := range ms {
			ms[i] = w.model(ms[i])
		}
	}
	return ms
}

// start runs a Desks on st (the world's store, or a reopened one after a
// "restart") until the returned stop is called or the test ends.
func (w *deskWorld) start(t testing.TB, st *store.Store) (stop func()) {
	t.Helper()
	regs, err := agent.BuildRegistries([]agent.DeskConfig{w.cfg},
		func(string) []deskbot.Tool { return []deskbot.Tool{w.quotes} },
		func(string) []deskbot.Tool { return broker.Tools(w.paper, nil) },
		agent.MessageTools(st, w.dataDir, w.clock))
	if err != nil {
		t.Fatal(err)
	}
	guarded := w.guarded
	if guarded == nil {
		guarded = []string{"place_order"}
	}
	w.gate = gate.New(gate.Config{Tools: guarded, Expiry: 5 * time.Minute}, st, regs, w.clock, w.log)
	var memory deskbot.CallMemory = st
	if w.piecewise {
		memory = struct{ deskbot.CallMemory }{st} // not a ResultRecorder
	} else if w.recordDelay > 0 {
		memory = slowRecorder{st, w.recordDelay}
	}
	exec := &agent.ToolCallExecutor{Runner: regs, Gate: w.gate, Events: st, Memory: memory, Now: w.clock, Log: w.log}
	var inbox deskbot.Inbox = st
	if !w.piecewise {
		inbox = countingInbox{st, &w.statusReads, &w.takes}
	}
	if w.inbox != nil {
		inbox = w.inbox(inbox)
	}
	var state deskbot.DeskStore = countingState{st, &w.statusReads}
	if w.piecewise {
		state = pieceState{st, &w.statusReads}
	}
	d := agent.New([]agent.DeskConfig{w.cfg}, agent.Deps{
		Inbox: inbox, State: state, History: st, Notes: st, Events: st, Executor: exec, Registries: regs, Requests: countingRequests{st, &w.openReads},
		Models: map[string][]deskbot.Model{"main": w.models(t)}, Now: w.clock, Log: w.log,
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

func (w *deskWorld) tell(t *testing.T, text string) {
	t.Helper()
	tr := deskbot.Trigger{Desk: "main", Kind: deskbot.TriggerMessage, Text: text, From: "Asha", CreatedAt: w.now}
	if err := w.store.Enqueue(t.Context(), tr); err != nil {
		t.Fatal(err)
	}
}

// readEvents collects what was published since the last call.
func (w *deskWorld) readEvents(t *testing.T) []deskbot.Event {
	t.Helper()
	for {
		evs, err := w.store.ReadEvents(t.Context(), "test", "t", 100, 5*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 0 {
			return w.events
		}
		for _, e := range evs {
			w.events = append(w.events, e)
			if err := w.store.AckEvent(t.Context(), "test", e.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// waitEvent waits for an event matching ok and returns it.
func (w *deskWorld) waitEvent(t *testing.T, what string, ok func(deskbot.Event) bool) deskbot.Event {
	t.Helper()
	var found deskbot.Event
	deskbottest.Eventually(t, what, func() bool {
		for _, e := range w.readEvents(t) {
			if ok(e) {
				found = e
				return true
			}
		}
		return false
	})
	return found
}

func (w *deskWorld) waitMessage(t *testing.T, text string) deskbot.Event {
	t.Helper()
	return w.waitEvent(t, "desk_message "+text, func(e deskbot.Event) bool {
		return e.Kind == deskbot.EventDeskMessage && strings.Contains(e.Text, text)
	})
}

func (w *deskWorld) count(t *testing.T, kind deskbot.EventKind) int {
	n := 0
	for _, e := range w.readEvents(t) {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

// waitSettled waits until every trigger is handled and the desk rests in state.
func (w *deskWorld) waitSettled(t *testing.T, state deskbot.DeskState) {
	t.Helper()
	deskbottest.Eventually(t, "the desk to settle in "+string(state), func() bool {
		n, err := w.store.PendingTriggers(t.Context(), "main")
		st, err2 := w.store.DeskStatus(t.Context(), "main")
		return err == nil && err2 == nil && n == 0 && st.State == state
	})
}

func quote(args string) modeltest.ToolCall {
	return modeltest.ToolCall{Name: "get_quote", Arguments: args}
}

// lastUser is the text of the last user message of a request.
func lastUser(r modeltest.Request) string {
	ms := r.Messages()
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].Role == "user" {
			return ms[i].Text
		}
	}
	return ""
}
