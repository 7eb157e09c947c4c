package deskbottest

import (
	"sync"
	"time"
)

// Clock is the fake clock tests inject wherever the service takes a
// deskbot.Now: it stands still until a test moves it, so what a test reads
// (a time shown in India time, a lapse, a day's count) never depends on
// how fast the machine is. Safe for concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock is a clock standing at t.
func NewClock(t time.Time) *Clock { return &Clock{now: t} }

// Now is the clock's time; pass the method value as a deskbot.Now.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// Add moves the clock on by d.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// FixedNow is where desk tests' clocks start: Friday 4 December 2026,
// 10:30 India time, a trading day.
var FixedNow = time.Date(2026, 12, 4, 5, 0, 0, 0, time.UTC)
