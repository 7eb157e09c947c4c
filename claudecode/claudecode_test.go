package claudecode_test

import (
	"encoding/json"
	"os"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deskbot/deskbot/gate/gatetest"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/gate"
	"github.com/deskbot/deskbot/model/modeltest"
)

func TestTurnRunsToolsThroughTheExecutor(t *testing.T) {
	w := newWorld(t, run{Steps: []step{call("get_quote", `{"symbol":"TCS"}`), call("get_quote", `{"symbol":"INFY"}`)}, Text: "TCS and INFY quoted."})
	w.start(t)
	w.Tell(t, "Quote TCS and INFY.")
	w.WaitMessage(t, "TCS and INFY quoted.")
	w.WaitSettled(t, deskbot.DeskIdle)

	if got := w.quotes.Runs(); got != 2 {
		t.Errorf("get_quote ran %d times, want 2", got)
	}
	rec := w.record(t, 1)
	calls, results := w.OfKind(deskbot.EventToolCall), w.OfKind(deskbot.EventToolResult)
	if len(calls) != 2 || len(results) != 2 {
		t.Fatalf("events: %d tool_call, %d tool_result; want 2 and 2", len(calls), len(results))
	}
	for i, want := range []string{`{"symbol":"TCS"}`, `{"symbol":"INFY"}`} {
		if c := calls[i].Call; c.Name != "get_quote" || string(c.Arguments) != want {
			t.Errorf("tool_call %d = %s %s, want get_quote %s", i, c.Name, c.Arguments, want)
		}
		if got := results[i].Result.Text; got != rec.Results[i] {
			t.Errorf("tool_result %d = %q, but the CLI was told %q", i, got, rec.Results[i])
		}
	}

	// Exactly the desk's tools, as the agent loop offers them.
	var names []string
	for _, raw := range rec.Tools {
		var tool struct{ Name, Description string }
		if err := json.Unmarshal(raw, &tool); err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
		if tool.Name == "get_quote" && tool.Description != "Quote a symbol." {
			t.Errorf("get_quote's description = %q", tool.Description)
		}
	}
	if want := []string{"flatten_desk", "get_positions", "get_quote", "place_order"}; !slices.Equal(names, want) {
		t.Errorf("tools listed = %v, want %v", names, want)
	}
	allowed := strings.Split(rec.Flags["--allowedTools"], ",")
	sort.Strings(allowed)
	if want := []string{"mcp__deskbot__flatten_desk", "mcp__deskbot__get_positions", "mcp__deskbot__get_quote", "mcp__deskbot__place_order"}; !slices.Equal(allowed, want) {
		t.Errorf("--allowedTools = %v, want %v", allowed, want)
	}
	for flag, want := range map[string]string{"-p": "", "--output-format": "stream-json", "--verbose": "", "--strict-mcp-config": "", "--tools": "",
		"--max-turns": "7", "--model": "claude-sonnet-4-5", "--setting-sources": "user", "--bare": "", "--system-prompt-snapshot": "off"} {
		if got, ok := rec.Flags[flag]; !ok || got != want {
			t.Errorf("flag %s = %q (given %v), want %q", flag, got, ok, want)
		}
	}
	if _, ok := rec.Flags["--resume"]; ok {
		t.Error("a desk's first turn resumed a session")
	}
	if !strings.Contains(rec.Flags["--append-system-prompt"], "You trade on paper.") {
		t.Errorf("system prompt lacks the desk's prompt: %q", rec.Flags["--append-system-prompt"])
	}
	if !strings.Contains(rec.Stdin, "Quote TCS and INFY.") {
		t.Errorf("prompt = %q", rec.Stdin)
	}
	if rec.Cwd != w.deskDir() {
		t.Errorf("working directory = %s, want the desk's folder %s", rec.Cwd, w.deskDir())
	}
	if s, err := w.Store.Note(t.Context(), "claude-code:session:main"); err != nil || s != "0000-session-1" {
		t.Errorf("session kept = %q, %v; want the CLI's", s, err)
	}
}

