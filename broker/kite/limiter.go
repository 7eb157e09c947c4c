package kite

import (
	"context"
	"sync"
	"time"
)

// rule allows n calls in any window d.
type rule struct {
	n int
	d time.Duration
}

// limiter keeps calls within Kite's rate limits before they are sent. Kite
// counts a call when it arrives; this side cannot see that moment, so a
// call holds its slot from the moment it is sent until d after its answer
// arrived. The arrival lies between the two, so no window of d at Kite can
// hold more than n calls, however late a request travels — which a token
// bucket timed on sending cannot promise. The price is throughput a little
// below n per d (the answer's latency). Safe for concurrent use.
type limiter struct {
	now   func() time.Time
	sleep func(context.Context, time.Duration) error
	rules []rule
	span  time.Duration // the longest window

	mu    sync.Mutex
	busy  int         // calls sent, not yet answered
	ends  []time.Time // answer times within span, oldest first
	freed chan struct{}
}

func newLimiter(now func() time.Time, sleep func(context.Context, time.Duration) error, rules ...rule) *limiter {
	l := &limiter{now: now, sleep: sleep, rules: rules, freed: make(chan struct{})}
	for _, r := range rules {
		l.span = max(l.span, r.d)
	}
	return l
}

// acquire waits for a slot; the caller must call release once answered.
func (l *limiter) acquire(ctx context.Context) (release func(), err error) {
	for {
		l.mu.Lock()
		now := l.now()
		wait, ok := l.checkLocked(now)
		if ok {
			l.busy++
			l.mu.Unlock()
			var once sync.Once
			return func() { once.Do(l.release) }, nil
		}
		freed := l.freed
		l.mu.Unlock()
		if wait > 0 {
			if err := l.sleep(ctx, wait); err != nil {
				return nil, err
			}
			continue
		}
		// Every slot is held by a call still in flight: only its answer
		// starts the clock that frees it.
		select {
		case <-freed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// checkLocked says whether a call may go now, or how long to wait (0: until
// an in-flight call is answered).
func (l *limiter) checkLocked(now time.Time) (wait time.Duration, ok bool) {
	i := 0
	for i < len(l.ends) && now.Sub(l.ends[i]) >= l.span {
		i++
	}
	l.ends = l.ends[i:]
	ok = true
	for _, r := range l.rules {
		first := len(l.ends)
		for j, e := range l.ends {
			if now.Sub(e) < r.d {
				first = j
				break
			}
		}
		recent := l.ends[first:]
		over := l.busy + len(recent) - r.n + 1 // slots to free before sending
		if over <= 0 {
			continue
		}
		ok = false
		if over > len(recent) {
			return 0, false
		}
		wait = max(wait, recent[over-1].Add(r.d).Sub(now))
	}
	return wait, ok
}

func (l *limiter) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.busy--
	l.ends = append(l.ends, l.now())
	close(l.freed)
	l.freed = make(chan struct{})
}
