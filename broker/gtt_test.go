package broker_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker/brokertest"
	"github.com/deskbot/deskbot/deskbottest"
)

// stopLoss is a GTT closing a long of qty INFY: a stop at 1,450 (limit
// 1,445) and, with target, a target at 1,600 (limit 1,595).
func stopLoss(qty float64, target bool) deskbot.GTT {
	g := deskbot.GTT{Symbol: "INFY", Side: deskbot.Sell, Quantity: qty, Product: deskbot.ProductCNC, Stop: deskbot.GTTLeg{Trigger: 1450, Price: 1445}}
	if target {
		g.Target = &deskbot.GTTLeg{Trigger: 1600, Price: 1595}
	}
	return g
}

// mustLong is a paper desk long qty INFY bought at 1,500.
func mustLong(t *testing.T, qty float64) paperDesk {
	t.Helper()
	d := mustPaperDesk(t)
	d.tape.Set("INFY", 1500)
	mustPlace(t, d, "main", deskbottest.NewKey(), deskbot.Order{Symbol: "INFY", Side: deskbot.Buy, Quantity: qty, Type: deskbot.OrderMarket, Product: deskbot.ProductCNC})
	return d
}

func mustGTT(t *testing.T, b deskbot.Broker, desk string, g deskbot.GTT) deskbot.PlacedGTT {
	t.Helper()
	pg, err := b.PlaceGTT(t.Context(), desk, deskbottest.NewKey(), g)
	if err != nil {
		t.Fatalf("PlaceGTT(%s, %+v): %v", desk, g, err)
	}
	return pg
}

func held(t *testing.T, b deskbot.Broker, desk, symbol string) float64 {
	t.Helper()
	book, err := b.Book(t.Context(), desk)
	if err != nil {
		t.Fatalf("Book: %v", err)
	}
	return deskbot.Held(book, symbol)
}

// A GTT rests until the paper market reaches its stop; then its leg's
// LIMIT order is the desk's like any other: in its orders, its fill in its
// book, told to the desk. It fires once.
func TestPaperGTTFiresIntoTheDesksBook(t *testing.T) {
	d := mustLong(t, 10)
	pg := mustGTT(t, d, "main", stopLoss(10, true))
	if pg.State != deskbot.GTTActive || pg.ID == "" {
		t.Fatalf("got %+v, want an active GTT with an id", pg)
	}
	d.tape.Set("INFY", 1460)
	mustSync(t, d.Paper)
	if got := held(t, d, "main", "INFY"); got != 10 {
		t.Fatalf("above the stop: holding %v, want 10", got)
	}
	d.tape.Set("INFY", 1449)
	mustSync(t, d.Paper)
	mustSync(t, d.Paper)
	if got := held(t, d, "main", "INFY"); got != 0 {
		t.Errorf("after the stop: holding %v, want 0", got)
	}
	gs, err := d.GTTs(t.Context(), "main")
	if err != nil || len(gs) != 1 || gs[0].State != deskbot.GTTTriggered || gs[0].Fired == "" {
		t.Fatalf("GTTs: got %+v, %v; want the one triggered with its order", gs, err)
	}
	orders, err := d.Orders(t.Context(), "main")
	if err != nil {
		t.Fatal(err)
	}
	i := slicesIndex(orders, gs[0].Fired)
	if i < 0 || orders[i].State != deskbot.OrderComplete || orders[i].Order.Side != deskbot.Sell || orders[i].Order.Price != 1445 {
		t.Fatalf("orders %+v: want the fired SELL 10 LIMIT 1,445 complete", orders)
	}
	if !toldOf(d, gs[0].Fired) {
		t.Errorf("the desk was not told of its fired GTT's order: %+v", d.told.Told())
	}
	d.tape.Set("INFY", 1700)
	mustSync(t, d.Paper)
	if got := held(t, d, "main", "INFY"); got != 0 {
		t.Errorf("the target fired too: holding %v, want 0", got)
	}
}

func slicesIndex(orders []deskbot.PlacedOrder, tag string) int {
	for i, po := range orders {
		if po.Tag == tag {
			return i
		}
	}
	return -1
}

func toldOf(d paperDesk, tag string) bool {
	for _, tr := range d.told.Told() {
		if strings.Contains(tr.Text, "SELL 10 INFY") && tr.Desk == "main" {
			return true
		}
	}
	return false
}

