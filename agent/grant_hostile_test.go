package agent_test

import (
	"testing"

	"github.com/deskbot/deskbot"
)

// A grant up to a limit covers no order that fills past it: a LIMIT sell
// named at a paisa, or a buy named far above the market's price, trades at
// the market's price, so it is counted there, as the hard limits count it,
// on a desk with no threshold and no hard limits as on any other.
func TestHostileLimitOrderPricedAcrossTheMarketUnderAGrant(t *testing.T) {
	for _, tc := range []struct {
		name, args string
		want       string
	}{
		{"sell at a paisa", order("sell", 2000, 0.01), "held"},                   // fills at ₹1,000: ₹20 lakh
		{"sell at the market, within the grant", order("sell", 50, 1000), "ran"}, // ₹50,000
		{"buy below the market, within the grant", order("buy", 99, 1000), "ran"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := mustLimits(t, deskbot.ToolPolicy{}, true)
			f.mustGrant(t, 100000) // one approver's Always allow up to ₹1 lakh
			ex := f.place(t, "t", tc.args)
			if got := outcome(ex.Held, ex.Refused); got != tc.want {
				t.Errorf("%s: %s (%q), holding %v TCS after it; want %s", tc.args, got, ex.Result.Text, f.mustTCS(t), tc.want)
			}
		})
	}
}
