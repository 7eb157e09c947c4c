package broker_test

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/deskbottest"
)

// The hostile desk names its own prices on the plain paper broker (the
// service's, over the default market, where TCS starts at ₹4,000): a price
// is only a limit, and every fill is at the market's price.
func TestHostilePaperFillsAtTheMarketNotTheDesksPrice(t *testing.T) {
	st := mustStore(t)
	p := broker.NewPaper(st, func() time.Time { return t0 }) // before the walk's origin: start prices
	steps := []struct {
		name string
		o    deskbot.Order
		want string // the fill's price, or the state of an order that rests
	}{
		{"buy at the market", buy("TCS", 1000, 4000), "4000"},
		{"buy a million at a tenth of a paisa", buy("TCS", 1000000, 0.001), "open"},
		{"buy one far above the market", buy("TCS", 1, 1000000), "4000"},
		{"sell two at a paisa", sell("TCS", 2, 0.01), "4000"},
		{"sell far above the market", sell("TCS", 1, 5000), "open"},
	}
	for _, s := range steps {
		f, err := p.PlaceOrder(t.Context(), "main", deskbottest.NewKey(), s.o)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		got := string(f.State)
		if f.State == deskbot.OrderComplete {
			got = strconv.FormatFloat(f.AvgPrice, 'f', -1, 64)
		}
		if got != s.want {
			t.Errorf("%s: %q; want %q", s.name, got, s.want)
		}
	}
	// The market does not come to the desk's price: the resting orders stay
	// open however often the updates look.
	if n, err := p.Sync(t.Context()); err != nil || n != 0 {
		t.Errorf("Sync moved %d orders (%v); want none", n, err)
	}
	want := deskbot.Book{Positions: []deskbot.Position{pos("TCS", 999, 4000, 4000, 0)}}
	if got := mustBook(t, p, "main"); !sameBook(got, want) {
		t.Errorf("book = %+v; want %+v", got, want)
	}
}

// The market moves with the clock and nothing else: the same seed, symbol
// and time give the same price, every price is near its start, and each
// symbol walks on its own.
func TestWalkIsAMarketNoDeskMoves(t *testing.T) {
	origin := time.Date(2026, 1, 1, 0, 0, 0, 0, deskbot.IST)
	w := &broker.Walk{Seed: 7, Origin: origin, Start: map[string]float64{"TCS": 4000, "INFY": 1500}, Default: 250}
	tests := []struct {
		name string
		sym  string
		at   time.Time
		want float64
	}{
		{"at the origin a price is its start", "TCS", origin, 4000},
		{"before the origin too", "INFY", origin.Add(-time.Hour), 1500},
		{"within the first minute nothing moves", "TCS", origin.Add(59 * time.Second), 4000},
		{"an unknown symbol starts at the default", "WIPRO", origin, 250},
	}
	for _, tt := range tests {
		if got := w.Price(tt.sym, tt.at); got != tt.want {
			t.Errorf("%s: Price(%s, %v) = %v; want %v", tt.name, tt.sym, tt.at, got, tt.want)
		}
	}
	again := &broker.Walk{Seed: 7, Origin: origin, Start: w.Start, Default: 250}
	other := &broker.Walk{Seed: 8, Origin: origin, Start: w.Start, Default: 250}
	var moved, differs, apart int
	for i := range 200 {
		at := origin.Add(time.Duration(i) * 37 * time.Hour)
		p := w.Price("TCS", at)
		if got := again.Price("TCS", at); got != p {
			t.Fatalf("the same walk reads %v and %v at %v", p, got, at)
		}
		if math.Abs(math.Log(p/4000)) > 0.5 {
			t.Errorf("TCS at %v is %v: more than 50%% from its start", at, p)
		}
		if p != 4000 {
			moved++
		}
		if other.Price("TCS", at) != p {
			differs++
		}
		if w.Price("INFY", at)/1500 != p/4000 {
			apart++
		}
	}
	if moved < 190 || differs < 190 || apart < 190 {
		t.Errorf("of 200 times, moved %d, another seed differs %d, symbols apart %d; want nearly all", moved, differs, apart)
	}
	// Minute to minute it moves like a market, a little.
	a, b := w.Price("TCS", origin.Add(1000*time.Hour)), w.Price("TCS", origin.Add(1000*time.Hour+time.Minute))
	if a == b || math.Abs(b/a-1) > 0.01 {
		t.Errorf("a minute's move from %v to %v; want a small one", a, b)
	}
}

// Over a tape the test moves: a buy fills at the market when its limit is
// at or above it, a book's last price is the market's now, and a flatten
// closes there.
func TestPaperTradesAtTheMarket(t *testing.T) {
	p, market := mustMarket(t)
	if _, err := p.PlaceOrder(t.Context(), "main", deskbottest.NewKey(), buy("INFY", 10, 1500)); deskbot.ErrorCode(err) != deskbot.EINVALID || !strings.Contains(deskbot.ErrorMessage(err), "INFY has no market price") {
		t.Errorf("an order with no market: %v; want EINVALID, no market price", err)
	}
	market.Set("INFY", 1500)
	if got := mustOrder(t, p, "main", buy("INFY", 10, 1600)); got.Price != 1500 {
		t.Errorf("fill at %v; want the market's 1500", got.Price)
	}
	market.Set("INFY", 1520)
	if got, want := mustBook(t, p, "main"), (deskbot.Book{Positions: []deskbot.Position{pos("INFY", 10, 1500, 1520, 0)}}); !sameBook(got, want) {
		t.Errorf("book = %+v; want %+v", got, want)
	}
	market.Set("INFY", 1490)
	r := mustFlatten(t, p, "main")
	if len(r.Closed) != 1 || r.Closed[0].Price != 1490 || r.RealisedPnL != -100 {
		t.Errorf("flatten = %+v; want INFY closed at 1490, realising -100", r)
	}
	trades, err := p.Trades(t.Context(), "main", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(trades) != 2 || trades[0].Price != 1500 || trades[1].Price != 1490 {
		t.Errorf("journal = %+v; want the fills at 1500 and 1490", trades)
	}
}
