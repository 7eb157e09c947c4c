package agent_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/agent"
	"github.com/deskbot/deskbot/gate"
	"github.com/deskbot/deskbot/store"
	"github.com/deskbot/deskbot/store/storetest"
)

// countTool counts its runs and echoes its arguments.
type countTool struct {
	name string
	mu   sync.Mutex
	n    int
}

func (c *countTool) Name() string            { return c.name }
func (c *countTool) Description() string     { return "counts" }
func (c *countTool) Schema() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (c *countTool) Run(ctx context.Context, desk string, args json.RawMessage) (deskbot.ToolResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return deskbot.ToolResult{Text: c.name + " ran with " + string(args)}, nil
}
func (c *countTool) runs() int { c.mu.Lock(); defer c.mu.Unlock(); return c.n }

type execFixture struct {
	store  *store.Store
	exec   *agent.ToolCallExecutor
	gate   *gate.Gate
	lookup *countTool
	guard  *countTool
}

func mustExecutor(t *testing.T) *execFixture {
	t.Helper()
	s := storetest.MustOpen(t)
	f := &execFixture{store: s, lookup: &countTool{name: "get_positions"}, guard: &countTool{name: "flatten_desk"}}
	regs := agent.Registries{"main": agent.NewRegistry(f.lookup, f.guard)}
	now := func() time.Time { return time.Date(2026, 11, 30, 8, 30, 0, 0, time.UTC) }
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	f.gate = gate.New(gate.Config{Tools: []string{"flatten_desk"}, Expiry: 5 * time.Minute}, s, regs, now, log)
	f.exec = &agent.ToolCallExecutor{Runner: regs, Gate: f.gate, Events: s, Memory: s, Now: now, MaxRepeats: 2, Log: log}
	return f
}

func call(id, name, args string) deskbot.ToolCall {
	return deskbot.ToolCall{ID: id, Name: name, Arguments: json.RawMessage(args)}
}

func (f *execFixture) mustExecute(t *testing.T, turn *agent.Turn, c deskbot.ToolCall) agent.Execution {
	t.Helper()
	ex, err := f.exec.Execute(t.Context(), turn, c)
	if err != nil {
		t.Fatalf("execute %s: %v", c.Name, err)
	}
	return ex
}

