package claudecode_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/agent"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/claudecode"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/gate"
	"github.com/deskbot/deskbot/mcpserve"
	"github.com/deskbot/deskbot/model"
	"github.com/deskbot/deskbot/model/modeltest"
	"github.com/deskbot/deskbot/store"
	"github.com/deskbot/deskbot/store/storetest"
)

// fakeBin is the fake CLI, built once for the package's tests.
var fakeBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "fakeclaude")
	if err != nil {
		panic(err)
	}
	fakeBin = filepath.Join(dir, "fakeclaude")
	if out, err := exec.Command("go", "build", "-o", fakeBin, "./testdata/fakeclaude").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the fake claude: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// tally is a side-effect-free tool that counts its runs.
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

// run is one scripted run of the fake CLI (see testdata/fakeclaude).
type run struct {
	Steps     []step `json:"steps,omitempty"`
	Text      string `json:"text,omitempty"`
	Error     string `json:"error,omitempty"`
	Token     string `json:"token,omitempty"`
	NoSession bool   `json:"no_session,omitempty"`
	Hang      bool   `json:"hang,omitempty"`
}

type step struct {
	Call  string          `json:"call,omitempty"`
	Args  json.RawMessage `json:"args,omitempty"`
	Crash bool            `json:"crash,omitempty"`
}

func call(name, args string) step { return step{Call: name, Args: json.RawMessage(args)} }

// record is what a run of the fake saw.
type record struct {
	Args    []string          `json:"args"`
	Env     []string          `json:"env"`
	Cwd     string            `json:"cwd"`
	Stdin   string            `json:"stdin"`
	Tools   []json.RawMessage `json:"tools"`
	Results []string          `json:"results"`
	Errors  []string          `json:"errors"`
	Flags   map[string]string `json:"flags"`
	Pid     int               `json:"pid"`
}

// world is one desk, "main", whose chain is Claude Code (the fake) then an
// OpenAI-compatible fake server: real Redis, real gate, the paper broker.
type world struct {
	store   *store.Store
	gate    *gate.Gate
	paper   *broker.Paper
	quotes  *tally
	backup  *modeltest.Server
	mcp     *mcpserve.Server
	dataDir string
	script  string
	bin     string
	log     *slog.Logger
	timeout time.Duration
	baseURL string // the CLI's ANTHROPIC_BASE_URL, when set
	events  []deskbot.Event
	now     time.Time
}

func newWorld(t *testing.T, runs ...run) *world {
	t.Helper()
	dir := t.TempDir()
	w := &world{
		store: storetest.MustOpen(t), quotes: &tally{}, backup: modeltest.New(t), dataDir: filepath.Join(dir, "data"),
		script: filepath.Join(dir, "claude.script.json"), bin: filepath.Join(dir, "claude"), timeout: 20 * time.Second,
		log: slog.New(slog.NewTextHandler(io.Discard, nil)), now: time.Date(2026, 12, 4, 5, 0, 0, 0, time.UTC),
	}
	w.paper = broker.NewPaper(w.store.Client(), w.store.Key, w.clock)
	w.setRuns(t, runs...)
	bin, err := os.ReadFile(fakeBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w.bin, bin, 0o700); err != nil {
		t.Fatal(err)
	}
	if w.mcp, err = mcpserve.Listen(w.log); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.mcp.Close() })
	return w
}

// setRuns scripts the fake's runs.
func (w *world) setRuns(t *testing.T, runs ...run) {
	t.Helper()
	b, err := json.Marshal(map[string]any{"runs": runs})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w.script, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func (w *world) clock() time.Time { return w.now }

func (w *world) deskDir() string { return filepath.Join(w.dataDir, "desks", "main") }

// start runs the desk until stop is called or the test ends.
func (w *world) start(t *testing.T) (stop func()) {
	t.Helper()
	cfg := agent.DeskConfig{Name: "main", Prompt: "You trade on paper.", MaxSteps: 7}
	regs, err := agent.BuildRegistries([]agent.DeskConfig{cfg},
		func(string) []deskbot.Tool { return []deskbot.Tool{w.quotes} },
		func(string) []deskbot.Tool { return broker.Tools(w.paper, nil) })
	if err != nil {
		t.Fatal(err)
	}
	w.gate = gate.New(gate.Config{Tools: []string{"place_order"}, Expiry: 5 * time.Minute}, w.store, regs, w.clock, w.log)
	exec := &agent.ToolCallExecutor{Runner: regs, Gate: w.gate, Events: w.store, Memory: w.store, Now: w.clock, Log: w.log}
	cc, err := claudecode.New(claudecode.Config{
		Name: "claude", Bin: w.bin, Model: "claude-sonnet-4-5", APIKey: "sk-ant-desk-key", BaseURL: w.baseURL, Timeout: w.timeout,
		Desk: "main", Dir: w.deskDir(), StateDir: filepath.Join(w.dataDir, "claude-code", "main"),
		MCP: w.mcp, Sessions: w.store, Log: w.log,
	})
	if err != nil {
		t.Fatal(err)
	}
	backup, err := model.New(model.Config{Name: "backup", BaseURL: w.backup.URL + "/v1", Model: "fake", Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	d := agent.New([]agent.DeskConfig{cfg}, agent.Deps{
		Inbox: w.store, State: w.store, History: w.store, Notes: w.store, Events: w.store, Executor: exec, Registries: regs,
		Requests: w.store, Models: map[string][]deskbot.Model{"main": {cc, backup}}, Now: w.clock, Log: w.log,
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

func (w *world) tell(t *testing.T, text string) {
	t.Helper()
	tr := deskbot.Trigger{Desk: "main", Kind: deskbot.TriggerMessage, Text: text, From: "Asha", CreatedAt: w.now}
	if err := w.store.Enqueue(t.Context(), tr); err != nil {
		t.Fatal(err)
	}
}

func (w *world) readEvents(t *testing.T) []deskbot.Event {
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

func (w *world) waitEvent(t *testing.T, what string, ok func(deskbot.Event) bool) deskbot.Event {
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

func (w *world) waitMessage(t *testing.T, text string) deskbot.Event {
	t.Helper()
	return w.waitEvent(t, "desk_message "+text, func(e deskbot.Event) bool {
		return e.Kind == deskbot.EventDeskMessage && strings.Contains(e.Text, text)
	})
}

func (w *world) waitSettled(t *testing.T, state deskbot.DeskState) {
	t.Helper()
	deskbottest.Eventually(t, "the desk to settle in "+string(state), func() bool {
		n, err := w.store.PendingTriggers(t.Context(), "main")
		st, err2 := w.store.DeskStatus(t.Context(), "main")
		return err == nil && err2 == nil && n == 0 && st.State == state
	})
}

func (w *world) ofKind(kind deskbot.EventKind) []deskbot.Event {
	var out []deskbot.Event
	for _, e := range w.events {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// record returns what the n-th run of the fake saw.
func (w *world) record(t *testing.T, n int) record {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("%s.run%d.json", w.script, n))
	if err != nil {
		t.Fatalf("run %d of the fake left no record: %v", n, err)
	}
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}
