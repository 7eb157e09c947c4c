package bot

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/deskbot/deskbot"
)

// pollClock records when the long poll last showed signs of life: when it
// started and after each getUpdates that Telegram answered. Zero means it
// is not polling.
type pollClock struct{ at atomic.Int64 } // unix nanoseconds

func (c *pollClock) start() { c.at.Store(time.Now().UnixNano()) }
func (c *pollClock) ok()    { c.at.Store(time.Now().UnixNano()) }
func (c *pollClock) stop()  { c.at.Store(0) }

func (c *pollClock) last() time.Time {
	if n := c.at.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// LastPoll is when the long poll last got an answer from Telegram (or
// started); zero when the bot is not polling. Safe on a nil Bot.
func (b *Bot) LastPoll() time.Time {
	if b == nil || b.poll == nil {
		return time.Time{}
	}
	return b.poll.alive.last()
}

// PollingAlive returns nil when the long poll is running and Telegram
// answered it recently. An answer comes at least every PollTimeout even
// when nothing happens, and a hung request is abandoned 15s past it, so
// silence longer than PollTimeout plus a minute means polling is stuck or
// Telegram unreachable.
func (b *Bot) PollingAlive(now time.Time) error {
	last := b.LastPoll()
	if last.IsZero() {
		return deskbot.Errorf(deskbot.EUNAVAILABLE, "Telegram polling is not running")
	}
	if age := now.Sub(last); age > b.cfg.PollTimeout+time.Minute {
		return deskbot.Errorf(deskbot.EUNAVAILABLE, "Telegram has not answered a poll for %s", age.Round(time.Second))
	}
	return nil
}

// RunOutbox delivers the events still waiting in the stream until ctx ends.
// It is for a final flush after Run has returned, never alongside Run: one
// outbox reads the stream at a time.
func (b *Bot) RunOutbox(ctx context.Context) error { return b.outbox.Run(ctx) }

// Flush delivers the events still waiting for the chat (outcomes of the
// calls that just finished, the desks' last words) until none is left or
// ctx ends, so the team sees them before the service goes away rather than
// at the next start. Like RunOutbox, only after Run has returned.
func (b *Bot) Flush(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = b.RunOutbox(ctx) }()
	defer func() { cancel(); <-done }()
	for {
		p, u, err := b.deps.Events.EventBacklog(ctx, b.outbox.cfg.Group)
		if err == nil && p == 0 && u == 0 {
			return
		}
		select {
		case <-ctx.Done():
			b.log.Warn("outbox not empty at stop; the rest is delivered at the next start", "pending", p, "undelivered", u)
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
}
