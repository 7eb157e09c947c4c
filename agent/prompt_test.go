package agent_test

import (
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/agent"
)

func TestSystemPrompt(t *testing.T) {
	spec := func(names ...string) []deskbot.ToolSpec {
		var out []deskbot.ToolSpec
		for _, n := range names {
			out = append(out, deskbot.ToolSpec{Name: n, Description: "does " + n + ".\nMore detail."})
		}
		return out
	}
	// 23:50 UTC on Sunday is already Monday in India.
	now := time.Date(2026, 12, 6, 23, 50, 0, 0, time.UTC)
	tests := []struct {
		name    string
		desk    agent.DeskConfig
		tools   []deskbot.ToolSpec
		want    []string
		notWant []string
	}{
		{"trader", agent.DeskConfig{Name: "main", Prompt: "Trade banks only."}, spec("bash", "place_order", "send_message"),
			[]string{`"main"`, "Monday 7 December 2026, 05:20 India time", "- place_order: does place_order.", "needs the user's permission", "Never retry it",
				"- Orders live at the broker: place_order returns the order's id and state, and fills arrive later as messages, so never place an order again to see it fill.\n",
				"Your brief from the team:\nTrade banks only."},
			[]string{"More detail.", "get_orders", "cancel_order", "get_positions"}},
		{"every broker tool", agent.DeskConfig{Name: "fno"}, spec("get_positions", "place_order", "get_orders", "cancel_order", "flatten_desk"),
			[]string{"- Orders live at the broker: place_order returns the order's id and state, and fills arrive later as messages, so never place an order again to see it fill. " +
				"get_orders shows this desk's orders today. cancel_order cancels one of its open orders. Check your positions with get_positions before acting on them.\n"},
			nil},
		{"researcher", agent.DeskConfig{Name: "research"}, spec("bash"),
			[]string{"- bash: does bash.", "own folder"},
			[]string{"broker", "send_message", "Your brief"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := agent.SystemPrompt(tt.desk, tt.tools, now)
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("prompt lacks %q:\n%s", w, got)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(got, w) {
					t.Errorf("prompt has %q:\n%s", w, got)
				}
			}
		})
	}
}
