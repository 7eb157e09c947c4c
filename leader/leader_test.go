package leader_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/deskbot/deskbot/leader"
)

// memLease is the lease as Redis keeps it, on the bubble's clock: a unit
// test of the election loop around it (store/lease_test.go tests the real
// one).
type memLease struct {
	mu      sync.Mutex
	holder  int64
	who     string // the holder's identity
	expires time.Time
	next    int64
	down    bool // Redis unreachable
}

var errDown = errors.New("redis: connection refused")

func (l *memLease) TakeLease(_ context.Context, ttl time.Duration, who string) (int64, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.down {
		return 0, false, errDown
	}
	held := l.holder != 0 && time.Now().Before(l.expires)
	if held && (who == "" || who != l.who) {
		return 0, false, nil
	}
	l.next++
	l.holder, l.who, l.expires = l.next, who, time.Now().Add(ttl)
	return l.holder, held, nil
}

func (l *memLease) RenewLease(_ context.Context, token int64, ttl time.Duration) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.down {
		return false, errDown
	}
	if l.holder != token || !time.Now().Before(l.expires) {
		return false, nil
	}
	l.expires = time.Now().Add(ttl)
	return true, nil
}

func (l *memLease) ReleaseLease(_ context.Context, token int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.down {
		return errDown
	}
	if l.holder == token {
		l.holder = 0
	}
	return nil
}

// lapsesAt is when another process could take the lease.
func (l *memLease) lapsesAt() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.expires
}

func (l *memLease) setDown(down bool) {
	l.mu.Lock()
	l.down = down
	l.mu.Unlock()
}

const ttl = 10 * time.Second

func mustLead(t *testing.T, e *leader.Elector) *leader.Term {
	t.Helper()
	term, err := e.TryAcquire(t.Context())
	if err != nil || term == nil {
		t.Fatalf("TryAcquire = %v, %v; want a term", term, err)
	}
	return term
}

// A leader that renews keeps its term for as long as it runs; a second
// process stays standby meanwhile.
func TestLeaderKeepsItsTerm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &memLease{}
		a := &leader.Elector{Lease: l, TTL: ttl}
		term := mustLead(t, a)
		defer term.Release(t.Context())
		b := &leader.Elector{Lease: l, TTL: ttl}
		ctx, cancel := context.WithTimeout(t.Context(), 10*ttl)
		defer cancel()
		if got, err := b.Campaign(ctx); got != nil || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("a standby took the lease from a live leader: %v, %v", got, err)
		}
		if !term.Valid() || term.Context().Err() != nil {
			t.Errorf("after ten leases the leader's term ended: %v", context.Cause(term.Context()))
		}
	})
}

// A leader that cannot reach Redis stops acting (its context ends with
// ErrLost) a quarter of the lease before the lease could lapse, so no
// standby can lead while it still acts.
func TestLeaderStepsDownBeforeLeaseLapses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &memLease{}
		term := mustLead(t, &leader.Elector{Lease: l, TTL: ttl})
		time.Sleep(3 * time.Second) // a renewal at 2.5s
		l.setDown(true)
		lapses := l.lapsesAt()
		<-term.Context().Done()
		if cause := context.Cause(term.Context()); !errors.Is(cause, leader.ErrLost) {
			t.Errorf("term ended with %v, want ErrLost", cause)
		}
		if margin := time.Until(lapses); margin < ttl/4 {
			t.Errorf("the leader stopped %v before the lease lapses, want at least %v", margin, ttl/4)
		}
		if term.Valid() {
			t.Error("an ended term is valid")
		}
	})
}

// A renewal Redis refuses (another process holds the lease) ends the term at
// once.
func TestLeaderRefusedRenewalEndsTerm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &memLease{}
		term := mustLead(t, &leader.Elector{Lease: l, TTL: ttl})
		l.mu.Lock()
		l.holder = 99 // an operator deleted the key and another took it
		l.mu.Unlock()
		start := time.Now()
		<-term.Context().Done()
		if took := time.Since(start); took > ttl/4 {
			t.Errorf("the term ended %v after the lease passed on, want within one renewal (%v)", took, ttl/4)
		}
		if cause := context.Cause(term.Context()); !errors.Is(cause, leader.ErrLost) {
			t.Errorf("cause %v, want ErrLost", cause)
		}
	})
}

// A standby takes over within the lease (plus one retry step) of the
// leader's death, and at once (one retry step) after a release.
func TestStandbyTakesOver(t *testing.T) {
	for _, tt := range []struct {
		name   string
		stop   func(term *leader.Term, l *memLease)
		within time.Duration
	}{
		{"death", func(term *leader.Term, l *memLease) {
			// A killed process renews nothing: stop its renewals by
			// making its token stale to it only.
			term.Abandon()
		}, ttl + ttl/10},
		{"release", func(term *leader.Term, _ *memLease) { term.Release(context.Background()) }, ttl / 10},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := &memLease{}
				a := &leader.Elector{Lease: l, TTL: ttl}
				term := mustLead(t, a)
				var took atomic.Int64
				done := make(chan *leader.Term)
				go func() {
					time.Sleep(4 * time.Second)
					tt.stop(term, l)
					start := time.Now()
					next, _ := (&leader.Elector{Lease: l, TTL: ttl}).Campaign(t.Context())
					took.Store(int64(time.Since(start)))
					done <- next
				}()
				next := <-done
				defer next.Release(t.Context())
				if next.Token() <= term.Token() {
					t.Errorf("new token %d not above %d", next.Token(), term.Token())
				}
				if got := time.Duration(took.Load()); got > tt.within {
					t.Errorf("took over %v after the leader's %s, want within %v", got, tt.name, tt.within)
				}
			})
		})
	}
}

// A leader paused past its lease (SIGSTOP) is not valid the moment it runs
// again, before its timers have fired.
func TestPausedLeaderIsNotValid(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var skew atomic.Int64
		now := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
		term := mustLead(t, &leader.Elector{Lease: &memLease{}, TTL: ttl, Now: now})
		defer term.Release(t.Context())
		if !term.Valid() {
			t.Fatal("a fresh term is not valid")
		}
		skew.Store(int64(2 * ttl)) // the clock moved on while the process was stopped
		if term.Valid() {
			t.Error("a term paused past its lease still reads valid")
		}
	})
}

// A process restarted after its predecessor died (it carries the same
// holder identity, which only one live process can) leads at once, with
// a new token, instead of waiting out the dead one's lease; a process of
// another identity, or of none, still waits.
func TestLeaderTakesOverFromItsDeadPredecessor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &memLease{}
		self := func() string { return "host=h dir=/data id=x" }
		dead := mustLead(t, &leader.Elector{Lease: l, TTL: ttl, Holder: self})
		dead.Abandon() // kill -9: the lease stays in Redis
		for _, other := range []func() string{nil, func() string { return "host=h dir=/other id=y" }} {
			if term, err := (&leader.Elector{Lease: l, TTL: ttl, Holder: other}).TryAcquire(t.Context()); err != nil || term != nil {
				t.Fatalf("another identity's TryAcquire = %v, %v; want standby", term, err)
			}
		}
		start := time.Now()
		next := mustLead(t, &leader.Elector{Lease: l, TTL: ttl, Holder: self})
		defer next.Release(t.Context())
		if waited := time.Since(start); waited != 0 {
			t.Errorf("the successor waited %v to lead, want no wait", waited)
		}
		if next.Token() == dead.Token() {
			t.Errorf("the successor leads with the dead term's token %d", next.Token())
		}
	})
}
