package risk

import (
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/deskbottest"
)

// A halt deletes the desk's GTTs in the same step as it cancels its
// orders, whether or not its positions are closed: none fires into the
// halted desk's book afterwards.
func TestHaltDeletesTheDesksGTTs(t *testing.T) {
	for _, flatten := range []bool{false, true} {
		t.Run(map[bool]string{false: "positions left open", true: "positions closed"}[flatten], func(t *testing.T) {
			w := newWorld(t)
			w.trade(t, "buy", 100)
			g := deskbot.GTT{Symbol: "TCS", Side: deskbot.Sell, Quantity: 100, Product: deskbot.ProductMIS, Stop: deskbot.GTTLeg{Trigger: 950, Price: 945}}
			if _, err := w.paper.PlaceGTT(t.Context(), "main", deskbottest.NewKey(), g); err != nil {
				t.Fatal(err)
			}
			wt := w.watcher(deskbot.RiskRules{MaxDailyLoss: 1000, FlattenOnHalt: flatten})
			w.quotes.Set("TCS", 985)
			w.Set(thursday.Add(time.Minute))
			wt.Check(t.Context(), "main")
			if st := w.status(t); st.Halt == nil || !st.Halt.Done {
				t.Fatalf("halt = %+v; want done", st.Halt)
			}
			gs, err := w.paper.GTTs(t.Context(), "main")
			if err != nil || len(gs) != 1 || gs[0].State != deskbot.GTTDeleted {
				t.Fatalf("GTTs after the halt: %+v, %v; want the one deleted", gs, err)
			}
			before, err := w.paper.Book(t.Context(), "main")
			if err != nil {
				t.Fatal(err)
			}
			w.quotes.Set("TCS", 940)
			if _, err := w.paper.Sync(t.Context()); err != nil {
				t.Fatal(err)
			}
			after, err := w.paper.Book(t.Context(), "main")
			if err != nil {
				t.Fatal(err)
			}
			if got, want := deskbot.Held(after, "TCS"), deskbot.Held(before, "TCS"); got != want {
				t.Errorf("the halted desk's TCS went from %v to %v at the deleted stop's price", want, got)
			}
		})
	}
}
