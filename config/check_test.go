package config

import (
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deskbot/deskbot/claudecode"
	"github.com/deskbot/deskbot/config/configtest"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/store/storetest"
)

func TestCheck(t *testing.T) {
	notWritable := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notWritable, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	tgWith := func(status string) string {
		s := httptest.NewServer(&configtest.FakeBotAPI{Token: configtest.Token, MemberStatus: status})
		t.Cleanup(s.Close)
		return s.URL
	}
	forum := func(status string, canManage bool) string {
		s := httptest.NewServer(&configtest.FakeBotAPI{Token: configtest.Token, MemberStatus: status, Forum: true, CanManageTopics: canManage})
		t.Cleanup(s.Close)
		return s.URL
	}
	wrongToken := httptest.NewServer(&configtest.FakeBotAPI{Token: "999:other"})
	t.Cleanup(wrongToken.Close)

	tests := []struct {
		name     string
		env      map[string]string // changes to goodEnv; "" deletes
		wantCode int
		want     map[string]string // check name -> prefix of "status detail"
	}{
		{"all good", nil, 0, map[string]string{
			"configuration": "ok", "telegram": "ok token valid: the bot is @desk_bot", "telegram chat": "ok",
			"model openai:qwen3": "ok", "DATA_DIR": "ok", "HTTP_ADDR": "ok", "redis": "warn REDIS_URL not set",
		}},
		{"missing variables", map[string]string{"TELEGRAM_TOKEN": "", "TELEGRAM_APPROVERS": ""}, 1, map[string]string{
			"TELEGRAM_TOKEN": "FAIL required", "TELEGRAM_APPROVERS": "FAIL required",
		}},
		{"bad values", map[string]string{"APPROVAL_EXPIRY": "soon", "SANDBOX": "docker"}, 1, map[string]string{
			"APPROVAL_EXPIRY": "FAIL not a valid duration", "SANDBOX": "FAIL must be auto, bwrap or none",
		}},
		{"audit keep not positive", map[string]string{"AUDIT_KEEP": "0"}, 1, map[string]string{
			"AUDIT_KEEP": "FAIL must be a whole number of days",
		}},
		{"audit keep not days", map[string]string{"AUDIT_KEEP": "90d"}, 1, map[string]string{
			"AUDIT_KEEP": "FAIL",
		}},
		{"the earlier audit retention", map[string]string{"AUDIT_RETENTION": "2160h"}, 1, map[string]string{
			"AUDIT_RETENTION": "FAIL is now AUDIT_KEEP",
		}},
		{"telegram unreachable", map[string]string{"TELEGRAM_API_URL": "http://" + deskbottest.RefusedAddr(t)}, 1, map[string]string{
			"telegram": "FAIL cannot reach",
		}},
		{"token refused", map[string]string{"TELEGRAM_API_URL": wrongToken.URL}, 1, map[string]string{
			"telegram": "FAIL TELEGRAM_TOKEN refused (401",
		}},
		{"bot not in the group", map[string]string{"TELEGRAM_API_URL": tgWith("left")}, 1, map[string]string{
			"telegram": "ok", "telegram chat": "FAIL the bot is not a member",
		}},
		{"wrong chat id", map[string]string{"TELEGRAM_API_URL": tgWith("")}, 1, map[string]string{
			"telegram chat": "FAIL chat -1001234567890: Bad Request: chat not found",
		}},
		{"topics without a forum", map[string]string{"TELEGRAM_TOPICS": "true"}, 0, map[string]string{
			"telegram chat": "ok", "telegram topics": "warn TELEGRAM_TOPICS is on, but chat -1001234567890 has no topics",
		}},
		{"topics without the right", map[string]string{"TELEGRAM_TOPICS": "true", "TELEGRAM_API_URL": forum("administrator", false)}, 0, map[string]string{
			"telegram topics": "warn TELEGRAM_TOPICS is on, but the bot may not manage topics",
		}},
		{"topics as a plain member", map[string]string{"TELEGRAM_TOPICS": "true", "TELEGRAM_API_URL": forum("member", false)}, 0, map[string]string{
			"telegram topics": "warn TELEGRAM_TOPICS is on, but the bot may not manage topics",
		}},
		{"topics with the right", map[string]string{"TELEGRAM_TOPICS": "true", "TELEGRAM_API_URL": forum("administrator", true)}, 0, map[string]string{
			"telegram topics": "ok the bot may create a topic per desk",
		}},
		{"topics off are not checked", map[string]string{"TELEGRAM_API_URL": forum("member", false)}, 0, map[string]string{
			"telegram chat": "ok", "telegram topics": configtest.Absent,
		}},
		{"model server down", map[string]string{"MODEL_BASE_URL": "http://" + deskbottest.RefusedAddr(t) + "/v1"}, 1, map[string]string{
			"model openai:qwen3": "FAIL no answer",
		}},
		{"model key refused", map[string]string{"MODEL_BASE_URL": configtest.FakeModels(t, 401)}, 1, map[string]string{
			"model openai:qwen3": "FAIL 127.0.0.1",
		}},
		{"model not served", map[string]string{"MODEL_NAME": "mistral"}, 0, map[string]string{
			"model openai:mistral": "warn",
		}},
		{"model server error", map[string]string{"MODEL_BASE_URL": configtest.FakeModels(t, 503)}, 1, map[string]string{
			"model openai:qwen3": "FAIL 127.0.0.1",
		}},
		{"desks file missing", map[string]string{"DESKS_FILE": filepath.Join(t.TempDir(), "nope.toml")}, 1, map[string]string{
			"desks": "FAIL",
		}},
		{"data dir not writable", map[string]string{"DATA_DIR": filepath.Join(notWritable, "sub")}, 1, map[string]string{
			"DATA_DIR": "FAIL cannot create",
		}},
		{"port in use", map[string]string{"HTTP_ADDR": busy.Addr().String()}, 1, map[string]string{
			"HTTP_ADDR": "FAIL cannot listen",
		}},
		{"redis unreachable", map[string]string{"REDIS_URL": "redis://:pw-never-shown@" + deskbottest.RefusedAddr(t)}, 1, map[string]string{
			"redis": "FAIL unreachable",
		}},
		{"approval tool misspelt", map[string]string{"APPROVAL_TOOLS": "place_order, flatten-desk"}, 1, map[string]string{
			"APPROVAL_TOOLS": `FAIL "flatten-desk" is not a tool (tools are bash,`,
		}},
		{"approval tools spaced", map[string]string{"APPROVAL_TOOLS": "flatten_desk, place_order,"}, 0, map[string]string{
			"configuration": "ok",
		}},
		{"secret in the sandbox", map[string]string{"SANDBOX_ENV": "MARKET_DATA_URL,TELEGRAM_TOKEN"}, 1, map[string]string{
			"SANDBOX_ENV": "FAIL TELEGRAM_TOKEN holds a secret",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := configtest.GoodEnv(t)
			for k, v := range tt.env {
				if v == "" {
					delete(env, k)
				} else {
					env[k] = v
				}
			}
			code, out, lines := configtest.CheckOut(t, RunCheck, env)
			if code != tt.wantCode {
				t.Errorf("exit status %d, want %d", code, tt.wantCode)
			}
			for name, want := range tt.want {
				if got, ok := lines[name]; want == configtest.Absent && ok {
					t.Errorf("%s: %q, want no such line", name, got)
				} else if want != configtest.Absent && !strings.HasPrefix(lines[name], want) {
					t.Errorf("%s: %q, want it to start with %q", name, lines[name], want)
				}
			}
			if strings.Contains(out, "pw-never-shown") {
				t.Errorf("check printed the Redis password")
			}
			if t.Failed() {
				t.Logf("output:\n%s", out)
			}
		})
	}
}

