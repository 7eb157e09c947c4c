package claudecode_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/agent"
	"github.com/deskbot/deskbot/agent/agenttest"
	"github.com/deskbot/deskbot/claudecode"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/mcpserve"
	"github.com/deskbot/deskbot/model"
	"github.com/deskbot/deskbot/model/modeltest"
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

// run is one scripted run of the fake CLI (see testdata/fakeclaude).
type run struct {
	Steps     []step   `json:"steps,omitempty"`
	Text      string   `json:"text,omitempty"`
	Error     string   `json:"error,omitempty"`
	Errors    []string `json:"errors,omitempty"`
	Stderr    string   `json:"stderr,omitempty"`
	HideTools bool     `json:"hide_tools,omitempty"`
	Token     string   `json:"token,omitempty"`
	NoSession bool     `json:"no_session,omitempty"`
	Hang      bool     `json:"hang,omitempty"`
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

// world is the shared desk world (agenttest) with one desk, "main", whose
// chain is Claude Code (the fake CLI) then an OpenAI-compatible fake
// server.
type world struct {
	*agenttest.World
	quotes  *deskbottest.Tool
	backup  *modeltest.Server
	mcp     *mcpserve.Server
	script  string
	bin     string
	timeout time.Duration
	baseURL string    // the CLI's ANTHROPIC_BASE_URL, when set
	logs    *syncLogs // what the desk and the backend logged
}

// syncLogs is a log's text, written by the desk's goroutines and read by
// the test.
type syncLogs struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *syncLogs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLogs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitLog waits until the log holds every one of want.
func (w *world) waitLog(t *testing.T, want ...string) {
	t.Helper()
	deskbottest.Eventually(t, fmt.Sprintf("the log to say %q", want), func() bool {
		logs := w.logs.String()
		for _, s := range want {
			if !strings.Contains(logs, s) {
				return false
			}
		}
		return true
	})
}

func newWorld(t *testing.T, runs ...run) *world {
	t.Helper()
	dir := t.TempDir()
	w := &world{
		World: agenttest.New(t), quotes: deskbottest.QuoteTool(), backup: modeltest.New(t),
		script: filepath.Join(dir, "claude.script.json"), bin: filepath.Join(dir, "claude"), timeout: 20 * time.Second,
		logs: &syncLogs{},
	}
	w.Log = slog.New(slog.NewTextHandler(w.logs, nil))
	w.DataDir = filepath.Join(dir, "data")
	w.Desk = agent.DeskConfig{Name: "main", Prompt: "You trade on paper.", MaxSteps: 7,
		Tools: []string{"get_quote", "get_positions", "place_order", "flatten_desk"}}
	w.Tools = func(string) []deskbot.Tool { return []deskbot.Tool{w.quotes} }
	w.setRuns(t, runs...)
	bin, err := os.ReadFile(fakeBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w.bin, bin, 0o700); err != nil {
		t.Fatal(err)
	}
	if w.mcp, err = mcpserve.Listen(w.Log); err != nil {
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

func (w *world) deskDir() string { return filepath.Join(w.DataDir, "desks", "main") }

// start runs the desk until stop is called or the test ends.
func (w *world) start(t *testing.T) (stop func()) {
	t.Helper()
	cc, err := claudecode.New(claudecode.Config{
		Name: "claude", Bin: w.bin, Model: "claude-sonnet-4-5", APIKey: "sk-ant-desk-key", BaseURL: w.baseURL, Timeout: w.timeout,
		Desk: "main", Dir: w.deskDir(), StateDir: filepath.Join(w.DataDir, "claude-code", "main"),
		MCP: w.mcp, Sessions: w.Store, Log: w.Log,
	})
	if err != nil {
		t.Fatal(err)
	}
	backup, err := model.New(model.Config{Name: "backup", BaseURL: w.backup.URL + "/v1", Model: "fake", Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return w.Start(t, w.Store, agent.Backend{Turns: cc}, agent.Backend{Model: backup})
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
