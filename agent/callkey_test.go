package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/gate/gatetest"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/agent"
	"github.com/deskbot/deskbot/agent/agenttest"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/gate"
	"github.com/deskbot/deskbot/store/storetest"
)

// keyTool is a place_order that records the call key (deskbot.CallKey)
// of each of its runs, as a broker tool reads it.
type keyTool struct {
	*deskbottest.Tool
	mu   sync.Mutex
	keys []string
}

func newKeyTool() *keyTool {
	k := &keyTool{}
	k.Tool = &deskbottest.Tool{ToolName: deskbot.ToolPlaceOrder, About: "records its call key",
		Answer: func(ctx context.Context, _ int, _ string, _ json.RawMessage) (deskbot.ToolResult, error) {
			key, ok := deskbot.CallKey(ctx)
			k.mu.Lock()
			defer k.mu.Unlock()
			k.keys = append(k.keys, fmt.Sprintf("%s %v", key, ok))
			return deskbot.ToolResult{Text: "placed"}, nil
		}}
	return k
}

func (k *keyTool) seen() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]string(nil), k.keys...)
}

// mustKeyExecutor is an executor whose place_order (unguarded) records
// its call keys.
func mustKeyExecutor(t *testing.T) (*agent.ToolCallExecutor, *keyTool) {
	t.Helper()
	s := storetest.MustOpen(t)
	k := newKeyTool()
	regs := agent.Registries{"main": agent.NewRegistry(k.Tool)}
	now := func() time.Time { return time.Date(2026, 11, 30, 8, 30, 0, 0, time.UTC) }
	log := slog.New(slog.DiscardHandler)
	g := gatetest.MustNew(t, gate.Config{Expiry: 5 * time.Minute, Limits: gatetest.HardLimits(nil, nil, broker.NewPaper(s, now), s, now)}, s, regs, now, log)
	return &agent.ToolCallExecutor{Runner: regs, Gate: g, Events: s, Memory: s, Now: now, Log: log}, k
}

// An unguarded call runs under the key <trigger id>:<call id>: one order
// per call of a turn, whatever the broker is asked.
func TestUnguardedCallRunsUnderItsTriggerAndCallID(t *testing.T) {
	exec, k := mustKeyExecutor(t)
	for _, tt := range []struct {
		trigger, call, args string
		want                string // the key the tool saw, and whether it had one
	}{
		{"trig-1", "call_1", `{"quantity":1}`, "trig-1:call_1 true"},
		{"trig-1", "call_2", `{"quantity":2}`, "trig-1:call_2 true"},
		{"trig-2", "call_1", `{"quantity":1}`, "trig-2:call_1 true"},
		{"trig-3", "", `{"quantity":1}`, " false"}, // no call id: no key is made up
	} {
		turn := agenttest.Begin(t, exec, "main", tt.trigger)
		before := len(k.seen())
		ex, err := exec.Execute(t.Context(), turn, call(tt.call, deskbot.ToolPlaceOrder, tt.args))
		turn.Record()
		if err != nil || ex.Held || ex.Refused {
			t.Fatalf("%s %s: %+v, %v; want it run", tt.trigger, tt.call, ex, err)
		}
		seen := k.seen()
		if len(seen) != before+1 {
			t.Fatalf("%s %s: %d runs; want 1", tt.trigger, tt.call, len(seen)-before)
		}
		if got := seen[before]; got != tt.want {
			t.Errorf("%s %s: key %q; want %q", tt.trigger, tt.call, got, tt.want)
		}
	}
	// The turn of trig-1 replayed after a restart: the model asks for a
	// completed call again under a new id, and it is answered from
	// memory, not run under a new key.
	turn := agenttest.Begin(t, exec, "main", "trig-1")
	before := len(k.seen())
	ex, err := exec.Execute(t.Context(), turn, call("call_9", deskbot.ToolPlaceOrder, `{"quantity":2}`))
	turn.Record()
	if err != nil || !ex.Replayed {
		t.Fatalf("replayed call: %+v, %v; want replayed", ex, err)
	}
	if got := k.seen()[before:]; len(got) != 0 {
		t.Errorf("a completed call ran again, under %q", got)
	}
}