// With a real Redis: reachable, its persistence reported, and the warning
// when it takes clients without a password while desks have the network.
func TestCheckRealRedis(t *testing.T) {
	storetest.MustOpen(t)
	env := configtest.GoodEnv(t)
	for k, v := range storetest.Env() { // REDIS_URL, or a Cluster's nodes
		env[k] = v
	}
	code, out, lines := configtest.CheckOut(t, RunCheck, env)
	if code != 0 {
		t.Errorf("exit status %d, want 0:\n%s", code, out)
	}
	if !strings.Contains(lines["redis"], "reachable") {
		t.Errorf("redis: %q", lines["redis"])
	}
	if storetest.Which() != storetest.ClusterConfigured && !strings.Contains(storetest.URL(), "@") && !strings.HasPrefix(lines["redis auth"], "warn") {
		t.Errorf("no warning for a Redis without a password and SANDBOX_NETWORK on:\n%s", out)
	}
	env["SANDBOX_NETWORK"] = "false"
	if _, out, lines := configtest.CheckOut(t, RunCheck, env); lines["redis auth"] != "" {
		t.Errorf("warned about Redis auth with the sandbox network off:\n%s", out)
	}
}

// Where bubblewrap cannot run, the check fails: with SANDBOX=bwrap the
// service would refuse to start; with SANDBOX=auto desks would have no
// terminal, and the line names the fix.
func TestCheckSandboxBwrapUnusable(t *testing.T) {
	deskbottest.BashWithoutBwrap(t)
	env := configtest.GoodEnv(t)
	env["SANDBOX"] = "bwrap"
	code, out, lines := configtest.CheckOut(t, RunCheck, env)
	if code != 1 || !strings.HasPrefix(lines["sandbox"], "FAIL") {
		t.Errorf("exit %d, sandbox %q; want 1 and FAIL:\n%s", code, lines["sandbox"], out)
	}
	env["SANDBOX"] = "auto"
	if code, out, lines := configtest.CheckOut(t, RunCheck, env); code != 1 || !strings.HasPrefix(lines["sandbox"], "FAIL") ||
		!strings.Contains(lines["sandbox"], "Debian package bubblewrap") || !strings.Contains(lines["sandbox"], "SANDBOX=none") {
		t.Errorf("auto without bwrap: exit %d, sandbox %q; want 1 and FAIL naming the fix:\n%s", code, lines["sandbox"], out)
	}
}

