package store_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/deskbot/deskbot/store"
	"github.com/deskbot/deskbot/store/storetest"
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

// The account's orders of a day are counted across instances (two stores
// on one Redis, sending at once) up to the cap and never past it; an order
// counted before is allowed again and counted once; another day counts
// afresh.
func TestAccountOrdersCountedOnceAcrossInstancesUpToTheCap(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		other := storetest.MustReopen(t, s)
		const max, tries = 30, 50
		var mu sync.Mutex
		allowed := map[string]bool{}
		var wg sync.WaitGroup
		for i := range tries {
			st := s
			if i%2 == 1 {
				st = other
			}
			tag := fmt.Sprintf("t%d", i)
			wg.Go(func() {
				_, ok, err := st.CountAccountOrder(ctx, "2026-11-30", tag, max)
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				defer mu.Unlock()
				allowed[tag] = ok
			})
		}
		wg.Wait()
		var in, out string
		for tag, ok := range allowed {
			if ok && in == "" {
				in = tag
			}
			if !ok && out == "" {
				out = tag
			}
		}
		n := 0
		for _, ok := range allowed {
			if ok {
				n++
			}
		}
		if n != max {
			t.Fatalf("orders allowed = %d, want %d", n, max)
		}
		tests := []struct {
			name, day, tag string
			wantN          int
			wantOK         bool
		}{
			{"an order counted before, asked again", "2026-11-30", in, max, true},
			{"an order refused before", "2026-11-30", out, max, false},
			{"a new order past the cap", "2026-11-30", "fresh", max, false},
			{"the next day's first", "2026-12-01", "fresh", 1, true},
		}
		for _, tt := range tests {
			gotN, gotOK, err := other.CountAccountOrder(ctx, tt.day, tt.tag, max)
			if err != nil || gotN != tt.wantN || gotOK != tt.wantOK {
				t.Errorf("%s: CountAccountOrder = %d, %v, %v; want %d, %v", tt.name, gotN, gotOK, err, tt.wantN, tt.wantOK)
			}
		}
		if _, _, err := s.CountAccountOrder(ctx, "2026-11-30", "", max); err == nil {
			t.Error("an order without a tag was counted")
		}
	})
}
