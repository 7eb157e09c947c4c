package broker_test

import (
	"fmt"
	"github.com/deskbot/deskbot/deskbottest"
	"math"
	"reflect"
	"sync"
	"testing"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/store/storetest"
)

func TestPaperOrders(t *testing.T) {
	p := mustPaper(t)
	tests := []struct {
		name      string
		orders    []deskbot.Order
		wantGains []float64 // realised by each fill
		want      deskbot.Book
	}{
		{
			name:      "buy opens a long",
			orders:    []deskbot.Order{buy("RELIANCE", 10, 100)},
			wantGains: []float64{0},
			want:      deskbot.Book{Positions: []deskbot.Position{pos("RELIANCE", 10, 100, 100, 0)}},
		},
		{
			name:      "adding averages by weight",
			orders:    []deskbot.Order{buy("TCS", 10, 100), buy("TCS", 30, 120)},
			wantGains: []float64{0, 0},
			want:      deskbot.Book{Positions: []deskbot.Position{pos("TCS", 40, 115, 120, 0)}},
		},
		{
			name:      "partial sell realises on the closed part and keeps the average",
			orders:    []deskbot.Order{buy("INFY", 10, 100), sell("INFY", 4, 110)},
			wantGains: []float64{0, 40},
			want:      deskbot.Book{Positions: []deskbot.Position{pos("INFY", 6, 100, 110, 40)}, RealisedPnL: 40},
		},
		{
			name:      "selling at a loss realises a loss",
			orders:    []deskbot.Order{buy("INFY", 10, 100), sell("INFY", 10, 95.5)},
			wantGains: []float64{0, -45},
			want:      deskbot.Book{RealisedPnL: -45},
		},
		{
			name:      "selling through zero closes the long and opens a short at the fill price",
			orders:    []deskbot.Order{buy("SBIN", 10, 100), sell("SBIN", 15, 90)},
			wantGains: []float64{0, -100},
			want:      deskbot.Book{Positions: []deskbot.Position{pos("SBIN", -5, 90, 90, -100)}, RealisedPnL: -100},
		},
		{
			name:      "a short gains when bought back lower",
			orders:    []deskbot.Order{sell("HDFC", 10, 100), buy("HDFC", 4, 90)},
			wantGains: []float64{0, 40},
			want:      deskbot.Book{Positions: []deskbot.Position{pos("HDFC", -6, 100, 90, 40)}, RealisedPnL: 40},
		},
		{
			name:      "adding to a short averages by weight",
			orders:    []deskbot.Order{sell("HDFC", 10, 100), sell("HDFC", 10, 110)},
			wantGains: []float64{0, 0},
			want:      deskbot.Book{Positions: []deskbot.Position{pos("HDFC", -20, 105, 110, 0)}},
		},
		{
			name:      "buying through zero closes the short and opens a long",
			orders:    []deskbot.Order{sell("ITC", 10, 100), buy("ITC", 12, 110)},
			wantGains: []float64{0, -100},
			want:      deskbot.Book{Positions: []deskbot.Position{pos("ITC", 2, 110, 110, -100)}, RealisedPnL: -100},
		},
		{
			name:      "fractions that add up to nothing leave the desk flat",
			orders:    []deskbot.Order{buy("BTC/USDT", 0.1, 100), buy("BTC/USDT", 0.2, 100), sell("BTC/USDT", 0.3, 200)},
			wantGains: []float64{0, 0, 30},
			want:      deskbot.Book{RealisedPnL: 30},
		},
		{
			name:      "realised P&L is booked in paise",
			orders:    []deskbot.Order{buy("M&M", 1, 100), sell("M&M", 1, 100.333), buy("M&M", 1, 100), sell("M&M", 1, 100.333)},
			wantGains: []float64{0, 0.33, 0, 0.33},
			want:      deskbot.Book{RealisedPnL: 0.66},
		},
		{
			name:      "positions are sorted by symbol and realised P&L sums every symbol",
			orders:    []deskbot.Order{buy("WIPRO", 1, 10), buy("ACC", 2, 20), buy("LT", 5, 50), sell("LT", 5, 52)},
			wantGains: []float64{0, 0, 0, 10},
			want:      deskbot.Book{Positions: []deskbot.Position{pos("ACC", 2, 20, 20, 0), pos("WIPRO", 1, 10, 10, 0)}, RealisedPnL: 10},
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			desk := fmt.Sprintf("desk%d", i)
			for j, o := range tt.orders {
				f := mustOrder(t, p, desk, o)
				if got, want := f.RealisedPnL, tt.wantGains[j]; got != want {
					t.Errorf("fill %d (%+v) realised %v, want %v", j, o, got, want)
				}
			}
			if got := mustBook(t, p, desk); !sameBook(got, tt.want) {
				t.Errorf("book\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// The paper broker's basic promise: positions and P&L right after a buy, a partial
// sell and a flatten.
func TestPaperBuyPartialSellFlatten(t *testing.T) {
	p := mustPaper(t)
	mustOrder(t, p, "main", buy("RELIANCE", 10, 2500))
	mustOrder(t, p, "main", sell("TCS", 5, 4000))
	if got, want := mustBook(t, p, "main"), (deskbot.Book{Positions: []deskbot.Position{
		pos("RELIANCE", 10, 2500, 2500, 0), pos("TCS", -5, 4000, 4000, 0)}}); !sameBook(got, want) {
		t.Fatalf("after buys: %+v, want %+v", got, want)
	}
	mustOrder(t, p, "main", sell("RELIANCE", 4, 2550))
	mustOrder(t, p, "main", buy("TCS", 1, 3950)) // moves TCS's last price to 3950
	if got, want := mustBook(t, p, "main"), (deskbot.Book{Positions: []deskbot.Position{
		pos("RELIANCE", 6, 2500, 2550, 200), pos("TCS", -4, 4000, 3950, 50)}, RealisedPnL: 250}); !sameBook(got, want) {
		t.Fatalf("after partial sell: %+v, want %+v", got, want)
	}

	got := mustFlatten(t, p, "main")
	want := deskbot.FlattenReport{Closed: []deskbot.Fill{
		{Order: sell("RELIANCE", 6, 2550), RealisedPnL: 300},
		{Order: buy("TCS", 4, 3950), RealisedPnL: 200},
	}, RealisedPnL: 500}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("flatten\n got %+v\nwant %+v", got, want)
	}
	if got, want := mustBook(t, p, "main"), (deskbot.Book{RealisedPnL: 750}); !sameBook(got, want) {
		t.Fatalf("after flatten: %+v, want %+v", got, want)
	}
	if got := mustFlatten(t, p, "main"); len(got.Closed) != 0 || got.RealisedPnL != 0 {
		t.Fatalf("second flatten closed %+v, want an empty report", got)
	}

	trades, err := p.Trades(t.Context(), "main", 10)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(trades), 6; got != want {
		t.Fatalf("journal has %d trades, want %d: %+v", got, want, trades)
	}
	if got, want := trades[5].Fill, want.Closed[1]; got != want || !trades[5].At.Equal(t0) {
		t.Errorf("last journal entry %+v at %v, want %+v at %v", got, trades[5].At, want, t0)
	}
}

func TestPaperFlattenEmptyDesk(t *testing.T) {
	p := mustPaper(t)
	if got := mustFlatten(t, p, "idle"); len(got.Closed) != 0 || got.RealisedPnL != 0 {
		t.Fatalf("flatten of an empty desk = %+v, want an empty report", got)
	}
}

func TestPaperDesksAreIndependent(t *testing.T) {
	p := mustPaper(t)
	mustOrder(t, p, "alpha", buy("INFY", 10, 100))
	mustOrder(t, p, "beta", sell("INFY", 3, 120))
	mustFlatten(t, p, "beta")
	// One market for both desks: alpha's last price is where beta traded.
	if got, want := mustBook(t, p, "alpha"), (deskbot.Book{Positions: []deskbot.Position{pos("INFY", 10, 100, 120, 0)}}); !sameBook(got, want) {
		t.Errorf("alpha %+v, want %+v", got, want)
	}
	if got, want := mustBook(t, p, "beta"), (deskbot.Book{}); !sameBook(got, want) {
		t.Errorf("beta %+v, want %+v", got, want)
	}
}

func TestPaperConcurrentOrdersLoseNothing(t *testing.T) {
	// One market price for the whole test: orders placed at once must not
	// race to move it (a following market would let one buy see another's
	// price).
	p, tape := mustMarket(t)
	tape.Set("NIFTY", 100)
	const n = 50
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for i := range n {
		wg.Go(func() {
			// Every buy of 2 is matched by a sell of 1, each at limits that
			// fill at the market, interleaved arbitrarily; only a lost
			// update changes the final quantity.
			if _, err := p.PlaceOrder(t.Context(), "busy", deskbottest.NewKey(), buy("NIFTY", 2, float64(100+i))); err != nil {
				errs <- err
			}
			if _, err := p.PlaceOrder(t.Context(), "busy", deskbottest.NewKey(), sell("NIFTY", 1, float64(100-i))); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	b := mustBook(t, p, "busy")
	if len(b.Positions) != 1 || b.Positions[0].Quantity != n {
		t.Fatalf("after %d concurrent buy-2/sell-1 pairs the book is %+v, want NIFTY quantity %d", n, b, n)
	}
	trades, err := p.Trades(t.Context(), "busy", 1000)
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, tr := range trades {
		sum += tr.RealisedPnL
	}
	if got, want := len(trades), 2*n; got != want {
		t.Errorf("journal has %d fills, want %d", got, want)
	}
	if got, want := b.RealisedPnL, deskbot.RoundPaise(sum); got != want {
		t.Errorf("book realised %v, journal fills add up to %v", got, want)
	}
}

func TestPaperInvalidOrdersChangeNothing(t *testing.T) {
	p := mustPaper(t)
	mustOrder(t, p, "main", buy("RELIANCE", 10, 100))
	before := mustBook(t, p, "main")
	tests := []struct {
		name string
		o    deskbot.Order
	}{
		{"empty symbol", buy("  ", 1, 100)},
		{"symbol with a space", buy("TATA MOTORS", 1, 100)},
		{"symbol padded, not trimmed", buy(" RELIANCE ", 1, 100)},
		{"symbol lower case, not upper-cased", buy("reliance", 1, 100)},
		{"symbol too long", buy("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", 1, 100)},
		{"side upper-case", deskbot.Order{Symbol: "RELIANCE", Side: "BUY", Quantity: 1, Price: 100}},
		{"side unknown", deskbot.Order{Symbol: "RELIANCE", Side: "short", Quantity: 1, Price: 100}},
		{"quantity zero", sell("RELIANCE", 0, 100)},
		{"quantity negative", sell("RELIANCE", -5, 100)},
		{"quantity NaN", sell("RELIANCE", math.NaN(), 100)},
		{"quantity infinite", sell("RELIANCE", math.Inf(1), 100)},
		{"price zero", sell("RELIANCE", 1, 0)},
		{"price negative", sell("RELIANCE", 1, -100)},
		{"price NaN", sell("RELIANCE", 1, math.NaN())},
		{"notional overflows", buy("RELIANCE", 1e200, 1e200)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := p.PlaceOrder(t.Context(), "main", deskbottest.NewKey(), tt.o)
			if got, want := deskbot.ErrorCode(err), deskbot.EINVALID; got != want {
				t.Fatalf("PlaceOrder(%+v) error %v (code %q), want code %q", tt.o, err, got, want)
			}
			if got := mustBook(t, p, "main"); !reflect.DeepEqual(got, before) {
				t.Errorf("book changed to %+v, was %+v", got, before)
			}
		})
	}
	if trades, _ := p.Trades(t.Context(), "main", 100); len(trades) != 1 {
		t.Errorf("journal has %d fills, want only the one valid order", len(trades))
	}
}

func TestPaperPositionOverflowIsRefused(t *testing.T) {
	p := mustPaper(t)
	mustOrder(t, p, "main", buy("X", 1e308, 1))
	_, err := p.PlaceOrder(t.Context(), "main", deskbottest.NewKey(), buy("X", 1e308, 1))
	if got, want := deskbot.ErrorCode(err), deskbot.EINVALID; got != want {
		t.Fatalf("second huge buy: error %v, want code %q", err, want)
	}
	if got := mustBook(t, p, "main"); len(got.Positions) != 1 || got.Positions[0].Quantity != 1e308 {
		t.Errorf("book after refused order %+v, want the first fill only", got)
	}
}

// Quantities and prices of any size must read back exactly in Redis and in
// the embedded Redis the service runs on by default, whose Lua reads neither
// "1e+22" nor "1e-07" as a number.
func TestPaperExactNumbersOnEveryRedis(t *testing.T) {
	for _, embedded := range []bool{false, true} {
		t.Run(fmt.Sprintf("embedded=%v", embedded), func(t *testing.T) {
			s := storetest.MustOpen(t)
			if embedded {
				s = storetest.MustOpenEmbedded(t)
			}
			p := newFollowing(s)
			for i, q := range []float64{1e-7, 1e5, 1e22, 1e300, 0.1, 123456789.123} {
				sym := fmt.Sprintf("S%d", i)
				mustOrder(t, p, "main", buy(sym, q, 1e-3))
				mustOrder(t, p, "main", buy(sym, q, 1e-3)) // reads the stored position back
				b := mustBook(t, p, "main")
				if got := b.Positions[len(b.Positions)-1]; got.Symbol != sym || got.Quantity != 2*q || got.AvgPrice != 1e-3 {
					t.Errorf("after two buys of %v %s: %+v", q, sym, got)
				}
			}
			mustOrder(t, p, "main", buy("BIG", 1.7e308, 1))
			if _, err := p.PlaceOrder(t.Context(), "main", deskbottest.NewKey(), buy("BIG", 1.7e308, 1)); deskbot.ErrorCode(err) != deskbot.EINVALID {
				t.Errorf("an order that overflows the position: %v, want it refused", err)
			}
			trades, err := p.Trades(t.Context(), "main", 100)
			if err != nil || len(trades) != 13 || trades[11].Quantity != 123456789.123 {
				t.Errorf("journal: %d trades, %v", len(trades), err)
			}
		})
	}
}

// The journal lists a flatten's closing fills in the report's order (by
// symbol) however Redis keeps the book: a book of many symbols is a hash
// without order.
func TestPaperFlattenJournalBySymbol(t *testing.T) {
	p := mustPaper(t)
	const n = 150
	for i := n; i > 0; i-- {
		mustOrder(t, p, "main", buy(fmt.Sprintf("S%03d", i), 1, 1))
	}
	r := mustFlatten(t, p, "main")
	trades, err := p.Trades(t.Context(), "main", n)
	if err != nil {
		t.Fatal(err)
	}
	if len(trades) != n || len(r.Closed) != n {
		t.Fatalf("journal %d, report %d, want %d each", len(trades), len(r.Closed), n)
	}
	for i, tr := range trades {
		if tr.Fill != r.Closed[i] {
			t.Fatalf("journal entry %d is %+v, report says %+v", i, tr.Fill, r.Closed[i])
		}
	}
}
