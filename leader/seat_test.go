package leader_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/deskbot/deskbot/leader"
)

// seat is a Seat on l whose Lead, Lost and Failed are counted.
type seat struct {
	leader.Seat
	led, lost, failed atomic.Int32
}

func newSeat(l *memLease) *seat {
	s := &seat{}
	s.Elector = &leader.Elector{Lease: l, TTL: ttl}
	s.Lead = func(*leader.Term) error { s.led.Add(1); return nil }
	s.Lost = func() { s.lost.Add(1) }
	s.Failed = func(error) { s.failed.Add(1) }
	return s
}

func mustTake(t *testing.T, s *seat, want bool) {
	t.Helper()
	leading, err := s.Take(t.Context(), t.TempDir())
	if err != nil || leading != want {
		t.Fatalf("Take = %v, %v; want %v", leading, err, want)
	}
}

// The first process leads when Take returns; a second stands by, and
// starts leading within a retry step of the first leaving and releasing
// its term; a standby that leaves never leads, and holds no term.
func TestSeatLeadsThenHandsOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &memLease{}
		a, b := newSeat(l), newSeat(l)
		mustTake(t, a, true)
		mustTake(t, b, false)
		if a.led.Load() != 1 || !a.Valid() || b.led.Load() != 0 || b.Valid() {
			t.Fatalf("after both took their seats: a led %d times (valid %v), b %d (valid %v); want a alone",
				a.led.Load(), a.Valid(), b.led.Load(), b.Valid())
		}
		time.Sleep(3 * ttl) // a keeps its lease
		term := a.Leave()
		if term == nil || !term.Valid() {
			t.Fatal("the leader left without its term, or with an ended one: nothing to finish under")
		}
		if b.led.Load() != 0 {
			t.Fatal("the standby led while the leader still held its term")
		}
		if err := term.Release(t.Context()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(ttl / 10)
		synctest.Wait()
		if b.led.Load() != 1 || !b.Valid() {
			t.Fatalf("a retry step after the release the standby led %d times (valid %v), want once", b.led.Load(), b.Valid())
		}
		c := newSeat(l)
		mustTake(t, c, false)
		if term := c.Leave(); term != nil || c.led.Load() != 0 {
			t.Errorf("a standby that left holds %v and led %d times", term, c.led.Load())
		}
		if err := b.Leave().Release(t.Context()); err != nil {
			t.Fatal(err)
		}
		if n := a.lost.Load() + b.lost.Load() + a.failed.Load() + b.failed.Load(); n != 0 {
			t.Errorf("a graceful hand-over called Lost or Failed %d times", n)
		}
	})
}

// A term that ends unasked (Redis unreachable past the renewals) has Lost
// called at once, and the seat no longer leads.
func TestSeatLostTermStopsTheLeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &memLease{}
		s := newSeat(l)
		mustTake(t, s, true)
		l.setDown(true)
		time.Sleep(ttl)
		synctest.Wait()
		if s.lost.Load() != 1 || s.Valid() {
			t.Errorf("after the lease was lost: Lost called %d times, valid %v; want once, not valid", s.lost.Load(), s.Valid())
		}
		if term := s.Leave(); term == nil || term.Valid() || !errors.Is(context.Cause(term.Context()), leader.ErrLost) {
			t.Errorf("Leave after a lost term = %v", term)
		}
	})
}
