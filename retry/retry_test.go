package retry_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/retry"
)

func TestBackoffDoublesUpToMaxAndResets(t *testing.T) {
	b := retry.Backoff{Min: 100 * time.Millisecond, Max: time.Second}
	var got []time.Duration
	for range 6 {
		got = append(got, b.Next())
	}
	want := []time.Duration{100, 200, 400, 800, 1000, 1000}
	for i := range want {
		if got[i] != want[i]*time.Millisecond {
			t.Fatalf("waits = %v, want %v ms", got, want)
		}
	}
	b.Reset()
	if got := b.Next(); got != 100*time.Millisecond {
		t.Fatalf("after Reset: %v, want 100ms", got)
	}
}

func TestBackoffZeroValue(t *testing.T) {
	var b retry.Backoff
	if got := b.Next(); got != time.Second {
		t.Fatalf("first wait %v, want 1s", got)
	}
	for range 10 {
		b.Next()
	}
	if got := b.Next(); got != time.Minute {
		t.Fatalf("capped wait %v, want 1m", got)
	}
}

func TestSleepEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := retry.Sleep(ctx, time.Hour); err != context.Canceled {
		t.Fatalf("Sleep on a cancelled context = %v, want context.Canceled", err)
	}
	if err := retry.Sleep(context.Background(), time.Millisecond); err != nil {
		t.Fatalf("Sleep = %v", err)
	}
}

func TestValidDeskName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"main", true}, {"fno", true}, {"desk_2-b", true},
		{"", false}, {"all", false}, {"Main", false}, {"../x", false},
		{"a b", false}, {"abcdefghijklmnopqrstuvwxyz0123456", false},
	} {
		err := deskbot.ValidDeskName(tc.name)
		if got := err == nil; got != tc.ok {
			t.Errorf("ValidDeskName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

func TestWithin(t *testing.T) {
	for _, tt := range []struct {
		name    string
		sleep   time.Duration
		want    int
		wantErr error
	}{
		{"answers in time", 0, 7, nil},
		{"ignores its context past the bound", time.Second, 0, context.DeadlineExceeded},
	} {
		start := time.Now()
		got, err := retry.Within(t.Context(), 50*time.Millisecond, func(context.Context) (int, error) {
			time.Sleep(tt.sleep) // a read that ignores its context
			return 7, nil
		})
		if got != tt.want || !errors.Is(err, tt.wantErr) {
			t.Errorf("%s: Within = %d, %v; want %d, %v", tt.name, got, err, tt.want, tt.wantErr)
		}
		if took := time.Since(start); took > 500*time.Millisecond {
			t.Errorf("%s: Within waited %v; want at most its bound", tt.name, took)
		}
	}
}
