package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/model/modeltest"
)

// An operator guards the desks' terminal by naming one of its two tools in
// APPROVAL_TOOLS. A desk whose bash calls are held reaches for the other
// way into the same terminal: the command must be held too, never run
// without a yes.
func TestHostileOtherTerminalToolIsGuardedToo(t *testing.T) {
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
