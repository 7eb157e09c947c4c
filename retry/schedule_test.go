package retry_test

import (
	"testing"
	"time"

	"github.com/deskbot/deskbot/retry"
)

// A key that failed is not due until its wait has passed, each failure in
// a row waiting longer up to Max; a success (Done) starts it again at Min;
// Keep forgets what the loop will not meet again; other keys are never
// held back by it.
func TestScheduleSpacesEachKeysTries(t *testing.T) {
	s := retry.Schedule[string]{Backoff: retry.Backoff{Min: 30 * time.Second, Max: 2 * time.Minute}}
	t0 := time.Date(2026, 12, 7, 9, 15, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }

	if !s.Due("a", t0) {
		t.Fatal("a key that never failed is not due")
	}
	for i, want := range []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 2 * time.Minute} {
		if got := s.Failed("a", t0); got != want {
			t.Fatalf("failure %d waits %v, want %v", i+1, got, want)
		}
	}
	for _, tc := range []struct {
		key  string
		at   time.Duration
		want bool
	}{
		{"a", 0, false},
		{"a", 2*time.Minute - time.Nanosecond, false},
		{"a", 2 * time.Minute, true},
		{"b", 0, true},
	} {
		if got := s.Due(tc.key, at(tc.at)); got != tc.want {
			t.Errorf("Due(%q, +%v) = %v, want %v", tc.key, tc.at, got, tc.want)
		}
	}

	s.Done("a")
	if !s.Due("a", t0) {
		t.Error("a is not due after Done")
	}
	if got := s.Failed("a", t0); got != 30*time.Second {
		t.Errorf("the first failure after Done waits %v, want Min (30s)", got)
	}

	s.Failed("b", t0)
	s.Keep(func(k string) bool { return k == "b" })
	if got, want := s.Len(), 1; got != want {
		t.Fatalf("after Keep, %d keys wait; want %d", got, want)
	}
	if !s.Due("a", t0) || s.Due("b", t0) {
		t.Errorf("after Keep(b): a due %v (want true), b due %v (want false)", s.Due("a", t0), s.Due("b", t0))
	}
}

// The template's own state never leaks into a key: a Backoff that was
// already used still starts each key at Min.
func TestScheduleStartsEachKeyAtMin(t *testing.T) {
	b := retry.Backoff{Min: time.Second, Max: time.Minute}
	b.Next()
	b.Next()
	s := retry.Schedule[int]{Backoff: b}
	if got := s.Failed(1, time.Time{}); got != time.Second {
		t.Errorf("a key's first failure waits %v, want Min (1s)", got)
	}
}
