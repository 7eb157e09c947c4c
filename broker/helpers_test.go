package broker_test

import (
	"math"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/store/storetest"
	"github.com/redis/go-redis/v9"
)

var t0 = time.Date(2025, 3, 3, 9, 15, 0, 0, deskbot.IST)

// mustPaper is a paper broker on the test binary's Redis (see storetest)
// under a prefix of its own, deleted when the test ends.
func mustPaper(t testing.TB) *broker.Paper {
	t.Helper()
	rdb, key := mustRedis(t)
	return broker.NewPaper(rdb, key, func() time.Time { return t0 })
}

// mustRedis is the test binary's Redis under a key prefix of this test's
// own, whose keys are deleted when the test ends.
func mustRedis(t testing.TB) (redis.UniversalClient, func(parts ...string) string) {
	t.Helper()
	s := storetest.MustOpen(t)
	return s.Client(), s.Key
}

func mustOrder(t testing.TB, p *broker.Paper, desk string, o deskbot.Order) deskbot.Fill {
	t.Helper()
	f, err := p.PlaceOrder(t.Context(), desk, o)
	if err != nil {
		t.Fatalf("PlaceOrder(%s, %+v): %v", desk, o, err)
	}
	return f
}

func mustBook(t testing.TB, p *broker.Paper, desk string) deskbot.Book {
	t.Helper()
	b, err := p.Book(t.Context(), desk)
	if err != nil {
		t.Fatalf("Book(%s): %v", desk, err)
	}
	return b
}

func mustFlatten(t testing.TB, p *broker.Paper, desk string) deskbot.FlattenReport {
	t.Helper()
	r, err := p.Flatten(t.Context(), desk)
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
