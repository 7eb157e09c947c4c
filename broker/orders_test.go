package broker_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/broker/brokertest"
	"github.com/deskbot/deskbot/deskbottest"
)

// paperDesk is a paper broker over a tape the test sets, on a clock the
// test moves, telling what it tells to a recording Teller.
type paperDesk struct {
	*broker.Paper
	tape  *brokertest.Quotes
	clock *deskbottest.Clock
	told  *brokertest.Teller
}

func mustPaperDesk(t *testing.T) paperDesk {
	t.Helper()
	return paperDeskOn(mustStore(t))
}

func paperDeskOn(st deskbot.OrderStore) paperDesk {
	d := paperDesk{tape: &brokertest.Quotes{}, clock: deskbottest.NewClock(t0), told: &brokertest.Teller{}}
	d.Paper = broker.NewPaperMarket(st, d.clock.Now, d.tape).Telling(d.told, nil)
	return d
}

func mustPlace(t *testing.T, b deskbot.Broker, desk, key string, o deskbot.Order) deskbot.PlacedOrder {
	t.Helper()
	po, err := b.PlaceOrder(t.Context(), desk, key, o)
	if err != nil {
		t.Fatalf("PlaceOrder(%s, %+v): %v", desk, o, err)
	}
	return po
}

func mustSync(t *testing.T, p *broker.Paper) int {
	t.Helper()
	n, err := p.Sync(t.Context())
	if err != nil {
		t.Fatalf("Sync: %v", err)
	}
	return n
}

func limit(side, sym string, qty, price float64) deskbot.Order {
	return deskbot.Order{Symbol: sym, Side: side, Quantity: qty, Price: price, Type: deskbot.OrderLimit, Product: deskbot.ProductMIS}
}

func TestPaperLimitOrderRestsThenFillsWhenTheMarketComes(t *testing.T) {
	d := mustPaperDesk(t)
	d.tape.Set("INFY", 1500)
	po := mustPlace(t, d, "main", deskbottest.NewKey(), limit(deskbot.Buy, "INFY", 10, 1490))
	if got, want := po.State, deskbot.OrderOpen; got != want {
		t.Fatalf("a buy limit below the market is %s, want %s", got, want)
	}
	if b := mustBook(t, d, "main"); len(b.Positions) != 0 {
		t.Fatalf("a resting order is in the book: %+v", b)
	}
	if n := mustSync(t, d.Paper); n != 0 || len(d.told.Told()) != 0 {
		t.Fatalf("with the market away Sync moved %d and told %v, want nothing", n, d.told.Told())
	}

	d.tape.Set("INFY", 1489.5)
	if n := mustSync(t, d.Paper); n != 1 {
		t.Fatalf("Sync moved %d orders once the market came to the limit, want 1", n)
	}
	mustSync(t, d.Paper) // nothing new: nothing told again
	told := d.told.Told()
	if len(told) != 1 || told[0].Desk != "main" || told[0].Kind != deskbot.TriggerOrder {
		t.Fatalf("told %+v, want one order message to main", told)
	}
	if ev := d.told.Events(); len(ev) != 1 || ev[0].Kind != deskbot.EventOrder || ev[0].Desk != "main" {
		t.Fatalf("chat told %+v, want the fill once", ev)
	}
	orders, err := d.Orders(t.Context(), "main")
	if err != nil || len(orders) != 1 {
		t.Fatalf("Orders = %v, %v", orders, err)
	}
	if got := orders[0]; got.State != deskbot.OrderComplete || got.Filled != 10 || got.AvgPrice != 1489.5 || got.ID != po.ID {
		t.Errorf("order after the fill = %+v, want complete 10 @ 1489.5 under id %s", got, po.ID)
	}
	if got, want := mustBook(t, d, "main"), (deskbot.Book{Positions: []deskbot.Position{pos("INFY", 10, 1489.5, 1489.5, 0)}}); !sameBook(got, want) {
		t.Errorf("book %+v, want %+v", got, want)
	}
}

// One call's key places one order, however often the call runs: the
// second run answers with the first order and books nothing.
func TestPaperOneKeyPlacesOneOrder(t *testing.T) {
	d := mustPaperDesk(t)
	d.tape.Set("SBIN", 800)
	key := deskbottest.NewKey()
	first := mustPlace(t, d, "main", key, limit(deskbot.Buy, "SBIN", 5, 810))
	d.tape.Set("SBIN", 790)
	again := mustPlace(t, d, "main", key, limit(deskbot.Buy, "SBIN", 5, 810))
	if again.ID != first.ID || again.AvgPrice != 800 {
		t.Errorf("the same key again = %+v, want the first order %+v", again, first)
	}
	if b := mustBook(t, d, "main"); len(b.Positions) != 1 || b.Positions[0].Quantity != 5 {
		t.Errorf("book after one key twice: %+v, want 5 SBIN", b)
	}
	if orders, _ := d.Orders(t.Context(), "main"); len(orders) != 1 {
		t.Errorf("orders after one key twice: %+v, want one", orders)
	}
}

