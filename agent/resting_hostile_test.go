package agent_test

import (
	"fmt"
	"testing"

	"github.com/deskbot/deskbot"
)

// The hostile desk rests orders at the broker below (or, for stops, away
// from) the market, each within the position limit on its own, and waits
// for the market to fill them all: orders resting at the broker count as
// filled, as orders waiting for approval do, so the position never passes
// the limit.
func TestHostileRestingOrdersCountTowardThePositionLimit(t *testing.T) {
	for _, tc := range []struct {
		name, args string
		fill       float64 // the market's price that fills them
	}{
		{"limit buys below the market", `{"symbol":"TCS","side":"buy","quantity":300,"price":900}`, 900},
		{"stop buys above the market", `{"symbol":"TCS","side":"buy","quantity":300,"order_type":"SL-M","trigger_price":1000.5}`, 1001},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := mustLimits(t, deskbot.ToolPolicy{MaxPositionNotional: 1000000}, false) // 1,000 TCS at ₹1,000
			var ran int
			for i := range 6 {
				ex := f.place(t, fmt.Sprintf("rest-%d", i), tc.args)
				if ex.Held || ex.Result.IsError && !ex.Refused {
					t.Fatalf("call %d: %+v", i, ex)
				}
				if !ex.Refused {
					ran++
				}
			}
			f.market.Set("TCS", tc.fill)
			if _, err := f.paper.Sync(t.Context()); err != nil {
				t.Fatal(err)
			}
			if got := f.mustTCS(t); got*tc.fill > 1000000*1.01 {
				t.Errorf("%d resting orders ran and filled: the desk holds %v TCS (₹%.0f), past its position limit of ₹10,00,000", ran, got, got*tc.fill)
			}
		})
	}
}
