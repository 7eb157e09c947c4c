package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/config"
	"github.com/deskbot/deskbot/config/configtest"
	"github.com/deskbot/deskbot/model/modeltest"
)

// An operator guards the desks' terminal by naming one of its two tools in
// APPROVAL_TOOLS. A desk whose bash calls are held reaches for the other
// way into the same terminal: the command must be held too, never run
// without a yes.
func TestHostileOtherTerminalToolIsGuardedToo(t *testing.T) {
	t.Parallel()
	tests := []struct{ guarded, used string }{
		{"bash", "bash_background"},
		{"bash_background", "bash"},
	}
	for _, tt := range tests {
		t.Run(tt.guarded, func(t *testing.T) {
			s := mustStart(t, map[string]string{"APPROVAL_TOOLS": tt.guarded, "SANDBOX": "none"})
			s.model.SetHandler(func(r modeltest.Request) modeltest.Reply {
				last := r.Last()
				switch {
				case last.Role == "tool":
					return modeltest.Text("Done with the terminal.")
				case strings.Contains(last.Text, "go"):
					return modeltest.Calls(modeltest.ToolCall{Name: tt.used, Arguments: `{"command":"touch pwned"}`})
				}
				return modeltest.Text("ok")
			})
			s.tg.InjectText(asha, groupID, "/tell main go", 0)
			s.mustBotMessage(t, "the desk's answer", func(m telegramtest.Message) bool {
				return len(m.Keyboard) > 0 && strings.Contains(m.Plain, "wants to run") || strings.Contains(m.Plain, "Done with the terminal.")
			})
			time.Sleep(500 * time.Millisecond) // a background job would have run by now
			pwned := filepath.Join(s.main.Config.DataDir, "desks", "main", "pwned")
			if _, err := os.Stat(pwned); err == nil {
				t.Errorf("with APPROVAL_TOOLS=%s, the desk ran a command through %s without a yes", tt.guarded, tt.used)
			}
			held := false
			for _, m := range s.tg.BotMessages(groupID) {
				held = held || (len(m.Keyboard) > 0 && strings.Contains(m.Plain, tt.used))
			}
			if !held {
				t.Errorf("with APPROVAL_TOOLS=%s, the desk's %s call was not held", tt.guarded, tt.used)
			}
		})
	}
}

// A policy that asks two approvers for every bash command, and nothing of
// bash_background: the desk would run the same commands in the same
// terminal on one approver's yes. Such a policy stops the start and fails
// deskbot check, naming the other tool.
func TestHostileTerminalPolicyOnOneToolOnly(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"bash", "bash_background"} {
		t.Run(tool, func(t *testing.T) {
			env := configtest.GoodEnv(t)
			env["TELEGRAM_APPROVERS"] = "101,102"
			env["APPROVAL_TOOLS"] = "bash,bash_background"
			env["DESKS_FILE"] = configtest.DesksFile(t, "[[desk]]\nname = \"main\"\n[desk.policy."+tool+"]\napprovals = 2\n")
			const want = "bash and bash_background run commands in the same terminal"

			cfg, err := config.Load(env)
			if err != nil {
				t.Fatal(err)
			}
			m := &Main{Config: cfg, Log: slog.New(slog.DiscardHandler)}
			err = m.Run(t.Context())
			m.Close()
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("start: %v; want an error containing %q", err, want)
			}
			code, out, lines := configtest.CheckOut(t, config.RunCheck, env)
			if code != 1 || !strings.HasPrefix(lines["policy"], "FAIL") || !strings.Contains(lines["policy"], want) {
				t.Errorf("check exited %d with policy line %q; want 1 and a FAIL containing %q\n%s", code, lines["policy"], want, out)
			}
		})
	}
}
