// Package configtest holds what tests of the configuration and of the
// whole service share: the least configuration Load accepts, a desks file,
// a fake Bot API and model list that `deskbot check` passes, and the
// reading of check's table. It never imports package config, so that
// config's own tests can use it.
package configtest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/deskbot/deskbot/deskbottest"
)

const (
	// Token is the tests' bot token: no output or log may carry it.
	Token = "123456:TEST-token-never-shown"
	// GroupID is the tests' team group.
	GroupID = int64(-1001234567890)
)

// Absent, as a wanted check line, says the line must not be there.
const Absent = "(absent)"

// MinimalEnv is the least config.Load accepts.
func MinimalEnv() map[string]string {
	return map[string]string{
		"TELEGRAM_TOKEN": Token, "TELEGRAM_CHAT_ID": "-1001", "TELEGRAM_APPROVERS": "101",
	}
}

// DesksFile writes body as a desks file (DESKS_FILE) and returns its path.
func DesksFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "desks.toml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// FakeBotAPI answers getMe and getChatMember the way Telegram does.
type FakeBotAPI struct {
	Token        string
	MemberStatus string // "" answers "chat not found"
	// Forum makes the chat a forum supergroup; CanManageTopics is the bot's right there.
	Forum, CanManageTopics bool
	// CanPin is the bot's right to pin messages (can_pin_messages).
	CanPin bool
}

func (f *FakeBotAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	method, ok := strings.CutPrefix(r.URL.Path, "/bot"+f.Token+"/")
	if !ok {
		fmt.Fprint(w, `{"ok":false,"error_code":401,"description":"Unauthorized"}`)
		return
	}
	switch method {
	case "getMe":
		fmt.Fprint(w, `{"ok":true,"result":{"id":4242,"is_bot":true,"first_name":"Desk","username":"desk_bot"}}`)
	case "getChatMember":
		if f.MemberStatus == "" {
			fmt.Fprint(w, `{"ok":false,"error_code":400,"description":"Bad Request: chat not found"}`)
			return
		}
		fmt.Fprintf(w, `{"ok":true,"result":{"status":%q,"user":{"id":4242,"is_bot":true,"first_name":"Desk"},"can_manage_topics":%v,"can_pin_messages":%v}}`, f.MemberStatus, f.CanManageTopics, f.CanPin)
	case "getChat":
		fmt.Fprintf(w, `{"ok":true,"result":{"id":-1001234567890,"type":"supergroup","title":"Desk team","is_forum":%v}}`, f.Forum)
	default:
		fmt.Fprint(w, `{"ok":false,"error_code":404,"description":"Not Found"}`)
	}
}

// FakeModels serves GET /v1/models with the given ids, or status.
func FakeModels(t *testing.T, status int, ids ...string) string {
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

// GoodEnv is a configuration every check passes (warnings aside).
func GoodEnv(t *testing.T) map[string]string {
	t.Helper()
	tg := httptest.NewServer(&FakeBotAPI{Token: Token, MemberStatus: "administrator"})
	t.Cleanup(tg.Close)
	dataDir := deskbottest.DataDir(t)
	return map[string]string{
		"TELEGRAM_TOKEN": Token, "TELEGRAM_API_URL": tg.URL, "TELEGRAM_CHAT_ID": fmt.Sprint(GroupID),
		"TELEGRAM_APPROVERS": "101", "DATA_DIR": dataDir, "HTTP_ADDR": "127.0.0.1:0",
		"MODEL_BASE_URL": FakeModels(t, 200, "qwen3:latest", "llama3"), "SANDBOX": "none",
		"PATH": os.Getenv("PATH"),
	}
}

// EnvFile writes dir/.env and arranges for every variable it names to
// be as it was (unset) once the test ends: loading it sets the process's
// environment.
func EnvFile(t *testing.T, dir, body string, names ...string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, ".env"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if _, set := os.LookupEnv(n); set {
			continue // the test set it: t.Setenv restores it
		}
		t.Setenv(n, "")
		os.Unsetenv(n)
	}
}

// ClaudeVersion is a Claude Code CLI that only answers --version, with
// version.
func ClaudeVersion(t *testing.T, version string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "claude")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n[ \"$1\" = --version ] && echo '"+version+"'\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	return bin
}

// LineRE is one line of check's table: its name, status and detail.
var LineRE = regexp.MustCompile(`(?m)^(\S[^\n]*?)\s{2,}(ok|warn|FAIL)\s{2,}(.*)$`)

// Check is `deskbot check` as config.RunCheck runs it.
type Check func(ctx context.Context, envFile string, environ map[string]string, w io.Writer) int

// CheckOut runs the check and returns its exit status, output and the
// status of each line by check name.
func CheckOut(t *testing.T, run Check, env map[string]string) (int, string, map[string]string) {
	t.Helper()
	var b strings.Builder
	code := run(t.Context(), "", env, &b)
	out := b.String()
	if strings.Contains(out, Token) {
		t.Errorf("check printed the token:\n%s", out)
	}
	lines := map[string]string{}
	for _, m := range LineRE.FindAllStringSubmatch(out, -1) {
		lines[m[1]] = m[2] + " " + m[3]
	}
	return code, out, lines
}