// The tokens the CLI reports count toward the desk's day, cached input
// included, for a run that ended in an error too (the CLI spent them): the
// daily token rule and /desks read them.
func TestTurnCountsTheCLIsTokens(t *testing.T) {
	w := newWorld(t, run{Error: "error_max_turns"}, run{Text: "Quoted."})
	w.backup.Push(modeltest.Text("The backup answered."))
	w.start(t)
	w.Tell(t, "Quote TCS.")
	w.WaitMessage(t, "The backup answered.")
	w.WaitSettled(t, deskbot.DeskIdle)
	w.Tell(t, "Quote INFY.")
	w.WaitMessage(t, "Quoted.")
	w.WaitSettled(t, deskbot.DeskIdle)
	st, err := w.Store.DeskStatus(t.Context(), "main")
	if err != nil {
		t.Fatal(err)
	}
	// 127 for the failed run (100 in, 20 cached, 7 out), the backup model's
	// 15 for the turn it took over, 15 for the second run.
	if got, want := st.Tokens, int64(127+15+15); got != want {
		t.Errorf("tokens today = %d, want %d", got, want)
	}
}

// The team's Why? reaches a Claude Code desk as a turn with no tools: the
// CLI is offered none and allowed none, a call it makes anyway runs
// nothing, and its words are the answer, under the request.
func TestWhyTurnOffersTheCLINoTools(t *testing.T) {
	w := newWorld(t, run{Steps: []step{call("get_quote", `{"symbol":"TCS"}`)}, Text: "TCS looks cheap; risk small."})
	w.start(t)
	tr := deskbot.Trigger{Desk: "main", Kind: deskbot.TriggerWhy, RequestID: "r-1", Text: "The team asks why.", CreatedAt: w.Clock.Now()}
	if err := w.Store.Enqueue(t.Context(), tr); err != nil {
		t.Fatal(err)
	}
	w.WaitMessage(t, "TCS looks cheap; risk small.")
	rec := w.record(t, 1)
	if len(rec.Tools) != 0 || rec.Flags["--allowedTools"] != "" {
		t.Errorf("a why turn offered the CLI tools %d and allowed %q", len(rec.Tools), rec.Flags["--allowedTools"])
	}
	if got := w.quotes.Runs(); got != 0 {
		t.Errorf("get_quote ran %d times in a why turn", got)
	}
	var answer *deskbot.Event
	for _, e := range w.OfKind(deskbot.EventDeskMessage) {
		if e.Text == "TCS looks cheap; risk small." {
			answer = &e
		}
	}
	if answer == nil || answer.RequestID != "r-1" {
		t.Errorf("the answer's event: %+v; want it to name request r-1", answer)
	}
}

func TestHeldCallAllowedInNextTurnResumesTheSession(t *testing.T) {
	order := `{"symbol":"RELIANCE","side":"buy","quantity":10,"price":2500}`
	w := newWorld(t,
		run{Steps: []step{call("place_order", order)}, Text: "I asked to buy 10 RELIANCE."},
		run{Text: "Bought 10 RELIANCE."})
	w.start(t)
	w.Tell(t, "Buy 10 RELIANCE at 2500.")

	held := w.WaitEvent(t, "the held request", func(e deskbot.Event) bool { return e.Kind == deskbot.EventUserRequest })
	w.WaitSettled(t, deskbot.DeskWaiting)
	req, err := w.Gate.Request(t.Context(), held.RequestID)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := w.record(t, 1).Results[0], gate.HoldMessage(req); got != want {
		t.Errorf("the CLI was told %q, want the hold text %q", got, want)
	}
	if b, _ := w.Paper.Book(t.Context(), "main"); len(b.Positions) != 0 {
		t.Fatalf("positions before the allow = %+v", b.Positions)
	}

	if _, err := gatetest.Resolve(t.Context(), w.Gate, held.RequestID, deskbot.AllowOnce, "", deskbot.Person{ID: 7, Name: "Asha"}); err != nil {
		t.Fatal(err)
	}
	w.WaitMessage(t, "Bought 10 RELIANCE.")
	w.WaitSettled(t, deskbot.DeskIdle)
	// The words the CLI ended the held turn with stay in the history: the
	// request spoke for the desk.
	for _, e := range w.ReadEvents(t) {
		if e.Kind == deskbot.EventDeskMessage && strings.Contains(e.Text, "I asked to buy 10 RELIANCE.") {
			t.Errorf("the text after the hold was posted: %q", e.Text)
		}
	}
	rec := w.record(t, 2)
	if got := rec.Flags["--resume"]; got != "0000-session-1" {
		t.Errorf("second turn --resume = %q, want the first turn's session", got)
	}
	if want := "The user allowed place_order (request " + held.RequestID; !strings.Contains(rec.Stdin, want) {
		t.Errorf("second turn's prompt %q lacks %q", rec.Stdin, want)
	}
	if b, err := w.Paper.Book(t.Context(), "main"); err != nil || len(b.Positions) != 1 || b.Positions[0].Quantity != 10 {
		t.Errorf("book after the allow = %+v, %v; want 10 RELIANCE", b, err)
	}
}

