package store_test

import (
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/store"
	"github.com/deskbot/deskbot/store/storetest"
)

func mustAcquire(t *testing.T, s *store.Store, ttl time.Duration) int64 {
	t.Helper()
	token, err := s.AcquireLease(t.Context(), ttl)
	if err != nil || token == 0 {
		t.Fatalf("AcquireLease = %d, %v; want a token", token, err)
	}
	return token
}

// One holder at a time: a second process is refused while the first holds
// the lease, renewing needs the holder's token, and a release by anyone but
// the holder leaves the lease alone. Each take hands out a larger token.
func TestLeaseOneHolder(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		other, err := s.Reopen(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		ctx := t.Context()
		first := mustAcquire(t, s, time.Minute)
		if got, err := other.AcquireLease(ctx, time.Minute); err != nil || got != 0 {
			t.Fatalf("second AcquireLease while held = %d, %v; want 0", got, err)
		}
		if ok, err := other.RenewLease(ctx, first+1, time.Minute); err != nil || ok {
			t.Errorf("renew with a token that does not hold = %v, %v; want false", ok, err)
		}
		if ok, err := s.RenewLease(ctx, first, time.Minute); err != nil || !ok {
			t.Errorf("holder's renew = %v, %v; want true", ok, err)
		}
		if err := other.ReleaseLease(ctx, first+1); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.LeaseHolder(ctx); got != first {
			t.Errorf("after a stranger's release the holder is %d, want %d", got, first)
		}
		if err := s.ReleaseLease(ctx, first); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.LeaseHolder(ctx); got != 0 {
			t.Errorf("after the holder's release the holder is %d, want nobody", got)
		}
		second := mustAcquire(t, other, time.Minute)
		if second <= first {
			t.Errorf("the next token %d is not above %d", second, first)
		}
		if ok, _ := s.RenewLease(ctx, first, time.Minute); ok {
			t.Error("the old holder renewed a lease another token holds")
		}
	})
}

// A lease nobody renews lapses by itself in Redis, and the next process
// takes it.
func TestLeaseLapses(t *testing.T) {
	s := storetest.MustOpen(t)
	first := mustAcquire(t, s, 150*time.Millisecond)
	deskbottest.Eventually(t, "the lease to lapse", func() bool { h, err := s.LeaseHolder(t.Context()); return err == nil && h == 0 })
	if next := mustAcquire(t, s, time.Minute); next <= first {
		t.Errorf("token after the lapse %d, want above %d", next, first)
	}
}

// A fenced note is written only with the token that holds the lease.
func TestPutNoteFenced(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		if ok, err := s.PutNoteFenced(ctx, "offset", "1", 0, 1); err != nil || ok {
			t.Fatalf("fenced note with no lease = %v, %v; want refused", ok, err)
		}
		token := mustAcquire(t, s, time.Minute)
		for _, tt := range []struct {
			token int64
			value string
			want  bool
		}{{token, "7", true}, {token - 1, "3", false}, {token + 1, "3", false}} {
			if ok, err := s.PutNoteFenced(ctx, "offset", tt.value, 0, tt.token); err != nil || ok != tt.want {
				t.Errorf("PutNoteFenced with token %d (lease %d) = %v, %v; want %v", tt.token, token, ok, err, tt.want)
			}
		}
		if got, err := s.Note(ctx, "offset"); err != nil || got != "7" {
			t.Errorf("note = %q, %v; want the holder's 7", got, err)
		}
	})
}

// A fenced transition applies only with the current leader's token, and
// keeps that token on the request: a call going to running records who runs
// it; a leader whose lease passed to another cannot start one.
func TestTransitionFence(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		old := mustAcquire(t, s, time.Minute)
		if err := s.ReleaseLease(ctx, old); err != nil {
			t.Fatal(err)
		}
		cur := mustAcquire(t, s, time.Minute)
		mustCreate(t, s, "fenced-1", base.Add(time.Hour))

		stale := allow(base)
		stale.Fence = old
		r, out, err := s.Transition(ctx, "fenced-1", stale)
		if err != nil || out != deskbot.Stale || r.State != deskbot.StateOpen {
			t.Fatalf("allow with the old leader's token = %v, %v (state %s); want Stale and still open", out, err, r.State)
		}
		live := allow(base)
		live.Fence = cur
		r = mustTransition(t, s, "fenced-1", live)
		if r.State != deskbot.StateRunning || r.Fence != cur {
			t.Errorf("after the leader's allow: state %s, fence %d; want running, %d", r.State, r.Fence, cur)
		}
		if got, _ := s.Request(ctx, "fenced-1"); got.Fence != cur {
			t.Errorf("request read back has fence %d, want %d", got.Fence, cur)
		}
		// Unfenced transitions (one process, no leader) are unchanged.
		mustCreate(t, s, "unfenced-1", base.Add(time.Hour))
		if r := mustTransition(t, s, "unfenced-1", allow(base)); r.Fence != 0 {
			t.Errorf("unfenced allow kept fence %d", r.Fence)
		}
	})
}

