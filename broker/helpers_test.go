package broker_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker"
	"github.com/redis/go-redis/v9"
)

var t0 = time.Date(2025, 3, 3, 9, 15, 0, 0, deskbot.IST)

// mustPaper is a paper broker on the real Redis under a prefix of its own,
// deleted when the test ends.
func mustPaper(t testing.TB) *broker.Paper {
	t.Helper()
	rdb, key := mustRedis(t)
	return broker.NewPaper(rdb, key, func() time.Time { return t0 })
}

// mustRedis connects to REDIS_URL (default redis://127.0.0.1:6379) and gives
// a key function under a random prefix whose keys are deleted when the test
// ends. Redis is shared with other tests running at once: never flush it.
// Without Redis the test is skipped, unless DESKBOT_REQUIRE_REDIS=1.
func mustRedis(t testing.TB) (*redis.Client, func(parts ...string) string) {
	t.Helper()
	url := os.Getenv("REDIS_URL")
	if url == "" {
		url = "redis://127.0.0.1:6379"
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatalf("REDIS_URL is not a redis:// URL")
	}
	opts.DisableIdentity = true
	rdb := redis.NewClient(opts)
	if err := rdb.Ping(t.Context()).Err(); err != nil {
		rdb.Close()
		if os.Getenv("DESKBOT_REQUIRE_REDIS") == "1" {
			t.Fatalf("redis required (DESKBOT_REQUIRE_REDIS=1) but unreachable: %v", err)
		}
		t.Skipf("redis unreachable, skipping (set DESKBOT_REQUIRE_REDIS=1 to fail instead): %v", err)
	}
	b := make([]byte, 8)
	rand.Read(b)
	prefix := "deskbot-test:" + hex.EncodeToString(b) + ":"
	t.Cleanup(func() {
		ctx := context.Background() // the test's context is already cancelled
		var keys []string
		iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		err := iter.Err()
		if err == nil && len(keys) > 0 {
			err = rdb.Unlink(ctx, keys...).Err()
		}
		if err != nil {
			t.Errorf("clean up keys under %s: %v", prefix, err)
		}
		rdb.Close()
	})
	return rdb, func(parts ...string) string { return prefix + strings.Join(parts, ":") }
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
