package webapp

import (
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/words"
)

// A desk's page lists its calls in people's words: a held call's result
// is not the hold message written for the model, an order's is its id and
// where it stood (not the answer written for the model), a decision is in
// words, and a call run under a grant says whose.
func TestRecentCallsAreInPeoplesWords(t *testing.T) {
	at := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	call := &deskbot.ToolCall{Name: "place_order", Arguments: []byte(`{"symbol":"INFY"}`)}
	id := "0b7d6c1e-1c1a-4f55-9a39-1b2c3d4e5f60"
	var rc recentCalls
	rc.note(deskbot.Event{Kind: deskbot.EventToolResult, Desk: "main", Time: at, Call: call,
		Result: &deskbot.ToolResult{Text: words.HoldMessage("place_order", id, at.Add(5*time.Minute)), Held: true}})
	filled := "Filled: " + words.PlacedLine(deskbot.PlacedOrder{ID: "2512040001", Desk: "main", State: deskbot.OrderComplete, Filled: 10, AvgPrice: 1604.36,
		Order: deskbot.Order{Symbol: "INFY", Side: deskbot.Buy, Quantity: 10, Price: 1604.35, Type: deskbot.OrderLimit, Product: deskbot.ProductMIS}}) +
		". Now INFY: long 10, avg 1,604.36, last 1,604.36, unrealised +₹0.00."
	rc.note(deskbot.Event{Kind: deskbot.EventRequestDecided, Desk: "main", Time: at, Result: &deskbot.ToolResult{Text: filled},
		Request: &deskbot.Request{ID: id, Desk: "main", Content: deskbot.PermissionContent{ToolName: "place_order", Arguments: call.Arguments}, Decision: deskbot.AllowOnce, DecidedBy: "Asha"}})
	rc.note(deskbot.Event{Kind: deskbot.EventToolResult, Desk: "main", Time: at, Call: call, Result: &deskbot.ToolResult{Text: "Placed: order 2512040002 · BUY 10 INFY LIMIT @ 1,604.35 · MIS · open. It rests at the broker; its fills reach you as messages, and get_orders shows it."},
		Grant: &deskbot.Grant{GrantedBy: "Ravi (102)", GrantedAt: at.Add(-time.Hour)}})
	rows := rc.m["main"]
	if len(rows) != 3 {
		t.Fatalf("rows = %+v", rows)
	}
	if got, want := rows[0].Result, "Held for the team's decision (request 0b7d6c1e)."; got != want {
		t.Errorf("held call reads %q, want %q", got, want)
	}
	if got, want := rows[1].Result, "order 2512040001 · complete 10 @ 1,604.36 avg"; got != want {
		t.Errorf("allowed order reads %q, want %q", got, want)
	}
	if got, want := rows[2].Result, "order 2512040002 · open"; got != want {
		t.Errorf("order under a grant reads %q, want %q", got, want)
	}
	for _, r := range rows {
		if strings.Contains(r.Result, "End this turn") || strings.Contains(r.Tool, "allow_once") ||
			strings.Contains(r.Result, "reach you") || strings.Contains(r.Result, "get_orders") || strings.Contains(r.Result, "Now INFY") {
			t.Errorf("a row shows words for the model or a code: %+v", r)
		}
	}
	if got, want := rows[1].Tool, "place_order (Allowed once by Asha)"; got != want {
		t.Errorf("decided call reads %q, want %q", got, want)
	}
	if got, want := rows[2].Tool, "place_order (ran under Ravi's grant of 12:30)"; got != want {
		t.Errorf("call under a grant reads %q, want %q", got, want)
	}
}
