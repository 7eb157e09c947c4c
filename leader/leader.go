// Package leader elects one leader among any number of deskbot processes on
// one Redis, through a lease with a fencing token (store/lease.go).
//
// Only the leader acts: it polls Telegram, sweeps, runs the schedules, the
// desks and the outbox. The others are standbys that keep trying to take the
// lease, every TTL/10, and so take over within the lease's lifetime (plus
// that step) of the leader's death, or at once after it released the lease
// on a graceful stop, or at once after its death when they can prove it: a
// process that holds the DATA_DIR lock its predecessor held (DirLock) finds
// the lease recorded under its own identity, and takes it over with a new
// term.
//
// A leader renews its lease every TTL/4. A Term (one leadership) is valid
// until TTL - TTL/4 after the last renewal was sent: Redis counts the lease
// from when the renewal arrived, later, so a leader stops acting at least a
// quarter of the lease before any other process can take it (two renewals
// may fail in between). When the term ends (a renewal refused, or validity
// ran out with Redis unreachable, or a pause past the lease) its context is
// cancelled with ErrLost; everything leader-only runs on that context.
//
// A pause the process does not see (SIGSTOP, a VM frozen) can outlast the
// lease: the term's context is then cancelled as soon as the process runs
// again, but a goroutine may act in between. Term.Valid closes most of that
// window; the fencing token closes the rest for the writes that matter (a
// call going to running, an interrupted call, the Telegram offset), which
// Redis refuses from a stale token. An allowed call itself is started only
// after a last check that its term is still valid and still the one that
// took it to running (gate.Run): a pause between the decision and the run
// must not run a call the next leader has already reported interrupted.
//
// A process sits in one Seat: it takes the lead at its start or campaigns
// for it, starts what only the leader runs when it wins (Seat.Lead), stops
// it at once when its term ends unasked (Seat.Lost), and at a graceful stop
// leaves (Seat.Leave), releasing its term last. Current is the term as the
// parts see it.
//
// Time: the Elector measures validity with the clock it is given (Now) and
// waits with the time package's timers, so tests run it under
// testing/synctest.
package leader

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/deskbot/deskbot"
)

// ErrLost is the cause of a term's context ending because the lease could
// not be kept.
var ErrLost = errors.New("lost the leader lease")

// ErrReleased is the cause of a term's context ending because the leader
// released its lease.
var ErrReleased = errors.New("released the leader lease")

// Lease is the leader lease in Redis (implemented by *store.Store).
type Lease interface {
	// TakeLease takes the lease, with a new term's token, if it is free or
	// held under holder (an identity one live process at a time can
	// carry: its holder is dead); 0 when another holds it. It records
	// holder with the lease, and reports whether it took it over.
	TakeLease(ctx context.Context, ttl time.Duration, holder string) (token int64, tookOver bool, err error)
	RenewLease(ctx context.Context, token int64, ttl time.Duration) (bool, error)
	ReleaseLease(ctx context.Context, token int64) error
}

// Elector takes and keeps the lease.
type Elector struct {
	Lease Lease
	TTL   time.Duration // LEADER_LEASE
	Now   deskbot.Now   // nil: time.Now
	Log   *slog.Logger  // nil: discard
	// Holder names this process to the lease (DirLock.Identity): an
	// identity only one live process can carry, the same as its dead
	// predecessor's, so that a lease found under it is taken at once. It
	// is asked at each try, and may be "" (nil: always ""): the process
	// then takes only a free lease.
	Holder func() string
}

func (e *Elector) now() time.Time {
	if e.Now == nil {
		return time.Now()
	}
	return e.Now()
}

func (e *Elector) log() *slog.Logger {
	if e.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return e.Log
}

// RenewEvery is how often a leader renews, a quarter of the lease.
func (e *Elector) RenewEvery() time.Duration { return e.TTL / 4 }

// RetryEvery is how often a standby tries to take the lease.
func (e *Elector) RetryEvery() time.Duration { return max(e.TTL/10, 10*time.Millisecond) }

// Margin is how long before the lease can lapse a leader stops acting.
func (e *Elector) Margin() time.Duration { return e.TTL / 4 }