func TestCrashMidTurnFailsOverWithoutRepeatingACall(t *testing.T) {
	w := newWorld(t, run{Steps: []step{call("get_quote", `{"symbol":"TCS"}`), {Crash: true}}})
	// The backup is shown the call that already ran; it asks again anyway,
	// and is answered from memory.
	w.backup.Push(modeltest.Calls(modeltest.ToolCall{Name: "get_quote", Arguments: `{"symbol":"TCS"}`}), modeltest.Text("TCS is at 1500."))
	w.start(t)
	w.Tell(t, "Quote TCS.")
	w.WaitMessage(t, "TCS is at 1500.")
	w.WaitSettled(t, deskbot.DeskIdle)

	if got := w.quotes.Runs(); got != 1 {
		t.Errorf("get_quote ran %d times, want 1", got)
	}
	first := w.backup.Requests()[0]
	if res := first.ToolResults(); len(res) != 1 || !strings.Contains(res[0].Text, "quote #1") {
		t.Errorf("the backup was shown %+v, want the call the CLI made", res)
	}
}

// The CLI given another desk's token or none is refused by the MCP
// server: its init line shows deskbot's server failed, so the turn fails
// over and nothing the CLI says without the desk's tools is posted.
func TestOtherDesksOrNoTokenIsRefused(t *testing.T) {
	w := newWorld(t)
	other, err := w.mcp.Open("other", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	w.setRuns(t,
		run{Token: other.Token, Steps: []step{call("get_quote", `{"symbol":"TCS"}`)}, Text: "first done"},
		run{Token: "none", Steps: []step{call("get_quote", `{"symbol":"TCS"}`)}, Text: "second done"})
	w.backup.Push(modeltest.Text("The backup took the first."), modeltest.Text("The backup took the second."))
	w.start(t)
	w.Tell(t, "Quote TCS.")
	w.WaitMessage(t, "The backup took the first.")
	w.Tell(t, "Quote TCS again.")
	w.WaitMessage(t, "The backup took the second.")
	for n := 1; n <= 2; n++ {
		if rec := w.record(t, n); len(rec.Errors) == 0 || len(rec.Tools) != 0 {
			t.Errorf("run %d: tools %d, errors %v; want refused", n, len(rec.Tools), rec.Errors)
		}
	}
	if got := w.quotes.Runs(); got != 0 {
		t.Errorf("get_quote ran %d times", got)
	}
	if n := len(w.OfKind(deskbot.EventToolCall)); n != 0 {
		t.Errorf("%d tool_call events", n)
	}
	for _, e := range w.OfKind(deskbot.EventDeskMessage) {
		if strings.Contains(e.Text, "done") {
			t.Errorf("the words of a CLI without its tools were posted: %q", e.Text)
		}
	}
}

// A run whose init line shows the link to the desk's tools down is not a
// turn, however it ends: the CLI is stopped, the next backend takes the
// turn, and nothing the CLI said is posted.
func TestDeadMCPLinkFailsOver(t *testing.T) {
	for _, tc := range []struct {
		name    string
		run     run
		problem string
	}{
		{"server refused", run{Token: "none", Text: "No tools today; TCS looks fine."}, "deskbot's MCP server has status failed"},
		{"tools not offered", run{HideTools: true, Text: "No tools today; TCS looks fine."}, "none of the desk's tools is offered"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, tc.run)
			w.backup.Push(modeltest.Text("The backup answered."))
			w.start(t)
			w.Tell(t, "Quote TCS.")
			w.WaitMessage(t, "The backup answered.")
			w.WaitSettled(t, deskbot.DeskIdle)
			for _, e := range w.OfKind(deskbot.EventDeskMessage) {
				if strings.Contains(e.Text, "No tools today") {
					t.Errorf("posted: %q", e.Text)
				}
			}
			w.waitLog(t, tc.problem)
		})
	}
}

