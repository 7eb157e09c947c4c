package deskbottest

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestClockSleepMovesAStandingClock(t *testing.T) {
	c := NewClock(FixedNow)
	if err := c.Sleep(t.Context(), 90*time.Second); err != nil {
		t.Fatal(err)
	}
	if got, want := c.Now(), FixedNow.Add(90*time.Second); !got.Equal(want) {
		t.Errorf("after Sleep(90s) the clock reads %v, want %v", got, want)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := c.Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep with its context ended: %v, want context.Canceled", err)
	}
	if got, want := c.Now(), FixedNow.Add(90*time.Second); !got.Equal(want) {
		t.Errorf("a Sleep whose context had ended moved the clock to %v, want it at %v", got, want)
	}
}

func TestRunningClockMovesOnItsOwnAndSleepsByIt(t *testing.T) {
	c := NewClock(FixedNow)
	c.Run(100)
	Eventually(t, "the running clock a minute on", func() bool { return !c.Now().Before(FixedNow.Add(time.Minute)) })
	before := c.Now()
	if err := c.Sleep(t.Context(), 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if slept := c.Now().Sub(before); slept < 30*time.Second {
		t.Errorf("Sleep(30s) returned after %v by the clock", slept)
	}
	c.Add(time.Hour)
	if got := c.Now().Sub(before); got < time.Hour {
		t.Errorf("Add(1h) on a running clock: %v on, want at least an hour", got)
	}
}

// Sleep on a clock standing still moves it on and counts what it slept.
func TestClockSleptCountsSleeps(t *testing.T) {
	start := time.Date(2026, 3, 2, 3, 30, 0, 0, time.UTC)
	c := NewClock(start)
	c.SetYield(time.Microsecond)
	for _, d := range []time.Duration{time.Second, 0, 2 * time.Second} {
		if err := c.Sleep(t.Context(), d); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := c.Slept(), 3*time.Second; got != want {
		t.Errorf("Slept = %v; want %v", got, want)
	}
	if got, want := c.Now(), start.Add(3*time.Second); !got.Equal(want) {
		t.Errorf("Now = %v; want %v", got, want)
	}
}
