package kite

import (
	"slices"
	"testing"
	"time"

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

// The store fails between booking an order's fill and telling it: the
// next Sync tells it, once, and the chat sees the fill.
func TestFillNotToldIsToldByTheNextSync(t *testing.T) {
	r := mustRig(t)
	b, _ := r.mustBroker(t, options{})
	po := mustPlaceOrder(t, b, "alpha", limit("NSE:INFY", deskbot.Buy, 10, 1490))
	if err := r.kt.Fill(po.ID); err != nil {
		t.Fatal(err)
	}
	r.tell.setDown(true)
	if _, err := b.Sync(ctxFor(t, 30*time.Second)); err == nil {
		t.Fatal("Sync with the teller down: no error")
	}
	r.tell.setDown(false)
	for range 2 {
		mustSync(t, b)
	}
	if got, want := r.tell.versions(po.Tag), []string{"complete 10"}; !slices.Equal(got, want) {
		t.Errorf("the desk was told %q, want %q", got, want)
	}
	if got := len(r.tell.chat()); got != 1 {
		t.Errorf("the chat was told %d fills, want 1", got)
	}
	if open, _ := b.orders.HasOpen(t.Context()); open {
		t.Error("a complete order, told, is still open in the log")
	}
}