// An error result's reasons (its errors, its result text empty) are the
// turn's error words; one that gives none leaves the CLI's stderr in the
// log, the key and the MCP token taken out.
func TestErrorResultSaysWhy(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  run
		want []string
	}{
		{"errors", run{Error: "error_max_turns", Errors: []string{"Reached maximum number of turns (1)"}},
			[]string{"error_max_turns after 1 turns: Reached maximum number of turns (1)"}},
		{"two errors", run{Error: "error_during_execution", Errors: []string{"No conversation found", "bad --resume"}},
			[]string{"error_during_execution after 1 turns: No conversation found; bad --resume"}},
		{"stderr only", run{Error: "error_during_execution", Stderr: "boom: the API said 529 to sk-ant-desk-key"},
			[]string{"error_during_execution after 1 turns: no reason given", "boom: the API said 529 to [redacted]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, tc.run)
			w.backup.Push(modeltest.Text("The backup answered."))
			w.start(t)
			w.Tell(t, "Quote TCS.")
			w.WaitMessage(t, "The backup answered.")
			w.waitLog(t, tc.want...)
			if strings.Contains(w.logs.String(), "sk-ant-desk-key") {
				t.Error("the API key reached the log")
			}
		})
	}
}

func TestCLIEnvironmentHoldsNoSecret(t *testing.T) {
	secrets := map[string]string{
		"TELEGRAM_TOKEN":    "123456:bot-token-secret",
		"REDIS_URL":         "redis://:redis-password@127.0.0.1:6379/0",
		"ANTHROPIC_API_KEY": "sk-ant-service-key",
		"MODEL_API_KEY":     "sk-model-key",
		"AWS_SECRET":        "aws-secret",
	}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	w := newWorld(t, run{Text: "hello"})
	w.start(t)
	w.Tell(t, "Say hello.")
	w.WaitMessage(t, "hello")
	rec := w.record(t, 1)

	env := map[string]string{}
	for _, kv := range rec.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	allowed := []string{"HOME", "PATH", "LANG", "ENABLE_TOOL_SEARCH", "DISABLE_AUTOUPDATER", "DISABLE_TELEMETRY",
		"DISABLE_ERROR_REPORTING", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "CLAUDE_CODE_MAX_RETRIES", "MCP_TOOL_TIMEOUT", "ANTHROPIC_API_KEY"}
	for k := range env {
		if !slices.Contains(allowed, k) {
			t.Errorf("the CLI's environment has %s", k)
		}
	}
	if got := env["ANTHROPIC_API_KEY"]; got != "sk-ant-desk-key" {
		t.Errorf("ANTHROPIC_API_KEY = %q, want the backend's own key", got)
	}
	if strings.HasPrefix(env["HOME"], w.deskDir()) {
		t.Errorf("HOME %s is in the desk's folder, which the desk writes", env["HOME"])
	}
	seen := strings.Join(append(append(rec.Env, rec.Args...), rec.Stdin), "\n")
	for k, v := range secrets {
		if strings.Contains(seen, v) {
			t.Errorf("the CLI was given %s", k)
		}
	}
	if strings.Contains(strings.Join(rec.Args, " "), "Bearer") {
		t.Error("the MCP token is on the command line, which any process may read")
	}
}

