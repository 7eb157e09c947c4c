package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/deskbot/deskbot/claudecode"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/store/storetest"
)

// absent, as a wanted check line, says the line must not be there.
const absent = "(absent)"

// fakeBotAPI answers getMe and getChatMember the way Telegram does.
type fakeBotAPI struct {
	token        string
	memberStatus string // "" answers "chat not found"
	// forum makes the chat a forum supergroup; canManageTopics is the bot's right there.
	forum, canManageTopics bool
	// canPin is the bot's right to pin messages (can_pin_messages).
	canPin bool
}

func (f *fakeBotAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	method, ok := strings.CutPrefix(r.URL.Path, "/bot"+f.token+"/")
	if !ok {
		fmt.Fprint(w, `{"ok":false,"error_code":401,"description":"Unauthorized"}`)
		return
	}
	switch method {
	case "getMe":
		fmt.Fprint(w, `{"ok":true,"result":{"id":4242,"is_bot":true,"first_name":"Desk","username":"desk_bot"}}`)
	case "getChatMember":
		if f.memberStatus == "" {
			fmt.Fprint(w, `{"ok":false,"error_code":400,"description":"Bad Request: chat not found"}`)
			return
		}
		fmt.Fprintf(w, `{"ok":true,"result":{"status":%q,"user":{"id":4242,"is_bot":true,"first_name":"Desk"},"can_manage_topics":%v,"can_pin_messages":%v}}`, f.memberStatus, f.canManageTopics, f.canPin)
	case "getChat":
		fmt.Fprintf(w, `{"ok":true,"result":{"id":-1001234567890,"type":"supergroup","title":"Desk team","is_forum":%v}}`, f.forum)
	default:
		fmt.Fprint(w, `{"ok":false,"error_code":404,"description":"Not Found"}`)
	}
}

// fakeModels serves GET /v1/models with the given ids, or status.
func fakeModels(t *testing.T, status int, ids ...string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/models" {
			http.NotFound(w, r)
			return
		}
		if status != 200 {
			w.WriteHeader(status)
			return
		}
		var data []string
		for _, id := range ids {
			data = append(data, fmt.Sprintf(`{"id":%q,"object":"model"}`, id))
		}
		fmt.Fprintf(w, `{"object":"list","data":[%s]}`, strings.Join(data, ","))
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// goodEnv is a configuration every check passes (warnings aside).
func goodEnv(t *testing.T) map[string]string {
	t.Helper()
	tg := httptest.NewServer(&fakeBotAPI{token: testToken, memberStatus: "administrator"})
	t.Cleanup(tg.Close)
	dataDir := deskbottest.DataDir(t)
	return map[string]string{
		"TELEGRAM_TOKEN": testToken, "TELEGRAM_API_URL": tg.URL, "TELEGRAM_CHAT_ID": fmt.Sprint(groupID),
		"TELEGRAM_APPROVERS": "101", "DATA_DIR": dataDir, "HTTP_ADDR": "127.0.0.1:0",
		"MODEL_BASE_URL": fakeModels(t, 200, "qwen3:latest", "llama3"), "SANDBOX": "none",
		"PATH": os.Getenv("PATH"),
	}
}

var lineRE = regexp.MustCompile(`(?m)^(\S[^\n]*?)\s{2,}(ok|warn|FAIL)\s{2,}(.*)$`)

