package claudecode

import (
	"strings"
	"testing"

	"github.com/deskbot/deskbot/agent"
)

// A trigger never reaches the CLI as one of its slash commands.
func TestPromptIsNeverACommand(t *testing.T) {
	for _, trigger := range []string{"/config set x", "  /compact", "[10:30 India time] Message from Asha:\nhi"} {
		if got := prompt(agent.TurnRequest{Trigger: trigger}); strings.HasPrefix(strings.TrimSpace(got), "/") || !strings.Contains(got, strings.TrimSpace(trigger)) {
			t.Errorf("prompt(%q) = %q", trigger, got)
		}
	}
}