// A CLI that ends with an error result (a limit) or runs past the timeout
// hands the turn to the next backend.
func TestLimitsAndTimeoutFailOver(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  run
	}{
		{"max turns", run{Steps: []step{call("get_quote", `{"symbol":"TCS"}`)}, Error: "error_max_turns"}},
		{"timeout", run{Steps: []step{call("get_quote", `{"symbol":"TCS"}`)}, Hang: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, tc.run)
			w.timeout = 2 * time.Second
			w.backup.Push(modeltest.Text("The backup answered."))
			w.start(t)
			w.Tell(t, "Quote TCS.")
			w.WaitMessage(t, "The backup answered.")
			if got := w.quotes.Runs(); got != 1 {
				t.Errorf("get_quote ran %d times, want 1", got)
			}
			if res := w.backup.Requests()[0].ToolResults(); len(res) != 1 {
				t.Errorf("the backup was shown %+v, want the CLI's call", res)
			}
		})
	}
}

// A session the CLI no longer knows is forgotten, so the desk's next turn
// starts a new conversation instead of failing the same way forever.
func TestUnknownSessionIsForgotten(t *testing.T) {
	w := newWorld(t, run{NoSession: true}, run{Text: "fresh start"})
	if err := w.Store.PutNote(t.Context(), "claude-code:session:main", "gone-session", time.Hour); err != nil {
		t.Fatal(err)
	}
	w.backup.Push(modeltest.Text("The backup answered."))
	w.start(t)
	w.Tell(t, "Hello.")
	w.WaitMessage(t, "The backup answered.")
	w.Tell(t, "Hello again.")
	w.WaitMessage(t, "fresh start")
	if got := w.record(t, 1).Flags["--resume"]; got != "gone-session" {
		t.Errorf("first run --resume = %q", got)
	}
	if _, ok := w.record(t, 2).Flags["--resume"]; ok {
		t.Error("the second run resumed the unknown session")
	}
}

// A turn tried again after every backend failed: the CLI is told the calls
// already made for the trigger, and a repeat of one is answered from
// memory, not run again.
func TestRetriedTurnShowsCompletedCallsWithoutRepeating(t *testing.T) {
	w := newWorld(t,
		run{Steps: []step{call("get_quote", `{"symbol":"TCS"}`), {Crash: true}}},
		run{Steps: []step{call("get_quote", `{"symbol":"TCS"}`)}, Text: "TCS is at 1500."})
	w.backup.Push(modeltest.Status(500))
	w.start(t)
	w.Tell(t, "Quote TCS.")
	w.WaitMessage(t, "TCS is at 1500.")
	w.WaitSettled(t, deskbot.DeskIdle)

	if got := w.quotes.Runs(); got != 1 {
		t.Errorf("get_quote ran %d times, want 1", got)
	}
	rec := w.record(t, 2)
	if !strings.Contains(rec.Stdin, "Calls already made") || !strings.Contains(rec.Stdin, `get_quote {"symbol":"TCS"} → quote #1`) {
		t.Errorf("second run's prompt = %q, want the call already made", rec.Stdin)
	}
	if len(rec.Results) != 1 || !strings.Contains(rec.Results[0], "quote #1") {
		t.Errorf("the repeat was answered %q, want the first result", rec.Results)
	}
}

// A stop of the service stops the CLI mid-turn (its whole process group),
// and the trigger stays in hand for the next start.
func TestShutdownStopsTheCLI(t *testing.T) {
	w := newWorld(t, run{Steps: []step{call("get_quote", `{"symbol":"TCS"}`)}, Hang: true})
	stop := w.start(t)
	w.Tell(t, "Quote TCS.")
	var rec record
	deskbottest.Eventually(t, "the CLI to be running", func() bool {
		b, err := os.ReadFile(w.script + ".run1.json")
		return err == nil && json.Unmarshal(b, &rec) == nil && len(rec.Results) == 1
	})
	if err := syscall.Kill(rec.Pid, 0); err != nil {
		t.Fatalf("the CLI is not running before the stop: %v", err)
	}
	stop()
	deskbottest.Eventually(t, "the CLI to be gone", func() bool {
		return syscall.Kill(rec.Pid, 0) == syscall.ESRCH
	})
	if n, err := w.Store.PendingTriggers(t.Context(), "main"); err != nil || n != 1 {
		t.Errorf("pending triggers after the stop = %d, %v; want the one in hand", n, err)
	}
}