// TryAcquire makes one attempt to take the lease. It returns nil, nil when
// another process holds it. A term returned is renewed in the background
// until it ends, by Release or by losing the lease, never by ctx ending
// (its context keeps ctx's values only): a leader keeps its lease while it
// stops gracefully, and gives it up last.
func (e *Elector) TryAcquire(ctx context.Context) (*Term, error) {
	holder := ""
	if e.Holder != nil {
		holder = e.Holder()
	}
	sent := e.now()
	tctx, cancel := context.WithTimeout(ctx, e.RenewEvery())
	token, over, err := e.Lease.TakeLease(tctx, e.TTL, holder)
	cancel()
	if err != nil || token == 0 {
		return nil, err
	}
	if over {
		e.log().Warn("took over the leader lease at once from this instance's dead predecessor (it held the DATA_DIR lock this process holds now)", "token", token, "holder", holder)
	}
	t := &Term{e: e, token: token, done: make(chan struct{})}
	t.ctx, t.cancel = context.WithCancelCause(context.WithoutCancel(ctx))
	t.validUntil = sent.Add(e.TTL - e.Margin())
	go t.keep()
	return t, nil
}

// Campaign tries to take the lease every RetryEvery until it does or ctx
// ends. A Redis error is logged once per outage and tried again.
func (e *Elector) Campaign(ctx context.Context) (*Term, error) {
	failing := false
	for {
		t, err := e.TryAcquire(ctx)
		if t != nil {
			return t, nil
		}
		if err != nil && !failing && ctx.Err() == nil {
			e.log().Warn("cannot reach the leader lease; still trying", "err", err)
		}
		failing = err != nil
		timer := time.NewTimer(e.RetryEvery())
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		case <-timer.C:
		}
	}
}

// Term is one leadership: its fencing token, and a context that ends before
// the lease can pass to another process.
type Term struct {
	e      *Elector
	token  int64
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{} // closed when keep returned

	mu         sync.Mutex
	validUntil time.Time
	released   bool
}

// Token is the term's fencing token: writes only the leader may make carry
// it, and Redis refuses them once another term began.
func (t *Term) Token() int64 { return t.token }

// Context ends when the term does, with ErrLost or ErrReleased as cause.
func (t *Term) Context() context.Context { return t.ctx }

// Valid reports whether the lease is surely still this term's: the term's
// context has not ended and its validity has not run out by the clock,
// whether or not the timer that ends it has fired yet (after a pause it
// fires late).
func (t *Term) Valid() bool {
	if t.ctx.Err() != nil {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.e.now().Before(t.validUntil)
}

// keep renews the lease every RenewEvery and ends the term when validity
// runs out or a renewal is refused.
func (t *Term) keep() {
	defer close(t.done)
	renew := time.NewTicker(t.e.RenewEvery())
	defer renew.Stop()
	for {
		t.mu.Lock()
		left := t.validUntil.Sub(t.e.now())
		t.mu.Unlock()
		if left <= 0 {
			t.lose("the lease could not be renewed in time")
			return
		}
		expiry := time.NewTimer(left)
		select {
		case <-t.ctx.Done():
			expiry.Stop()
			return
		case <-expiry.C:
			continue // checked again at the top: a renewal may have moved it
		case <-renew.C:
			expiry.Stop()
		}
		sent := t.e.now()
		ctx, cancel := context.WithTimeout(t.ctx, t.e.RenewEvery())
		ok, err := t.e.Lease.RenewLease(ctx, t.token, t.e.TTL)
		cancel()
		switch {
		case t.ctx.Err() != nil:
			return
		case err != nil:
			t.e.log().Warn("could not renew the leader lease; retrying", "err", err)
		case !ok:
			t.lose("another process holds the lease")
			return
		default:
			t.mu.Lock()
			if v := sent.Add(t.e.TTL - t.e.Margin()); v.After(t.validUntil) {
				t.validUntil = v
			}
			t.mu.Unlock()
		}
	}
}

func (t *Term) lose(why string) {
	t.e.log().Error("no longer the leader: stopping everything only the leader does", "why", why, "token", t.token)
	t.cancel(ErrLost)
}

// Release ends the term and gives the lease up at once, so a standby takes
// over without waiting for it to lapse. The context ends first: nothing
// leader-only may still be acting when another process can lead.
func (t *Term) Release(ctx context.Context) error {
	t.mu.Lock()
	if t.released {
		t.mu.Unlock()
		return nil
	}
	t.released = true
	t.mu.Unlock()
	t.cancel(ErrReleased)
	<-t.done
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), t.e.RenewEvery())
	defer cancel()
	return t.e.Lease.ReleaseLease(ctx, t.token)
}
