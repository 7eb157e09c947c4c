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

// A call a grant lets run says whose grant it ran under, so the chat can
// tell the team; one the grant does not cover is held, and names none.
func TestCallRunUnderAGrantNamesIt(t *testing.T) {
	f := mustLimits(t, deskbot.ToolPolicy{}, true)
	f.mustGrant(t, 100000)
	ex := f.place(t, "t", order("buy", 50, 1000)) // ₹50,000: within
	if ex.Held || ex.Grant == nil {
		t.Fatalf("an order within the grant: held %v, grant %+v; want it run under the grant", ex.Held, ex.Grant)
	}
	if got, want := ex.Grant.GrantedBy, "Asha (1)"; got != want {
		t.Errorf("ran under a grant by %q, want %q", got, want)
	}
	ex = f.place(t, "t2", order("buy", 200, 1000)) // ₹2 lakh: past it
	if !ex.Held || ex.Grant != nil {
		t.Errorf("an order past the grant: held %v, grant %+v; want it held under none", ex.Held, ex.Grant)
	}
}
