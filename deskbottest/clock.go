package deskbottest

import (
	"context"
	"sync"
	"time"
)

// Clock is the fake clock tests inject wherever the service takes a
// deskbot.Now: it stands still until a test moves it, so what a test reads
// (a time shown in India time, a lapse, a day's count) never depends on
// how fast the machine is. A test of a paced workload (a burst at a
// broker's rate limits) may instead set it running faster than real time
// (Run), so the pace is kept by the clock without being waited out. Safe
// for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
	// speed is how many times faster than real time the clock runs
	// since the real time at; 0 stands still.
	speed int
	at    time.Time
	// slept is how far Sleep moved the clock on in all; yield is how long
	// each Sleep also waits in real time (SetYield).
	slept time.Duration
	yield time.Duration
}

// NewClock is a clock standing at t.
func NewClock(t time.Time) *Clock { return &Clock{now: t} }

// Now is the clock's time; pass the method value as a deskbot.Now.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nowLocked()
}

func (c *Clock) nowLocked() time.Time {
	if c.speed == 0 {
		return c.now
	}
	return c.now.Add(time.Since(c.at) * time.Duration(c.speed))
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now, c.at = t, time.Now()
}

// Add moves the clock on by d.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now, c.at = c.nowLocked().Add(d), time.Now()
}

// SetYield has each Sleep also wait d in real time, so a retry loop on a
// clock standing still cannot spin the CPU.
func (c *Clock) SetYield(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.yield = d
}

// Slept is how far Sleep has moved the clock standing still on, in all: a
// test of pacing or backoff reads how long the service waited.
func (c *Clock) Slept() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.slept
}

// Run sets the clock running, speed times faster than real time, from the
// time it shows. Everything that happens in real time (a request's round
// trip, a goroutine's turn) takes speed times as long by the clock, so
// work done side by side keeps its order and overlap: a rate limit is
// kept, and checked, as it is in real time, only sooner.
func (c *Clock) Run(speed int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now, c.at, c.speed = c.nowLocked(), time.Now(), max(speed, 0)
}

// Sleep waits until d has passed by the clock, or ctx ends (its error is
// returned); pass the method value where the service takes a sleep. On a
// clock standing still it moves the clock on by d at once; on a running
// clock it waits d/speed in real time.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d <= 0 {
		return nil
	}
	c.mu.Lock()
	speed, yield := c.speed, c.yield
	if speed == 0 {
		c.now = c.now.Add(d)
		c.slept += d
		c.mu.Unlock()
		if yield > 0 {
			time.Sleep(yield)
		}
		return nil
	}
	c.mu.Unlock()
	t := time.NewTimer(d / time.Duration(speed))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// FixedNow is where desk tests' clocks start: Friday 4 December 2026,
// 10:30 India time, a trading day.
var FixedNow = time.Date(2026, 12, 4, 5, 0, 0, 0, time.UTC)
