package broker_test

import (
	"context"
	"github.com/deskbot/deskbot/deskbottest"
	"math"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/broker/brokertest"
	"github.com/deskbot/deskbot/store"
	"github.com/deskbot/deskbot/store/storetest"
)

var t0 = time.Date(2025, 3, 3, 9, 15, 0, 0, deskbot.IST)

// mustPaper is a paper broker on the test binary's Redis (see storetest)
// under a prefix of its own, deleted when the test ends, whose market
// moves to each order's price just before the order arrives: the tests of
// the book's arithmetic choose their fill prices that way. The market's
// own rules are tested over a tape the test moves (mustMarket).
func mustPaper(t testing.TB) *following {
	t.Helper()
	return newFollowing(mustStore(t))
}

func newFollowing(st deskbot.OrderStore) *following {
	tp := &brokertest.Quotes{}
	return &following{Paper: broker.NewPaperMarket(st, func() time.Time { return t0 }, tp), tape: tp}
}

// following is a paper broker whose market is wherever the last order
// asked.
type following struct {
	*broker.Paper
	tape *brokertest.Quotes
}

func (f *following) PlaceOrder(ctx context.Context, desk, key string, o deskbot.Order) (deskbot.PlacedOrder, error) {
	if deskbot.CheckOrder(o) == nil && o.Price > 0 {
		f.tape.Set(o.Symbol, o.Price)
	}
	return f.Paper.PlaceOrder(ctx, desk, key, o)
}

// mustMarket is a paper broker over a tape of prices the test sets.
func mustMarket(t testing.TB) (*broker.Paper, *brokertest.Quotes) {
	t.Helper()
	st := mustStore(t)
	tp := &brokertest.Quotes{}
	return broker.NewPaperMarket(st, func() time.Time { return t0 }, tp), tp
}

// mustStore is a store on the test binary's Redis under a key prefix of
// this test's own, whose keys are deleted when the test ends.
func mustStore(t testing.TB) *store.Store {
	t.Helper()
	return storetest.MustOpen(t)
}

func mustOrder(t testing.TB, p deskbot.Broker, desk string, o deskbot.Order) deskbot.Fill {
	t.Helper()
	po, err := p.PlaceOrder(t.Context(), desk, deskbottest.NewKey(), o)
	if err != nil {
		t.Fatalf("PlaceOrder(%s, %+v): %v", desk, o, err)
	}
	if po.State != deskbot.OrderComplete {
		t.Fatalf("PlaceOrder(%s, %+v) is %s, want it filled", desk, o, po.State)
	}
	// The fill is the journal's last entry, with the P&L it realised.
	trades, err := p.Trades(t.Context(), desk, 1)
	if err != nil || len(trades) != 1 {
		t.Fatalf("journal after PlaceOrder: %v %v", trades, err)
	}
	return trades[0].Fill
}

func mustBook(t testing.TB, p deskbot.Broker, desk string) deskbot.Book {
	t.Helper()
	b, err := p.Book(t.Context(), desk)
	if err != nil {
		t.Fatalf("Book(%s): %v", desk, err)
	}
	return b
}

func mustFlatten(t testing.TB, p deskbot.Broker, desk string) deskbot.FlattenReport {
	t.Helper()
	r, err := p.Flatten(t.Context(), desk, deskbottest.NewKey())
	if err != nil {
		t.Fatalf("Flatten(%s): %v", desk, err)
	}
	return r
}

func buy(sym string, q, px float64) deskbot.Order {
	return deskbot.Order{Symbol: sym, Side: deskbot.Buy, Quantity: q, Price: px}
}

func sell(sym string, q, px float64) deskbot.Order {
	return deskbot.Order{Symbol: sym, Side: deskbot.Sell, Quantity: q, Price: px}
}

func pos(sym string, q, avg, last, realised float64) deskbot.Position {
	return deskbot.Position{Symbol: sym, Quantity: q, AvgPrice: avg, LastPrice: last, RealisedPnL: realised}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// sameBook compares books allowing float noise in quantities and averages.
func sameBook(got, want deskbot.Book) bool {
	if len(got.Positions) != len(want.Positions) || got.RealisedPnL != want.RealisedPnL {
		return false
	}
	for i, g := range got.Positions {
		w := want.Positions[i]
		if g.Symbol != w.Symbol || !near(g.Quantity, w.Quantity) || !near(g.AvgPrice, w.AvgPrice) ||
			g.LastPrice != w.LastPrice || g.RealisedPnL != w.RealisedPnL {
			return false
		}
	}
	return true
}
