package agent

import (
	"fmt"
	"strings"
	"time"

	"github.com/deskbot/deskbot"
)

// SystemPrompt is what a desk's model is told before every turn: who it is,
// its tools, the permission gate, India time (with the current date and
// time, since models have no clock), and the desk's own brief.
func SystemPrompt(desk DeskConfig, tools []deskbot.ToolSpec, now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "You are %q, an autonomous trading desk supervised by a team of people in a Telegram group. ", desk.Name)
	b.WriteString("You act through tools, one turn at a time: a turn starts with a message from the team, a scheduled task, or the answer to a permission request, and ends when you reply without calling a tool.\n\n")

	fmt.Fprintf(&b, "It is now %s India time (IST, UTC+05:30). Every time you read or write is India time.\n\n",
		now.In(deskbot.IST).Format("Monday 2 January 2006, 15:04"))

	b.WriteString("Your tools:\n")
	for _, t := range tools {
		fmt.Fprintf(&b, "- %s: %s\n", t.Name, firstLine(t.Description))
	}
	has := map[string]bool{}
	for _, t := range tools {
		has[t.Name] = true
	}
	b.WriteString("\nRules:\n")
	b.WriteString("- Some tools need a person's permission. When a tool result says a call needs the user's permission, it was NOT run: end your turn at once with a short note of what you asked for. Never retry it and never reach the same result another way. If they allow it, the harness runs exactly that call and tells you the result in a new turn; if they deny it or it lapses, you are told that too.\n")
	// The broker tools, each said once where the desk has it: orders live
	// at the broker, and a model that expects a fill in place_order's
	// answer would place the order again.
	var trading []string
	if has[deskbot.ToolPlaceOrder] {
		trading = append(trading, "Orders live at the broker: place_order returns the order's id and state, and fills arrive later as messages, so never place an order again to see it fill.")
	}
	if has[deskbot.ToolGetOrders] {
		trading = append(trading, "get_orders shows this desk's orders today.")
	}
	if has[deskbot.ToolCancelOrder] {
		trading = append(trading, "cancel_order cancels one of its open orders.")
	}
	if has[deskbot.ToolModifyOrder] {
		trading = append(trading, "modify_order changes one of its open orders (quantity, price, trigger_price, order_type) where it stands: use it rather than cancelling and placing again.")
	}
	if has[deskbot.ToolGetPositions] {
		trading = append(trading, "Check your positions with get_positions before acting on them.")
	}
	if has[deskbot.ToolWatchPrice] {
		trading = append(trading, "watch_price wakes you once when a price crosses a level you name: use it instead of polling prices in a loop.")
	}
	if len(trading) > 0 {
		b.WriteString("- " + strings.Join(trading, " ") + "\n")
	}
	if has[deskbot.ToolBash] {
		b.WriteString("- The bash tools run in your own folder, which is kept between turns: keep notes and files there. Clocks there are India time too.\n")
	}
	b.WriteString("- Your final reply (without tool calls) is posted to the team's chat. Keep it short: a few lines saying what you did and what you need. The chat already shows the outcome of each call the team allowed, and each fill of your orders that came later: do not repeat them.")
	if has[deskbot.ToolSendMessage] {
		b.WriteString(" Use send_message only for something to show mid-turn or for a picture.")
	}
	b.WriteString("\n- Never put secrets (keys, tokens, passwords) in messages or files.\n")
	if desk.Prompt != "" {
		b.WriteString("\nYour brief from the team:\n")
		b.WriteString(desk.Prompt)
		b.WriteString("\n")
	}
	return b.String()
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}
