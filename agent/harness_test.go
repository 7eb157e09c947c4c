package agent_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/agent"
	"github.com/deskbot/deskbot/agent/agenttest"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/model"
	"github.com/deskbot/deskbot/model/modeltest"
	"github.com/deskbot/deskbot/store"
)

// deskWorld is the shared desk world (agenttest) with this package's
// chain: two fake model servers over HTTP, primary then backup, and a
// quote tool that counts its runs.
type deskWorld struct {
	*agenttest.World
	quotes  *deskbottest.Tool
	primary *modeltest.Server
	backup  *modeltest.Server
	// backupAPI is the backup's provider (default OpenAI-compatible).
	backupAPI string
	// statusReads counts the desks' looks at their pause switch, so a test
	// can wait for the loop to go round rather than sleep.
	statusReads atomic.Int64
	// model, when set, stands between the desks and each model of the chain.
	model func(deskbot.Model) deskbot.Model
	// inbox, when set, stands between the desks and the store (a benchmark
	// hands out triggers one at a time through it).
	inbox func(deskbot.TurnStore) deskbot.TurnStore
	// recordDelay, when set, holds every call's record (its events and its
	// memory) this long before it goes to Redis: a slow round trip.
	recordDelay time.Duration
}

// slowRecorder is the store, its calls' records held back a while.
type slowRecorder struct {
	deskbot.TurnStore
	delay time.Duration
}

var _ deskbot.TurnStore = slowRecorder{}

func (s slowRecorder) RecordResult(ctx context.Context, triggerID string, call *deskbot.Event, c *deskbot.CompletedCall, result deskbot.Event) error {
	time.Sleep(s.delay)
	return s.TurnStore.RecordResult(ctx, triggerID, call, c, result)
}

// counting is the store, counting the desks' looks at the pause switch
// (every read of it, alone or with a turn's: an OpenTurn that took a
// trigger).
type counting struct {
	deskbot.TurnStore
	reads *atomic.Int64
}

var _ deskbot.TurnStore = counting{}

func (c counting) DeskStatus(ctx context.Context, desk string) (deskbot.DeskStatus, error) {
	c.reads.Add(1)
	return c.TurnStore.DeskStatus(ctx, desk)
}

func (c counting) OpenTurn(ctx context.Context, desk string, block time.Duration, limit int, now deskbot.Now) (deskbot.OpenedTurn, error) {
	o, err := c.TurnStore.OpenTurn(ctx, desk, block, limit, now)
	if o.Trigger != nil {
		c.reads.Add(1)
	}
	return o, err
}

func newDeskWorld(t testing.TB) *deskWorld {
	t.Helper()
	w := &deskWorld{World: agenttest.New(t), quotes: deskbottest.QuoteTool(), primary: modeltest.New(t), backup: modeltest.New(t)}
	w.Tools = func(string) []deskbot.Tool { return []deskbot.Tool{w.quotes} }
	w.Wrap = func(ts deskbot.TurnStore) deskbot.TurnStore {
		if w.recordDelay > 0 {
			ts = slowRecorder{ts, w.recordDelay}
		}
		ts = counting{ts, &w.statusReads}
		if w.inbox != nil {
			ts = w.inbox(ts)
		}
		return ts
	}
	return w
}

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

// backends is the chain the desks are given.
func (w *deskWorld) backends(t testing.TB) []agent.Backend {
	var bs []agent.Backend
	for _, m := range w.chain(t) {
		if w.model != nil {
			m = w.model(m)
		}
		bs = append(bs, agent.Backend{Model: m})
	}
	return bs
}

// start runs the desk on st (the world's store, or a reopened one after a
// "restart") until the returned stop is called or the test ends.
func (w *deskWorld) start(t testing.TB, st *store.Store) (stop func()) {
	t.Helper()
	return w.Start(t, st, w.backends(t)...)
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