// One allowed call places at most one GTT, however often it is asked.
func TestPaperGTTOncePerKey(t *testing.T) {
	d := mustLong(t, 10)
	key := deskbottest.NewKey()
	a, err := d.PlaceGTT(t.Context(), "main", key, stopLoss(10, false))
	if err != nil {
		t.Fatal(err)
	}
	b, err := d.PlaceGTT(t.Context(), "main", key, stopLoss(10, false))
	if err != nil || b.ID != a.ID {
		t.Fatalf("asked again: got %+v, %v; want %s", b, err, a.ID)
	}
	if gs, _ := d.GTTs(t.Context(), "main"); len(gs) != 1 {
		t.Errorf("got %d GTTs, want 1", len(gs))
	}
}

// A flatten deletes the desk's GTTs and cancels its orders in one step;
// the market reaching the deleted GTT's stop afterwards opens nothing.
func TestPaperFlattenDeletesGTTs(t *testing.T) {
	d := mustLong(t, 10)
	mustGTT(t, d, "main", stopLoss(10, true))
	resting := mustPlace(t, d, "main", deskbottest.NewKey(), deskbot.Order{Symbol: "INFY", Side: deskbot.Sell, Quantity: 5, Price: 1700, Type: deskbot.OrderLimit, Product: deskbot.ProductCNC})
	r, err := d.Flatten(t.Context(), "main", deskbottest.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.DeletedGTTs) != 1 || r.DeletedGTTs[0].State != deskbot.GTTDeleted || len(r.Cancelled) != 1 || r.Cancelled[0].Tag != resting.Tag {
		t.Fatalf("got %+v, want the GTT deleted and the resting order cancelled", r)
	}
	d.tape.Set("INFY", 1400)
	mustSync(t, d.Paper)
	if got := held(t, d, "main", "INFY"); got != 0 {
		t.Errorf("after the flatten and the stop's price: holding %v, want 0", got)
	}
}

// A GTT that fires once its position is gone (closed by hand, or by a
// flatten that ran as it fired) places nothing; one whose position shrank
// closes no more than is left: it never opens the other side.
func TestPaperGTTNeverOpensTheOtherSide(t *testing.T) {
	d := mustLong(t, 10)
	mustGTT(t, d, "main", stopLoss(6, false))
	mustGTT(t, d, "main", stopLoss(4, false))
	mustPlace(t, d, "main", deskbottest.NewKey(), deskbot.Order{Symbol: "INFY", Side: deskbot.Sell, Quantity: 7, Type: deskbot.OrderMarket, Product: deskbot.ProductCNC})
	d.tape.Set("INFY", 1450)
	mustSync(t, d.Paper)
	mustSync(t, d.Paper)
	if got := held(t, d, "main", "INFY"); got != 0 {
		t.Errorf("holding %v, want 0: the GTTs close the 3 left and no more", got)
	}
	gs, _ := d.GTTs(t.Context(), "main")
	var states []string
	for _, g := range gs {
		states = append(states, string(g.State))
	}
	if got := strings.Join(states, " "); got != "triggered rejected" {
		t.Errorf("states %q, want %q", got, "triggered rejected")
	}
}

