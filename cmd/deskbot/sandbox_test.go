package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/config"
	"github.com/deskbot/deskbot/config/configtest"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/model/modeltest"
	"github.com/deskbot/deskbot/store/storetest"
)

// With SANDBOX=auto and no usable bubblewrap, desks have no terminal: the
// model's tools say so, a bash call answers with the reason instead of
// running, and the chat is told, once: not again at the next start.
func TestNoTerminalWithoutBwrap(t *testing.T) {
	deskbottest.BashWithoutBwrap(t)
	storetest.MustOpen(t)
	prefix := storetest.RandomPrefix()

	var mu sync.Mutex
	var description, result string
	handler := func(r modeltest.Request) modeltest.Reply {
		mu.Lock()
		defer mu.Unlock()
		for _, tl := range r.Body["tools"].([]any) {
			if f, _ := tl.(map[string]any)["function"].(map[string]any); f["name"] == "bash" {
				description, _ = f["description"].(string)
			}
		}
		if last := r.Last(); last.Role == "tool" {
			result = last.Text
			return modeltest.Text("ok")
		}
		return modeltest.Calls(modeltest.ToolCall{Name: "bash", Arguments: `{"command":"tr '\\0' '\\n' </proc/$PPID/environ"}`})
	}
	told := func(m telegramtest.Message) bool { return strings.Contains(m.Plain, "Desks have no terminal") }

	first := mustStart(t, map[string]string{"SANDBOX": "auto", "REDIS_PREFIX": prefix})
	first.model.SetHandler(handler)
	warning := first.mustBotMessage(t, "the chat told that desks have no terminal", told)
	if !strings.Contains(warning.Plain, "bubblewrap") {
		t.Errorf("the warning does not say what to install: %q", warning.Plain)
	}
	first.tg.InjectText(asha, groupID, "/tell main look around", 0)
	first.tg.WaitFor(t, 15*time.Second, func(*telegramtest.Server) bool {
		mu.Lock()
		defer mu.Unlock()
		return result != ""
	})
	mu.Lock()
	if !strings.HasPrefix(description, "UNAVAILABLE") {
		t.Errorf("the bash tool's description: %q, want it to say the terminal is unavailable", description)
	}
	if !strings.Contains(result, "no terminal") || strings.Contains(result, testToken) {
		t.Errorf("the bash call answered %q, want the reason and nothing else", result)
	}
	mu.Unlock()
	if err := first.main.Close(); err != nil {
		t.Fatal(err)
	}

	// The next start on the same Redis: a held call's message is the later
	// event that shows the warning was not queued again before it.
	second := mustStart(t, map[string]string{"SANDBOX": "auto", "REDIS_PREFIX": prefix, "APPROVAL_TOOLS": "bash"})
	second.model.SetHandler(handler)
	second.tg.InjectText(asha, groupID, "/tell main look around again", 0)
	second.mustBotMessage(t, "the held bash call", func(m telegramtest.Message) bool { return len(m.Keyboard) > 0 })
	for _, m := range second.tg.BotMessages(groupID) {
		if told(m) {
			t.Errorf("the chat was told again at the next start: %q", m.Plain)
		}
	}
}

// `deskbot check` reports the desks' network: ok through slirp4netns, and a
// warning naming the package where it is missing.
func TestCheckDesksNetwork(t *testing.T) {
	bin := t.TempDir()
	for _, name := range []string{"bash", "bwrap"} {
		p, err := exec.LookPath(name)
		if err != nil {
			if os.Getenv("DESKBOT_REQUIRE_BWRAP") == "1" {
				t.Fatalf("%s required but missing", name)
			}
			t.Skipf("%s is not installed (Debian package bubblewrap)", name)
		}
		if err := os.Symlink(p, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	env := configtest.GoodEnv(t)
	env["SANDBOX"] = "bwrap"
	if _, out, lines := configtest.CheckOut(t, config.RunCheck, env); !strings.HasPrefix(lines["sandbox"], "ok") || lines["network"] == "" {
		t.Fatalf("sandbox %q, network %q:\n%s", lines["sandbox"], lines["network"], out)
	}
	t.Setenv("PATH", bin) // bash and bwrap, no slirp4netns
	code, out, lines := configtest.CheckOut(t, config.RunCheck, env)
	if code != 0 || !strings.HasPrefix(lines["network"], "warn") || !strings.Contains(lines["network"], "Debian package slirp4netns") {
		t.Errorf("without slirp4netns: exit %d, network %q; want 0 and a warning naming the package:\n%s", code, lines["network"], out)
	}
}
