package claudecode_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/model/modeltest"
)

// With DESKBOT_REAL_CLAUDE naming the real Claude Code CLI, a turn runs on
// it against a fake Anthropic API (model/modeltest): the CLI connects to
// the desk's MCP server, is offered the desk's tools and calls one through
// the executor. Anthropic's API cannot be reached here, and no other test
// depends on the real CLI.
func TestRealCLI(t *testing.T) {
	bin := os.Getenv("DESKBOT_REAL_CLAUDE")
	if bin == "" {
		t.Skip("DESKBOT_REAL_CLAUDE is not set")
	}
	w := newWorld(t)
	w.bin = bin
	api := modeltest.New(t)
	w.baseURL = api.URL
	var offered []string
	api.SetHandler(func(r modeltest.Request) modeltest.Reply {
		if !slices.Contains(r.Tools(), "mcp__deskbot__get_quote") {
			return modeltest.Text("ok") // the CLI's own side requests
		}
		offered = r.Tools()
		if last := r.Last(); last.Role == "user" && strings.Contains(last.Text, "And INFY?") {
			return modeltest.Text("Resumed with " + strings.Join(texts(r), " | "))
		}
		if len(r.ToolResults()) > 0 {
			return modeltest.Text("TCS quoted by the real CLI: " + r.ToolResults()[0].Text)
		}
		return modeltest.Calls(modeltest.ToolCall{Name: "mcp__deskbot__get_quote", Arguments: `{"symbol":"TCS"}`})
	})
	w.start(t)
	w.tell(t, "Quote TCS.")
	msg := w.waitMessage(t, "TCS quoted by the real CLI")
	if !strings.Contains(msg.Text, "quote #1") || w.quotes.runs() != 1 {
		t.Errorf("message %q, get_quote ran %d times", msg.Text, w.quotes.runs())
	}
	calls := w.ofKind(deskbot.EventToolCall)
	if len(calls) != 1 || calls[0].Call.Name != "get_quote" {
		t.Errorf("tool_call events = %+v", calls)
	}
	t.Logf("tools offered to the model: %v", offered)

	// The next turn resumes the same Claude session: the API is shown the
	// first turn's conversation.
	w.tell(t, "And INFY?")
	msg = w.waitMessage(t, "Resumed with")
	if !strings.Contains(msg.Text, "Quote TCS.") {
		t.Errorf("the second turn did not carry the first: %q", msg.Text)
	}
}

func texts(r modeltest.Request) []string {
	var out []string
	for _, m := range r.Messages() {
		if m.Role == "user" {
			out = append(out, m.Text)
		}
	}
	return out
}