// A desk on Claude Code: the check runs the CLI's version check (the API
// itself is not probed) and fails when the CLI cannot run or is older than
// the oldest deskbot runs, naming the version found and the pinned install.
func TestCheckClaudeCode(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-check")
	dir := t.TempDir()
	desks := filepath.Join(dir, "desks.toml")
	if err := os.WriteFile(desks, []byte("[[desk]]\nname = \"planner\"\n[[desk.model]]\nprovider = \"claude-code\"\nmodel = \"claude-sonnet-4-5\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	claude, old := configtest.ClaudeVersion(t, claudecode.MinVersion+" (Claude Code)"), configtest.ClaudeVersion(t, "2.1.197 (Claude Code)")
	for _, tc := range []struct {
		name, bin string
		want      []string // the line's start, then what else it holds
	}{
		{"installed", claude, []string{"ok Claude Code " + claudecode.MinVersion + " (Claude Code) (CLAUDE_BIN=" + claude + "; " + claudecode.MinVersion + " or newer needed)"}},
		{"too old", old, []string{"FAIL CLAUDE_BIN=" + old + ": " + old + " is Claude Code 2.1.197, older than " + claudecode.MinVersion, claudecode.Install, claudecode.Node}},
		{"missing", filepath.Join(dir, "nope"), []string{"FAIL CLAUDE_BIN=" + filepath.Join(dir, "nope") + ": cannot run Claude Code", claudecode.Install}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := configtest.GoodEnv(t)
			env["DESKS_FILE"], env["CLAUDE_BIN"] = desks, tc.bin
			_, out, lines := configtest.CheckOut(t, RunCheck, env)
			got := lines["model claude-code:claude-sonnet-4-5"]
			if !strings.HasPrefix(got, tc.want[0]) {
				t.Errorf("line = %q, want it to start with %q\n%s", got, tc.want[0], out)
			}
			for _, want := range tc.want[1:] {
				if !strings.Contains(got, want) {
					t.Errorf("line = %q, want it to hold %q", got, want)
				}
			}
			if strings.Contains(out, "sk-ant-check") {
				t.Error("check printed the key")
			}
		})
	}
}

// Before the first start DATA_DIR may not exist yet: the start creates it,
// so the check says so and passes (as root too, where desks run as another
// user who must pass through it); it fails only when the start could not
// create it, or would create a folder above it that desks cannot pass.
func TestCheckDataDirNotYetMade(t *testing.T) {
	parent := deskbottest.DataDir(t)
	if err := os.Chmod(parent, 0o711); err != nil { // as deskbottest.DataDir opens its own parent
		t.Fatal(err)
	}
	deep := filepath.Join(parent, "var", "data")
	deepWant := map[string]string{"DATA_DIR": "ok " + deep + " does not exist yet: the start creates it (" + parent + " is writable)", "sandbox": "warn SANDBOX=none"}
	deepCode := 0
	if os.Geteuid() == 0 {
		// The start makes the folders above DATA_DIR private to the
		// service's user, which the desks' user cannot pass.
		deepWant["sandbox"] = "FAIL desks run as uid 65534, which could not pass through " + filepath.Join(parent, "var")
		deepCode = 1
	}
	tests := []struct {
		name     string
		dir      string
		wantCode int
		want     map[string]string
	}{
		{"missing, parent writable", filepath.Join(parent, "data"), 0, map[string]string{
			"DATA_DIR": "ok " + filepath.Join(parent, "data") + " does not exist yet: the start creates it (" + parent + " is writable)",
			"sandbox":  "warn SANDBOX=none",
		}},
		{"missing with a missing parent", deep, deepCode, deepWant},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := configtest.GoodEnv(t)
			env["DATA_DIR"] = tt.dir
			code, out, lines := configtest.CheckOut(t, RunCheck, env)
			if code != tt.wantCode {
				t.Errorf("exit status %d, want %d", code, tt.wantCode)
			}
			for name, want := range tt.want {
				if got := lines[name]; !strings.HasPrefix(got, want) {
					t.Errorf("%s: %q, want it to start with %q", name, got, want)
				}
			}
			if _, err := os.Stat(tt.dir); err == nil {
				t.Errorf("check made %s; only the start may", tt.dir)
			}
			if t.Failed() {
				t.Logf("output:\n%s", out)
			}
		})
	}
}
