package words_test

import (
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/words"
)

// The texts a desk's model reads about the risk rules and the team's
// question are part of the contract (README quotes them): byte for byte.
func TestModelTextsOfRiskAndWhy(t *testing.T) {
	at := time.Date(2026, 12, 3, 5, 32, 0, 0, time.UTC) // 11:02 India time
	h := deskbot.Halt{Rule: deskbot.RuleMaxDailyLoss, Figures: words.LossFigures(-5250.5, 0, 5000), At: at}
	r := &deskbot.Request{ID: "R1", Desk: "main", Content: deskbot.PermissionContent{ToolName: "place_order"}}
	for _, tt := range []struct{ name, got, want string }{
		{"halt", words.HaltTrigger("main", h).Text, "The harness halted this desk at 11:02 India time: its risk rule max_daily_loss tripped (P&L today -₹5,250.50, limit -₹5,000.00). Nothing you hold can run until an approver resumes the desk; when you are resumed, start from the book as it is then."},
		{"halted order", words.HaltedOrderMessage("place_order"), "place_order was not run: a risk rule halted this desk. Nothing runs until an approver resumes it. End this turn."},
		{"square-off", words.SquareOffTrigger("main", "15:15", "closed 1 position", at).Text, "The harness squared off this desk at 15:15 India time (its square_off_at): closed 1 position. Until the next trading day, orders that open or grow a position are refused."},
		{"why", words.WhyTrigger(r, at).Text, "The team asks why you want to run place_order (request R1) before they decide. Explain in a few lines what you expect from it, its risk, and what you will do if it is denied. You cannot call tools in this turn."},
		{"loss after a resume", words.LossFigures(-9000, -5000, 3000), "P&L today -₹9,000.00, ₹4,000.00 lost since it was resumed at -₹5,000.00, limit ₹3,000.00"},
		{"tokens", words.TokensFigures(120000, 0, 100000), "1,20,000 model tokens today, limit 1,00,000"},
	} {
		if tt.got != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, tt.got, tt.want)
		}
	}
}
