package kite

import (
	"testing"

	"github.com/deskbot/deskbot"
)

// A desk holding two instruments is flattened in both: each closing order
// is its own, none answers with another's.
func TestFlattenClosesEveryPosition(t *testing.T) {
	r := mustRig(t)
	b, _ := r.mustBroker(t, options{})
	mustPlaceOrder(t, b, "alpha", market("NSE:INFY", deskbot.Buy, 10))
	mustPlaceOrder(t, b, "alpha", market("NSE:TCS", deskbot.Buy, 3))
	rep := mustFlattenDesk(t, b, "alpha")
	if len(rep.Placed) != 2 || rep.Placed[0].Tag == rep.Placed[1].Tag || len(rep.Left) != 0 {
		t.Fatalf("flatten: %+v, want two closing orders of their own", rep)
	}
	mustSync(t, b)
	net := mustNet(t, b)
	for _, k := range []string{"NSE:INFY MIS", "NSE:TCS MIS"} {
		if net[k] != 0 {
			t.Errorf("the account holds %d of %s after the flatten, want 0", net[k], k)
		}
	}
	if bk := mustBookOf(t, b, "alpha"); len(bk.Positions) != 0 {
		t.Errorf("alpha's book after the flatten: %+v, want flat", bk.Positions)
	}
}
