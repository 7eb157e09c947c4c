package main

import (
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/claudecode"
	"github.com/deskbot/deskbot/config"
	"github.com/deskbot/deskbot/config/configtest"
)

// A desk on Claude Code, the whole service around it: the CLI (a fake,
// scripted) calls flatten_desk over MCP, the call is held and shown with
// its buttons like any desk's, an approver allows it, it runs once, and the
// desk's next turn resumes the same Claude session with the result.
func TestClaudeCodeDeskEndToEnd(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "claude")
	if out, err := exec.Command("go", "build", "-o", bin, "../../claudecode/testdata/fakeclaude").CombinedOutput(); err != nil {
		t.Fatalf("building the fake claude: %v\n%s", err, out)
	}
	script, _ := json.Marshal(map[string]any{"runs": []any{
		map[string]any{"steps": []any{map[string]any{"call": "flatten_desk", "args": map[string]any{}}}, "text": "Asked the team to allow flatten_desk."},
		map[string]any{"text": "Desk is flat now."},
	}})
	if err := os.WriteFile(bin+".script.json", script, 0o600); err != nil {
		t.Fatal(err)
	}
	desks := filepath.Join(dir, "desks.toml")
	if err := os.WriteFile(desks, []byte("[[desk]]\nname = \"main\"\n[[desk.model]]\nprovider = \"claude-code\"\nmodel = \"claude-sonnet-4-5\"\napi_key_env = \"DESKBOT_TEST_CLAUDE_KEY\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DESKBOT_TEST_CLAUDE_KEY", "sk-ant-e2e")
	s := mustStart(t, map[string]string{"DESKS_FILE": desks, "CLAUDE_BIN": bin, "SANDBOX": "none", "MODEL_TIMEOUT": "20s"})
	if s.main.ClaudeCode.MCP == nil {
		t.Fatal("no MCP server for a Claude Code desk")
	}

	s.tg.InjectText(asha, groupID, "/tell main flatten everything", 0)
	held := s.mustBotMessage(t, "held call with buttons", func(m telegramtest.Message) bool {
		return len(m.Keyboard) > 0 && strings.Contains(m.Plain, "flatten_desk")
	})
	if got, want := held.Labels(), []string{"Allow once", "Always allow", "Deny", "Why?"}; !slices.Equal(got, want) {
		t.Fatalf("buttons = %v, want %v", got, want)
	}
	s.tg.InjectCallback(asha, groupID, held.ID, button(t, held, "Allow once"))
	s.mustBotMessage(t, "the desk's words after the allow", func(m telegramtest.Message) bool {
		return strings.Contains(m.Plain, "Desk is flat now.")
	})
	// The words a desk ends a turn with after a hold are kept in its
	// history, not posted: the request already speaks for it.
	for _, m := range s.tg.BotMessages(groupID) {
		if strings.Contains(m.Plain, "Asked the team to allow flatten_desk.") {
			t.Errorf("the text after the hold was posted: %q", m.Plain)
		}
	}

	var second struct {
		Flags map[string]string `json:"flags"`
		Stdin string            `json:"stdin"`
	}
	b, err := os.ReadFile(bin + ".script.json.run2.json")
	if err == nil {
		err = json.Unmarshal(b, &second)
	}
	if err != nil {
		t.Fatal(err)
	}
	if second.Flags["--resume"] != "0000-session-1" || !strings.Contains(second.Stdin, "The user allowed flatten_desk") {
		t.Errorf("second turn: --resume %q, prompt %q", second.Flags["--resume"], second.Stdin)
	}
	trail, err := s.main.Store.AuditTrail(t.Context(), 50)
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, e := range trail {
		if e.Action == "ran" || e.Action == "failed" {
			ran++
		}
	}
	if ran != 1 {
		t.Errorf("the held call ran %d times, want 1", ran)
	}
}

