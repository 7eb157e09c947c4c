package store_test

import (
	"sync"
	"testing"

	"github.com/deskbot/deskbot/store"
)

// Orders put forward at once all add to the day's notional, per desk and
// day, on every Redis the service runs on.
func TestDayNotionalAddsEveryOrder(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		if got, err := s.DayNotional(ctx, "alpha", "2026-11-30"); err != nil || got != 0 {
			t.Fatalf("a quiet day = %v, %v; want 0", got, err)
		}
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() {
				if _, err := s.AddDayNotional(ctx, "alpha", "2026-11-30", 50000.25); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if _, err := s.AddDayNotional(ctx, "beta", "2026-11-30", 7); err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			desk, day string
			want      float64
		}{
			{"alpha", "2026-11-30", 1000005},
			{"beta", "2026-11-30", 7},
			{"alpha", "2026-12-01", 0},
		}
		for _, tt := range tests {
			if got, err := s.DayNotional(ctx, tt.desk, tt.day); err != nil || got != tt.want {
				t.Errorf("DayNotional(%s, %s) = %v, %v; want %v", tt.desk, tt.day, got, err, tt.want)
			}
		}
	})
}