func TestPaperStopLossWaitsForItsTrigger(t *testing.T) {
	d := mustPaperDesk(t)
	d.tape.Set("TCS", 4000)
	stop := deskbot.Order{Symbol: "TCS", Side: deskbot.Sell, Quantity: 2, Type: deskbot.OrderSLM, TriggerPrice: 3950, Product: deskbot.ProductMIS}
	if po := mustPlace(t, d, "main", deskbottest.NewKey(), stop); po.State != deskbot.OrderOpen {
		t.Fatalf("a sell stop below the market is %s, want open", po.State)
	}
	d.tape.Set("TCS", 3960)
	if n := mustSync(t, d.Paper); n != 0 {
		t.Fatalf("stop fired above its trigger")
	}
	d.tape.Set("TCS", 3940)
	if n := mustSync(t, d.Paper); n != 1 {
		t.Fatalf("stop did not fire at the market below its trigger")
	}
	if b := mustBook(t, d, "main"); len(b.Positions) != 1 || b.Positions[0].Quantity != -2 || b.Positions[0].AvgPrice != 3940 {
		t.Errorf("book after the stop: %+v, want short 2 @ 3940", b)
	}
}

func TestPaperCancelOrder(t *testing.T) {
	d := mustPaperDesk(t)
	d.tape.Set("INFY", 1500)
	open := mustPlace(t, d, "main", deskbottest.NewKey(), limit(deskbot.Sell, "INFY", 3, 1600))
	filled := mustPlace(t, d, "main", deskbottest.NewKey(), limit(deskbot.Buy, "INFY", 1, 1500))

	for _, tc := range []struct {
		name, desk, id string
		want           string
	}{
		{"another desk's order", "other", open.ID, deskbot.ENOTFOUND},
		{"an unknown id", "main", "250101000000001", deskbot.ENOTFOUND},
		{"a filled order", "main", filled.ID, deskbot.ECONFLICT},
	} {
		if _, err := d.CancelOrder(t.Context(), tc.desk, tc.id); deskbot.ErrorCode(err) != tc.want {
			t.Errorf("%s: CancelOrder = %v, want %s", tc.name, err, tc.want)
		}
	}
	got, err := d.CancelOrder(t.Context(), "main", open.ID)
	if err != nil || got.State != deskbot.OrderCancelled {
		t.Fatalf("CancelOrder of its own open order = %+v, %v", got, err)
	}
	if _, err := d.CancelOrder(t.Context(), "main", open.ID); deskbot.ErrorCode(err) != deskbot.ECONFLICT {
		t.Errorf("cancelling twice = %v, want ECONFLICT", err)
	}
	d.tape.Set("INFY", 1700)
	if n := mustSync(t, d.Paper); n != 0 {
		t.Errorf("a cancelled order filled")
	}
	if told := d.told.Told(); len(told) != 0 {
		t.Errorf("the desk was told of its own cancel by message too: %+v (the tool's answer tells it)", told)
	}
}

func TestPaperOrdersEndWithTheDay(t *testing.T) {
	d := mustPaperDesk(t)
	d.tape.Set("INFY", 1500)
	mustPlace(t, d, "main", deskbottest.NewKey(), limit(deskbot.Buy, "INFY", 10, 1400))
	d.clock.Add(24 * time.Hour)
	if n := mustSync(t, d.Paper); n != 1 {
		t.Fatalf("Sync the next day moved %d orders, want the old one cancelled", n)
	}
	told := d.told.Told()
	if len(told) != 1 || !strings.Contains(told[0].Text, "cancelled") {
		t.Errorf("told %+v, want the desk told its order was cancelled", told)
	}
	if ev := d.told.Events(); len(ev) != 0 {
		t.Errorf("chat told %+v of an unfilled order's end; it hears of fills and rejections", ev)
	}
}

func TestPaperFlattenCancelsOpenOrdersFirst(t *testing.T) {
	d := mustPaperDesk(t)
	d.tape.Set("INFY", 1500)
	mustPlace(t, d, "main", deskbottest.NewKey(), limit(deskbot.Buy, "INFY", 10, 1500))
	mustPlace(t, d, "main", deskbottest.NewKey(), limit(deskbot.Buy, "INFY", 10, 1400))
	rep, err := d.Flatten(t.Context(), "main", deskbottest.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Cancelled) != 1 || len(rep.Closed) != 1 || rep.Closed[0].Quantity != 10 {
		t.Fatalf("flatten = %+v, want the resting buy cancelled and the long 10 closed", rep)
	}
	d.tape.Set("INFY", 1300)
	mustSync(t, d.Paper)
	if b := mustBook(t, d, "main"); len(b.Positions) != 0 {
		t.Errorf("after flatten a cancelled order filled: %+v", b)
	}
}

// Two instances (a leader and a standby in a hand-over) syncing the same
// orders at once tell each change once, and book each fill once.
func TestPaperTwoSyncsTellOnce(t *testing.T) {
	st := mustStore(t)
	a, b := paperDeskOn(st), paperDeskOn(st)
	b.told = a.told
	b.Paper = b.Paper.Telling(a.told, nil)
	a.tape.Set("INFY", 1500)
	b.tape.Set("INFY", 1500)
	for range 20 {
		mustPlace(t, a, "main", deskbottest.NewKey(), limit(deskbot.Buy, "INFY", 1, 1490))
	}
	a.tape.Set("INFY", 1480)
	b.tape.Set("INFY", 1480)
	var wg sync.WaitGroup
	for _, p := range []*broker.Paper{a.Paper, b.Paper, a.Paper, b.Paper} {
		wg.Go(func() {
			if _, err := p.Sync(t.Context()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got, want := len(a.told.Told()), 20; got != want {
		t.Errorf("told %d fills, want %d", got, want)
	}
	if bk := mustBook(t, a, "main"); len(bk.Positions) != 1 || bk.Positions[0].Quantity != 20 {
		t.Errorf("book %+v, want long 20", bk)
	}
}