// The MCP endpoint listens on the host's loopback, which a desk's sandbox
// cannot reach: neither as 127.0.0.1 (its own loopback) nor through the
// network helper's gateway. The same command on the host does reach it.
func TestSandboxCannotReachTheMCPEndpoint(t *testing.T) {
	dir := t.TempDir()
	desks := filepath.Join(dir, "desks.toml")
	if err := os.WriteFile(desks, []byte("[[desk]]\nname = \"main\"\n[[desk.model]]\nprovider = \"claude-code\"\nmodel = \"m\"\napi_key_env = \"DESKBOT_TEST_CLAUDE_KEY\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DESKBOT_TEST_CLAUDE_KEY", "sk-ant-e2e")
	s := mustStart(t, map[string]string{"DESKS_FILE": desks, "CLAUDE_BIN": configtest.ClaudeVersion(t, claudecode.MinVersion+" (Claude Code)"), "SANDBOX": "auto"})
	if mode := s.main.Sandbox.Mode(); mode != "bwrap" {
		t.Skipf("sandbox mode %s: bubblewrap is not usable here", mode)
	}
	turn, err := s.main.ClaudeCode.MCP.Open("main", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer turn.Close()
	_, port, _ := strings.Cut(s.main.ClaudeCode.MCP.Addr(), ":")
	probe := "for h in 127.0.0.1 10.0.2.2; do if timeout 3 bash -c \"echo >/dev/tcp/$h/" + port + "\" 2>/dev/null; then echo REACHED $h; else echo REFUSED $h; fi; done"

	host, err := exec.Command("bash", "-c", probe).Output()
	if err != nil || !strings.Contains(string(host), "REACHED 127.0.0.1") {
		t.Fatalf("the probe does not reach the endpoint from the host: %q, %v", host, err)
	}
	for _, tool := range s.main.Sandbox.Tools("main") {
		if tool.Name() != "bash" {
			continue
		}
		args, _ := json.Marshal(map[string]string{"command": probe})
		res, err := tool.Run(t.Context(), "main", args)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("from the sandbox: %s", res.Text)
		if strings.Contains(res.Text, "REACHED") || !strings.Contains(res.Text, "REFUSED 127.0.0.1") {
			t.Errorf("from the sandbox: %q", res.Text)
		}
		return
	}
	t.Fatal("no bash tool")
}

// The service does not start desks on a Claude Code CLI older than the
// oldest deskbot runs, or one that does not run: it says which version it
// found and how to install the one it needs.
func TestRunRefusesAnOldClaudeCode(t *testing.T) {
	dir := t.TempDir()
	desks := filepath.Join(dir, "desks.toml")
	if err := os.WriteFile(desks, []byte("[[desk]]\nname = \"main\"\n[[desk.model]]\nprovider = \"claude-code\"\nmodel = \"claude-sonnet-4-5\"\napi_key_env = \"DESKBOT_TEST_CLAUDE_KEY\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DESKBOT_TEST_CLAUDE_KEY", "sk-ant-e2e")
	for _, tc := range []struct {
		name string
		bin  string
		want []string
	}{
		{"no --system-prompt-snapshot", configtest.ClaudeVersion(t, "2.1.197 (Claude Code)"), []string{"is Claude Code 2.1.197, older than " + claudecode.MinVersion}},
		{"loses the first prompt", configtest.ClaudeVersion(t, "2.1.257 (Claude Code)"), []string{"is Claude Code 2.1.257, older than " + claudecode.MinVersion}},
		{"missing", filepath.Join(dir, "nope"), []string{"cannot run Claude Code"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := configtest.GoodEnv(t)
			env["DESKS_FILE"], env["CLAUDE_BIN"] = desks, tc.bin
			cfg, err := config.Load(env)
			if err != nil {
				t.Fatal(err)
			}
			m := &Main{Config: cfg, Log: slog.New(slog.DiscardHandler)}
			defer m.Close()
			err = m.Run(t.Context())
			if err == nil {
				t.Fatal("Run started desks on the CLI")
			}
			for _, want := range append(tc.want, "desk main", "CLAUDE_BIN="+tc.bin, claudecode.Install, claudecode.Node) {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Run: %v; want it to hold %q", err, want)
				}
			}
		})
	}
}