// checkOut runs the check and returns its exit status, output and the
// status of each line by check name.
func checkOut(t *testing.T, env map[string]string) (int, string, map[string]string) {
	t.Helper()
	var b strings.Builder
	code := runCheck(t.Context(), "", env, &b)
	out := b.String()
	if strings.Contains(out, testToken) {
		t.Errorf("check printed the token:\n%s", out)
	}
	lines := map[string]string{}
	for _, m := range lineRE.FindAllStringSubmatch(out, -1) {
		lines[m[1]] = m[2] + " " + m[3]
	}
	return code, out, lines
}

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
		s := httptest.NewServer(&fakeBotAPI{token: testToken, memberStatus: status})
		t.Cleanup(s.Close)
		return s.URL
	}
	forum := func(status string, canManage bool) string {
		s := httptest.NewServer(&fakeBotAPI{token: testToken, memberStatus: status, forum: true, canManageTopics: canManage})
		t.Cleanup(s.Close)
		return s.URL
	}
	wrongToken := httptest.NewServer(&fakeBotAPI{token: "999:other"})
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
		{"audit retention not positive", map[string]string{"AUDIT_RETENTION": "0s"}, 1, map[string]string{
			"AUDIT_RETENTION": "FAIL must be a positive duration",
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
			"telegram chat": "ok", "telegram topics": absent,
		}},
		{"model server down", map[string]string{"MODEL_BASE_URL": "http://" + deskbottest.RefusedAddr(t) + "/v1"}, 1, map[string]string{
			"model openai:qwen3": "FAIL no answer",
		}},
		{"model key refused", map[string]string{"MODEL_BASE_URL": fakeModels(t, 401)}, 1, map[string]string{
			"model openai:qwen3": "FAIL 127.0.0.1",
		}},
		{"model not served", map[string]string{"MODEL_NAME": "mistral"}, 0, map[string]string{
			"model openai:mistral": "warn",
		}},
		{"model server error", map[string]string{"MODEL_BASE_URL": fakeModels(t, 503)}, 1, map[string]string{
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
			env := goodEnv(t)
			for k, v := range tt.env {
				if v == "" {
					delete(env, k)
				} else {
					env[k] = v
				}
			}
			code, out, lines := checkOut(t, env)
			if code != tt.wantCode {
				t.Errorf("exit status %d, want %d", code, tt.wantCode)
			}
			for name, want := range tt.want {
				if got, ok := lines[name]; want == absent && ok {
					t.Errorf("%s: %q, want no such line", name, got)
				} else if want != absent && !strings.HasPrefix(lines[name], want) {
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
	env := goodEnv(t)
	for k, v := range storetest.Env() { // REDIS_URL, or a Cluster's nodes
		env[k] = v
	}
	code, out, lines := checkOut(t, env)
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
	if _, out, lines := checkOut(t, env); lines["redis auth"] != "" {
		t.Errorf("warned about Redis auth with the sandbox network off:\n%s", out)
	}
}

// Where bubblewrap cannot run, the check fails: with SANDBOX=bwrap the
// service would refuse to start; with SANDBOX=auto desks would have no
// terminal, and the line names the fix.
func TestCheckSandboxBwrapUnusable(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	bin := t.TempDir()
	if err := os.Symlink(bash, filepath.Join(bin, "bash")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin) // bash but no bwrap
	env := goodEnv(t)
	env["SANDBOX"] = "bwrap"
	code, out, lines := checkOut(t, env)
	if code != 1 || !strings.HasPrefix(lines["sandbox"], "FAIL") {
		t.Errorf("exit %d, sandbox %q; want 1 and FAIL:\n%s", code, lines["sandbox"], out)
	}
	env["SANDBOX"] = "auto"
	if code, out, lines := checkOut(t, env); code != 1 || !strings.HasPrefix(lines["sandbox"], "FAIL") ||
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
	claude, old := fakeClaudeVersion(t, claudecode.MinVersion+" (Claude Code)"), fakeClaudeVersion(t, "2.1.197 (Claude Code)")
	for _, tc := range []struct {
		name, bin string
		want      []string // the line's start, then what else it holds
	}{
		{"installed", claude, []string{"ok Claude Code " + claudecode.MinVersion + " (Claude Code) (CLAUDE_BIN=" + claude + "; " + claudecode.MinVersion + " or newer needed)"}},
		{"too old", old, []string{"FAIL CLAUDE_BIN=" + old + ": " + old + " is Claude Code 2.1.197, older than " + claudecode.MinVersion, claudecode.Install, claudecode.Node}},
		{"missing", filepath.Join(dir, "nope"), []string{"FAIL CLAUDE_BIN=" + filepath.Join(dir, "nope") + ": cannot run Claude Code", claudecode.Install}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := goodEnv(t)
			env["DESKS_FILE"], env["CLAUDE_BIN"] = desks, tc.bin
			_, out, lines := checkOut(t, env)
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

// fakeClaudeVersion is a CLI that only answers --version, with version.
func fakeClaudeVersion(t *testing.T, version string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "claude")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n[ \"$1\" = --version ] && echo '"+version+"'\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	return bin
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
			env := goodEnv(t)
			env["DATA_DIR"] = tt.dir
			code, out, lines := checkOut(t, env)
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
