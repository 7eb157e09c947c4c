package risk

import (
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/deskbottest"
)

// A halted desk's orders resting at the broker are cancelled, whether or
// not its positions are closed: one that fills after the halt would open
// or grow a position the rules stopped.
func TestHaltCancelsTheDesksRestingOrders(t *testing.T) {
	for _, flatten := range []bool{false, true} {
		t.Run(map[bool]string{false: "positions left open", true: "positions closed"}[flatten], func(t *testing.T) {
			w := newWorld(t)
			w.trade(t, "buy", 100)
			resting, err := w.paper.PlaceOrder(t.Context(), "main", deskbottest.NewKey(), deskbot.Order{Symbol: "TCS", Side: deskbot.Buy, Quantity: 500, Price: 900, Type: deskbot.OrderLimit, Product: deskbot.ProductMIS})
			if err != nil || resting.State != deskbot.OrderOpen {
				t.Fatalf("resting buy: %+v, %v", resting, err)
			}
			wt := w.watcher(deskbot.RiskRules{MaxDailyLoss: 1000, FlattenOnHalt: flatten})
			w.quotes.Set("TCS", 985)
			w.Set(thursday.Add(time.Minute))
			wt.Check(t.Context(), "main")
			if st := w.status(t); st.Halt == nil || !st.Halt.Done {
				t.Fatalf("halt = %+v; want done", st.Halt)
			}
			w.quotes.Set("TCS", 900)
			if _, err := w.paper.Sync(t.Context()); err != nil {
				t.Fatal(err)
			}
			b, err := w.paper.Book(t.Context(), "main")
			if err != nil {
				t.Fatal(err)
			}
			if q := deskbot.PositionAfter(b, deskbot.Order{Symbol: "TCS"}); q > 100 {
				t.Errorf("the halted desk holds %v TCS: its resting buy filled after the halt", q)
			}
		})
	}
}