func TestExecutorRunsPublishesAndRemembers(t *testing.T) {
	f := mustExecutor(t)
	turn, err := f.exec.Begin(t.Context(), "main", "trig-1")
	if err != nil {
		t.Fatal(err)
	}
	ex := f.mustExecute(t, turn, call("c1", "get_positions", `{}`))
	if ex.Result.IsError || ex.Held || f.lookup.runs() != 1 {
		t.Fatalf("execution = %+v, runs %d", ex, f.lookup.runs())
	}
	events, err := f.store.ReadEvents(t.Context(), "test", "t", 10, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range events {
		kinds = append(kinds, string(e.Kind))
	}
	if got, want := strings.Join(kinds, ","), "tool_call,tool_result"; got != want {
		t.Errorf("events = %s, want %s", got, want)
	}
	mem, _ := f.store.CompletedCalls(t.Context(), "trig-1")
	if len(mem) != 1 || mem[0].Call.Name != "get_positions" {
		t.Errorf("remembered = %+v", mem)
	}
}

func TestExecutorLoopGuard(t *testing.T) {
	f := mustExecutor(t)
	turn, _ := f.exec.Begin(t.Context(), "main", "trig-guard")
	for i, want := range []bool{false, false, true} {
		// Same call, arguments formatted differently each time.
		args := []string{`{"a":1,"b":2}`, `{ "b": 2, "a": 1 }`, `{"b":2,"a":1}`}[i]
		ex := f.mustExecute(t, turn, call("c", "get_positions", args))
		if ex.Result.IsError != want {
			t.Errorf("call %d refused = %v, want %v (%s)", i+1, ex.Result.IsError, want, ex.Result.Text)
		}
	}
	if got := f.lookup.runs(); got != 2 {
		t.Errorf("runs = %d, want 2", got)
	}
	// A different argument is a different call.
	if ex := f.mustExecute(t, turn, call("c", "get_positions", `{"a":2}`)); ex.Result.IsError {
		t.Errorf("distinct call refused: %s", ex.Result.Text)
	}
}

func TestExecutorHoldsGuardedCall(t *testing.T) {
	f := mustExecutor(t)
	turn, _ := f.exec.Begin(t.Context(), "main", "trig-hold")
	ex := f.mustExecute(t, turn, call("c1", "flatten_desk", `{}`))
	if !ex.Held || ex.Request == nil || f.guard.runs() != 0 {
		t.Fatalf("execution = %+v, runs %d; want held, not run", ex, f.guard.runs())
	}
	if ex.Result.Text != gate.HoldMessage(ex.Request) {
		t.Errorf("model told %q", ex.Result.Text)
	}
	// Allowed: the gate runs exactly that call through the desk's registry.
	if _, err := f.gate.Resolve(t.Context(), ex.Request.ID, deskbot.AllowOnce, "", deskbot.Person{ID: 1, Name: "Asha"}); err != nil {
		t.Fatal(err)
	}
	if got := f.guard.runs(); got != 1 {
		t.Errorf("runs after allow = %d, want 1", got)
	}
}

func TestExecutorReplaysCompletedCallsAfterFailoverAndRestart(t *testing.T) {
	f := mustExecutor(t)
	turn, _ := f.exec.Begin(t.Context(), "main", "trig-replay")
	f.mustExecute(t, turn, call("c1", "get_positions", `{"x":1}`))
	held := f.mustExecute(t, turn, call("c2", "flatten_desk", `{}`))

	// The next backend takes over and repeats both calls with new ids.
	turn.Failover()
	if ex := f.mustExecute(t, turn, call("other-1", "get_positions", `{ "x": 1 }`)); !ex.Replayed {
		t.Errorf("repeat after failover was not replayed: %+v", ex)
	}
	if ex := f.mustExecute(t, turn, call("other-2", "flatten_desk", `{}`)); !ex.Replayed || ex.Result.Text != held.Result.Text {
		t.Errorf("held call not replayed: %+v", ex)
	}
	// The same trigger after a restart: the calls are remembered in Redis.
	again, err := f.exec.Begin(t.Context(), "main", "trig-replay")
	if err != nil {
		t.Fatal(err)
	}
	if ex := f.mustExecute(t, again, call("c9", "get_positions", `{"x":1}`)); !ex.Replayed {
		t.Errorf("repeat after restart ran again")
	}
	if got := f.lookup.runs(); got != 1 {
		t.Errorf("get_positions ran %d times, want 1", got)
	}
	open, _ := f.store.OpenRequests(t.Context())
	if len(open) != 1 {
		t.Errorf("open requests = %d, want 1 (no second hold)", len(open))
	}
}

func TestRegistryModelMistakes(t *testing.T) {
	reg := agent.NewRegistry(&countTool{name: "bash"})
	tests := []struct {
		call deskbot.ToolCall
		want string
	}{
		{call("1", "rm_rf", `{}`), "There is no tool named 'rm_rf'. The tools are: bash."},
		{call("2", "bash", `{"command":`), "The arguments of bash must be a JSON object"},
		{call("3", "bash", `[1,2]`), "The arguments of bash must be a JSON object"},
	}
	for _, tt := range tests {
		got, err := reg.Run(t.Context(), "main", tt.call)
		if err != nil || !got.IsError || !strings.HasPrefix(got.Text, tt.want) {
			t.Errorf("%s %s: %+v, %v; want tool error %q", tt.call.Name, tt.call.Arguments, got, err, tt.want)
		}
	}
	if got, _ := reg.Run(t.Context(), "main", call("4", "bash", ``)); got.IsError {
		t.Errorf("empty arguments should mean {}: %s", got.Text)
	}
}
