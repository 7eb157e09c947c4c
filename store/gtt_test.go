package store_test

import (
	"sync"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/store/storetest"
)

// A GTT is recorded once under its tag, first caller wins, and a fire and
// a delete that race from the same state cannot both win.
func TestGTTStoreOnceAndCompareAndSet(t *testing.T) {
	st := storetest.MustOpen(t)
	at := time.Date(2026, 12, 3, 11, 0, 0, 0, deskbot.IST)
	g := deskbot.PlacedGTT{ID: "g1", Tag: "dbgtt1", Desk: "main", State: deskbot.GTTActive, At: at,
		GTT: deskbot.GTT{Symbol: "INFY", Side: deskbot.Sell, Quantity: 10, Stop: deskbot.GTTLeg{Trigger: 1450, Price: 1445}}}
	if _, existed, err := st.StartGTT(t.Context(), g); err != nil || existed {
		t.Fatalf("first start: existed %v, %v", existed, err)
	}
	again := g
	again.GTT.Quantity = 99
	got, existed, err := st.StartGTT(t.Context(), again)
	if err != nil || !existed || got.GTT.Quantity != 10 {
		t.Fatalf("second start: got %+v, existed %v, %v; want the first", got, existed, err)
	}
	var wg sync.WaitGroup
	wins := make([]bool, 2)
	for i, to := range []deskbot.GTTState{deskbot.GTTTriggered, deskbot.GTTDeleted} {
		wg.Go(func() {
			next := g
			next.State = to
			_, moved, err := st.MoveGTT(t.Context(), g, next)
			if err != nil {
				t.Error(err)
			}
			wins[i] = moved
		})
	}
	wg.Wait()
	if wins[0] == wins[1] {
		t.Fatalf("fire won %v, delete won %v: want exactly one", wins[0], wins[1])
	}
	if other, err := st.DeskGTTs(t.Context(), "other"); err != nil || len(other) != 0 {
		t.Errorf("another desk's GTTs: %+v, %v; want none", other, err)
	}
	if active, err := st.ActiveGTTs(t.Context()); err != nil || len(active) != 0 {
		t.Errorf("active GTTs: %+v, %v; want none", active, err)
	}
}