// The hostile desk: a GTT on a symbol it does not hold, on another desk's
// position, larger than its position (alone or beside its other GTTs), on
// the side that grows it, with a trigger already reached, or of ₹0:
// refused, and nothing is kept. Nor can it delete another desk's GTT.
func TestPaperGTTHostileDesk(t *testing.T) {
	d := mustLong(t, 10)
	d.tape.Set("TCS", 4000)
	grow := stopLoss(10, false)
	grow.Side = deskbot.Buy
	grow.Stop = deskbot.GTTLeg{Trigger: 1550, Price: 1555}
	other := stopLoss(1, false)
	other.Symbol = "TCS"
	zero := stopLoss(10, false)
	zero.Stop.Price = 0
	reached := stopLoss(10, false)
	reached.Stop = deskbot.GTTLeg{Trigger: 1510, Price: 1505}
	tests := []struct {
		name, desk string
		g          deskbot.GTT
		want       string
	}{
		{"another desk's position", "research", stopLoss(10, false), "holds no INFY"},
		{"a symbol it does not hold", "main", other, "holds no TCS"},
		{"more than its position", "main", stopLoss(11, false), "more than the 10 INFY"},
		{"a buy that grows a long", "main", grow, "a buy would grow"},
		{"₹0 limit", "main", zero, "price greater than 0"},
		{"a stop the market passed", "main", reached, "already reached"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := d.PlaceGTT(t.Context(), tt.desk, deskbottest.NewKey(), tt.g)
			if deskbot.ErrorCode(err) != deskbot.EINVALID || !strings.Contains(deskbot.ErrorMessage(err), tt.want) {
				t.Errorf("got %v, want EINVALID saying %q", err, tt.want)
			}
		})
	}
	mine := mustGTT(t, d, "main", stopLoss(6, false))
	if _, err := d.PlaceGTT(t.Context(), "main", deskbottest.NewKey(), stopLoss(5, false)); deskbot.ErrorCode(err) != deskbot.EINVALID || !strings.Contains(deskbot.ErrorMessage(err), "already close") {
		t.Errorf("a second GTT beyond the 4 left uncovered: got %v, want EINVALID", err)
	}
	if _, err := d.CancelGTT(t.Context(), "research", mine.ID); deskbot.ErrorCode(err) != deskbot.ENOTFOUND {
		t.Errorf("another desk's cancel: got %v, want ENOTFOUND", err)
	}
	for _, desk := range []string{"main", "research"} {
		gs, _ := d.GTTs(t.Context(), desk)
		if want := map[string]int{"main": 1, "research": 0}[desk]; len(gs) != want || desk == "main" && gs[0].State != deskbot.GTTActive {
			t.Errorf("%s's GTTs: got %+v, want %d active", desk, gs, want)
		}
	}
	if _, err := d.CancelGTT(t.Context(), "main", mine.ID); err != nil {
		t.Errorf("its own cancel: %v", err)
	}
	if _, err := d.CancelGTT(t.Context(), "main", mine.ID); deskbot.ErrorCode(err) != deskbot.ECONFLICT {
		t.Errorf("cancelled twice: got %v, want ECONFLICT", err)
	}
}

// Two GTTs on a long that shrank by hand, whose legs rest unfilled (the
// market fell through their limits), never sell more than is left between
// them: the first's resting sell counts against the second.
func TestPaperGTTRestingLegsNeverOverClose(t *testing.T) {
	d := mustLong(t, 10)
	mustGTT(t, d, "main", stopLoss(5, false))
	mustGTT(t, d, "main", stopLoss(5, false))
	mustPlace(t, d, "main", deskbottest.NewKey(), deskbot.Order{Symbol: "INFY", Side: deskbot.Sell, Quantity: 5, Type: deskbot.OrderMarket, Product: deskbot.ProductCNC})
	d.tape.Set("INFY", 1440)
	mustSync(t, d.Paper)
	d.tape.Set("INFY", 1500)
	mustSync(t, d.Paper)
	if got := held(t, d, "main", "INFY"); got != 0 {
		t.Errorf("holding %v, want 0: one GTT's 5 closes what is left, the other places nothing", got)
	}
}

// Two GTTs of one paper desk placed at once, each of its whole long: one
// is placed and the other refused, never both (they would sell twice the
// long when the stop is reached).
func TestTwoPaperGTTsAtOnceNeverCoverMoreThanThePosition(t *testing.T) {
	d := mustLong(t, 10)
	m := brokertest.NewMeeting(2)
	p := d.Paper.Admitting(m.Admit)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() {
			defer m.Ended()
			_, errs[i] = p.PlaceGTT(t.Context(), "main", deskbottest.NewKey(), stopLoss(10, false))
		})
	}
	wg.Wait()
	gs, err := p.GTTs(t.Context(), "main")
	if err != nil {
		t.Fatal(err)
	}
	if got := deskbot.Covered(gs, "INFY", deskbot.Sell); got > 10 {
		t.Errorf("active GTTs sell %v INFY for a long of 10", got)
	}
	placed, refused := 0, 0
	for _, err := range errs {
		switch {
		case err == nil:
			placed++
		case deskbot.ErrorCode(err) == deskbot.EINVALID && strings.Contains(deskbot.ErrorMessage(err), "already close"):
			refused++
		default:
			t.Errorf("a GTT: %v, want placed, or refused naming the GTT that already closes the long", err)
		}
	}
	if placed != 1 || refused != 1 {
		t.Errorf("%d placed, %d refused; want one of each", placed, refused)
	}
}
