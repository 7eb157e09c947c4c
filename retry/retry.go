package retry

import (
	"context"
	"time"
)

// Backoff is the one capped exponential wait between retries of anything
// that failed (a Redis read, a Telegram send, a model that is down): each
// Next doubles the wait from Min up to Max; Reset starts again after a
// success. The zero value waits 1s up to a minute. Not safe for concurrent
// use: each retry loop owns its own.
type Backoff struct {
	Min, Max time.Duration
	cur      time.Duration
}

// Next returns the wait before the next try and doubles the one after it.
func (b *Backoff) Next() time.Duration {
	lo, hi := b.Min, b.Max
	if lo <= 0 {
		lo = time.Second
	}
	if hi < lo {
		hi = max(lo, time.Minute)
	}
	if b.cur < lo {
		b.cur = lo
	}
	d := b.cur
	b.cur = min(2*b.cur, hi)
	return d
}

// Reset makes the next wait Min again.
func (b *Backoff) Reset() { b.cur = 0 }

// Sleep waits d, or less when ctx ends first, and then returns ctx's error.
// Every wait in the service goes through a context so that a stop is never
// held up by a retry.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Within runs fn under ctx bounded by d and waits for it at most d, even
// when fn ignores its context (a hung broker): for a read its caller can
// do without, such as the words beside a held call. An fn still running at
// d goes on alone and its result is dropped; err is then
// context.DeadlineExceeded (or ctx's own error).
//
// Only the bound or ctx ends the wait: fn's own return never cancels the
// context waited on, so a prompt answer is never taken for a timeout (with
// both cases ready, select would pick either).
func Within[T any](ctx context.Context, d time.Duration, fn func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel() // fn, if still running, is told to stop: nobody waits for it
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := fn(ctx)
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		select {
		case r := <-done: // answered at the bound
			return r.v, r.err
		default:
		}
		var zero T
		return zero, ctx.Err()
	}
}