// Recover's interrupt is fenced as the allow is: only the lease's holder
// ends another leader's running call, and the call then records the new
// owner; a leader whose lease passed interrupts nothing.
func TestInterruptFence(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		old := mustAcquire(t, s, time.Minute)
		mustCreate(t, s, "running-1", base.Add(time.Hour))
		started := allow(base)
		started.Fence = old
		mustTransition(t, s, "running-1", started)
		if err := s.ReleaseLease(ctx, old); err != nil {
			t.Fatal(err)
		}
		cur := mustAcquire(t, s, time.Minute)

		stale := interrupt()
		stale.Fence = old
		r, out, err := s.Transition(ctx, "running-1", stale)
		if err != nil || out != deskbot.Stale || r.State != deskbot.StateRunning || r.Fence != old {
			t.Fatalf("interrupt with the old leader's token = %v, %v (state %s, fence %d); want Stale, still running under %d", out, err, r.State, r.Fence, old)
		}
		live := interrupt()
		live.Fence = cur
		r = mustTransition(t, s, "running-1", live)
		if r.State != deskbot.StateInterrupted || r.Fence != cur {
			t.Errorf("after the leader's interrupt: state %s, fence %d; want interrupted, %d", r.State, r.Fence, cur)
		}
		if running, _ := s.RunningRequests(ctx); len(running) != 0 {
			t.Errorf("running after the interrupt = %v; want none", ids(running))
		}
	})
}

// Redis that loses the last leadership write hands the next taker the
// term number the old leader holds; the token still differs, so the old
// leader's renewal and its fenced writes are refused and only the new one
// leads.
func TestLeaseLostWriteStartsAnotherTerm(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		other, err := s.Reopen(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		before, err := s.LeaseTerms(ctx)
		if err != nil {
			t.Fatal(err)
		}
		old := mustAcquire(t, s, time.Minute)
		if err := s.LoseLeaseWrites(ctx, before); err != nil {
			t.Fatal(err)
		}
		cur := mustAcquire(t, other, time.Minute)
		if cur == old {
			t.Fatalf("the take after the lost write got the old leader's token %d", old)
		}
		if ok, err := s.RenewLease(ctx, old, time.Minute); err != nil || ok {
			t.Errorf("the old leader's renewal = %v, %v; want refused", ok, err)
		}
		if ok, err := s.PutNoteFenced(ctx, "offset", "9", 0, old); err != nil || ok {
			t.Errorf("the old leader's fenced note = %v, %v; want refused", ok, err)
		}
		mustCreate(t, s, "lost-1", base.Add(time.Hour))
		stale := allow(base)
		stale.Fence = old
		if r, out, err := s.Transition(ctx, "lost-1", stale); err != nil || out != deskbot.Stale || r.State != deskbot.StateOpen {
			t.Errorf("the old leader's allow = %v, %v (state %s); want Stale and still open", out, err, r.State)
		}
		if ok, err := other.RenewLease(ctx, cur, time.Minute); err != nil || !ok {
			t.Errorf("the new leader's renewal = %v, %v; want renewed", ok, err)
		}
		if got, _ := s.LeaseHolder(ctx); got != cur {
			t.Errorf("the lease holds %d, want the new leader's %d", got, cur)
		}
	})
}

// A token is the term number followed by the term's random digits: tokens
// grow with the counter, and two takes of one number still differ.
func TestLeaseTokenIsTermAndID(t *testing.T) {
	s := storetest.MustOpen(t)
	ctx := t.Context()
	before, err := s.LeaseTerms(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	for range 20 {
		token := mustAcquire(t, s, time.Minute)
		if got, want := token/1e10, before+1; got != want {
			t.Errorf("token %d has term number %d, want %d", token, got, want)
		}
		if seen[token] {
			t.Errorf("token %d handed out twice for one term number", token)
		}
		seen[token] = true
		if err := s.LoseLeaseWrites(ctx, before); err != nil {
			t.Fatal(err)
		}
	}
}

// A lease held under an identity is taken at once, with a new term, by a
// process of the same identity (its predecessor is dead: only one live
// process can carry it), never by one of another identity or of none; a
// free lease is taken by anyone.
func TestLeaseTakeOverFromOwnPredecessor(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		const me = "host=h1 dir=/data id=aaa"
		dead, over, err := s.TakeLease(ctx, time.Minute, me)
		if err != nil || dead == 0 || over {
			t.Fatalf("first take = %d, %v, %v; want a token, not a take-over", dead, over, err)
		}
		for _, stranger := range []string{"", "host=h2 dir=/data id=aaa", "host=h1 dir=/data id=bbb"} {
			if got, over, err := s.TakeLease(ctx, time.Minute, stranger); err != nil || got != 0 || over {
				t.Errorf("take by %q while held = %d, %v, %v; want refused", stranger, got, over, err)
			}
		}
		next, over, err := s.TakeLease(ctx, time.Minute, me)
		if err != nil || next == 0 || !over {
			t.Fatalf("successor's take = %d, %v, %v; want a take-over", next, over, err)
		}
		if next <= dead {
			t.Errorf("successor's token %d not above the predecessor's %d", next, dead)
		}
		if ok, _ := s.RenewLease(ctx, dead, time.Minute); ok {
			t.Error("the predecessor's token renewed a lease its successor holds")
		}
		// The lease renewed keeps its holder for the next successor; a
		// lease released names nobody.
		if ok, err := s.RenewLease(ctx, next, time.Minute); err != nil || !ok {
			t.Fatalf("renew = %v, %v", ok, err)
		}
		if got, over, _ := s.TakeLease(ctx, time.Minute, me); got == 0 || !over {
			t.Errorf("take-over after a renewal = %d, %v; want one", got, over)
		} else if err := s.ReleaseLease(ctx, got); err != nil {
			t.Fatal(err)
		}
		free, over, err := s.TakeLease(ctx, time.Minute, "")
		if err != nil || free == 0 || over {
			t.Fatalf("take of a released lease = %d, %v, %v; want a plain take", free, over, err)
		}
		if got, over, _ := s.TakeLease(ctx, time.Minute, me); got != 0 || over {
			t.Errorf("take by the old identity of a lease held under none = %d, %v; want refused", got, over)
		}
	})
}
