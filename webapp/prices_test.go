package webapp

import (
	"context"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
)

// market is the hub as the page reads it: a last price with its time, none,
// or no answer until the read gives up (a standby's hub is not running).
type market struct {
	deskbot.Market
	p    deskbot.Price
	ok   bool
	hang bool
}

func (m market) LastPrice(ctx context.Context, _ string) (deskbot.Price, bool, error) {
	if m.hang {
		<-ctx.Done()
		return deskbot.Price{}, false, ctx.Err()
	}
	return m.p, m.ok, nil
}

// The page shows a position's last price from the market with its age,
// stale when older than PRICE_MAX_AGE, and the book's price marked as the
// broker's when the market has none or does not answer within 2 s.
func TestPositionLastPrice(t *testing.T) {
	now := time.Date(2026, 12, 4, 14, 2, 0, 0, deskbot.IST)
	pos := deskbot.Position{Symbol: "INFY", Quantity: 5, LastPrice: 1500}
	for _, tt := range []struct {
		name string
		m    deskbot.Market
		want string
	}{
		{"fresh", market{p: deskbot.Price{Value: 1604.35, At: now.Add(-12 * time.Second)}, ok: true}, "1,604.35 · 12 s ago"},
		{"stale", market{p: deskbot.Price{Value: 1604.35, At: now.Add(-3 * time.Minute)}, ok: true}, "1,604.35 · stale, 3 min old"},
		{"none", market{}, "1,500.00 · broker's"},
		{"no market", nil, "1,500.00 · broker's"},
		{"hung", market{hang: true}, "1,500.00 · broker's"},
	} {
		s, err := New(Config{URL: "https://desks.example.com/desks/", Token: "t", Now: func() time.Time { return now }, PriceMaxAge: time.Minute},
			Deps{Market: tt.m}, nil)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		ctx, cancel := context.WithTimeout(t.Context(), marketWait)
		defer cancel()
		if got := s.positionLast(ctx, pos); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
		if took := time.Since(start); took > 4*time.Second {
			t.Errorf("%s: took %v; want 2s at most", tt.name, took)
		}
	}
}
