package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/store"
)

// waitingDesks is more desks than go-redis's default pool has connections
// (10 a processor): past it, desks that each held a connection while they
// waited left none for anything else.
const waitingDesks = 120

// poolOf is the named pool's figures.
func poolOf(t *testing.T, s *store.Store, name string) store.PoolStat {
	t.Helper()
	for _, p := range s.PoolStats() {
		if p.Pool == name {
			return p
		}
	}
	t.Fatalf("no pool %q in %+v", name, s.PoolStats())
	return store.PoolStat{}
}

// waitAll has desks n0..n(n-1) wait in NextTrigger until each gets a
// trigger or ctx ends, and returns what each got once all returned.
func waitAll(t *testing.T, s *store.Store, n int, block time.Duration) func() map[string]*deskbot.Trigger {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := map[string]*deskbot.Trigger{}
	for i := range n {
		desk := fmt.Sprintf("n%d", i)
		wg.Go(func() {
			tr, err := s.NextTrigger(t.Context(), desk, block)
			if err != nil {
				t.Errorf("NextTrigger(%s): %v", desk, err)
			}
			mu.Lock()
			got[desk] = tr
			mu.Unlock()
		})
	}
	return func() map[string]*deskbot.Trigger { wg.Wait(); return got }
}

// waitingOn waits until n desks wait on the inbox hub.
func waitingOn(t *testing.T, s *store.Store, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); s.InboxHubStats().Waiting < n; {
		if time.Now().After(deadline) {
			t.Fatalf("%d desks wait on the hub; want %d", s.InboxHubStats().Waiting, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Many idle desks hold no connection each: they wait on one read, the
// lease, the chat and every other command go through at once beside them,
// and each desk gets the trigger queued for it.
func TestIdleDesksHoldNoConnection(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		for i := range waitingDesks {
			// Each desk's inbox and group exist, as after its first turn.
			if tr, err := s.NextTrigger(ctx, fmt.Sprintf("n%d", i), 0); err != nil || tr != nil {
				t.Fatalf("first look = %v, %v; want nothing", tr, err)
			}
		}
		done := waitAll(t, s, waitingDesks, 20*time.Second)
		waitingOn(t, s, waitingDesks)

		work := poolOf(t, s, "work")
		if got, want := int(work.Stats.TotalConns), work.Size; got >= want {
			t.Errorf("work pool holds %d connections with every desk waiting; want fewer than its %d", got, want)
		}
		// Two at most, a node: a Cluster client also asks every node for
		// the slots.
		if got := poolOf(t, s, "inbox").Stats.TotalConns; got > 6 {
			t.Errorf("inbox pool holds %d connections for %d waiting desks; want a few, not one a desk", got, waitingDesks)
		}
		start := time.Now()
		token, err := s.Lease().AcquireLease(ctx, time.Minute)
		if err != nil || token == 0 {
			t.Fatalf("AcquireLease with %d desks waiting = %d, %v", waitingDesks, token, err)
		}
		if ok, err := s.Lease().RenewLease(ctx, token, time.Minute); !ok || err != nil {
			t.Fatalf("RenewLease with %d desks waiting = %v, %v", waitingDesks, ok, err)
		}
		if err := s.Chat().Enqueue(ctx, deskbot.Trigger{Desk: "n0", Kind: deskbot.TriggerMessage, Text: "from the chat"}); err != nil {
			t.Fatalf("the chat's Enqueue with %d desks waiting: %v", waitingDesks, err)
		}
		for _, name := range []string{"lease", "chat"} {
			if p := poolOf(t, s, name); p.Stats.Hits+p.Stats.Misses == 0 {
				t.Errorf("the %s view sent nothing through the %s pool: %+v", name, name, p.Stats)
			}
		}
		for i := 1; i < waitingDesks; i++ {
			if err := s.Enqueue(ctx, deskbot.Trigger{Desk: fmt.Sprintf("n%d", i), Kind: deskbot.TriggerMessage, Text: fmt.Sprint("for ", i)}); err != nil {
				t.Fatalf("Enqueue(n%d) with desks waiting: %v", i, err)
			}
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("the lease, the chat and %d enqueues took %v beside the waiting desks", waitingDesks-1, took)
		}
		got := done()
		for i := range waitingDesks {
			want := fmt.Sprint("for ", i)
			if i == 0 {
				want = "from the chat"
			}
			if tr := got[fmt.Sprintf("n%d", i)]; tr == nil || tr.Text != want {
				t.Errorf("desk n%d got %+v; want %q", i, tr, want)
			}
		}
		for _, p := range s.PoolStats() {
			if p.Stats.Timeouts > 0 {
				t.Errorf("pool %s: %d commands timed out waiting for a connection", p.Pool, p.Stats.Timeouts)
			}
		}
	})
}

// A desk that starts waiting while the hub's read is in flight without it
// gets its trigger at once, not when that read's block ends: it wakes the
// read.
func TestWaitingDeskWakesTheReadInFlight(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		for _, d := range []string{"early", "late"} {
			if _, err := s.NextTrigger(ctx, d, 0); err != nil {
				t.Fatal(err)
			}
		}
		early := make(chan *deskbot.Trigger, 1)
		go func() {
			tr, _ := s.NextTrigger(ctx, "early", 20*time.Second)
			early <- tr
		}()
		waitingOn(t, s, 1)
		time.Sleep(20 * time.Millisecond) // the read for "early" alone is in flight
		late := make(chan *deskbot.Trigger, 1)
		go func() {
			tr, _ := s.NextTrigger(ctx, "late", 20*time.Second)
			late <- tr
		}()
		waitingOn(t, s, 2)
		start := time.Now()
		if err := s.Enqueue(ctx, deskbot.Trigger{Desk: "late", Text: "wake"}); err != nil {
			t.Fatal(err)
		}
		select {
		case tr := <-late:
			if tr == nil || tr.Text != "wake" {
				t.Fatalf("late got %+v; want wake", tr)
			}
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("late got its trigger after %v; want well under the hub's block", took)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("late never got its trigger")
		}
		if err := s.Enqueue(ctx, deskbot.Trigger{Desk: "early", Text: "done"}); err != nil {
			t.Fatal(err)
		}
		if tr := <-early; tr == nil || tr.Text != "done" {
			t.Fatalf("early got %+v; want done", tr)
		}
	})
}

// An entry the hub's read took for a desk that had stopped waiting is in
// hand: the desk's next NextTrigger hands it out, and it is not handed out
// twice.
func TestTriggerReadForADeskGoneIsInHand(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		for _, d := range []string{"stays", "leaves"} {
			if _, err := s.NextTrigger(ctx, d, 0); err != nil {
				t.Fatal(err)
			}
		}
		// "stays" keeps a read in flight that covers "leaves" too.
		stays := make(chan *deskbot.Trigger, 1)
		go func() {
			tr, _ := s.NextTrigger(ctx, "stays", 20*time.Second)
			stays <- tr
		}()
		if tr, err := s.NextTrigger(ctx, "leaves", 50*time.Millisecond); err != nil || tr != nil {
			t.Fatalf("leaves' wait = %+v, %v; want nothing", tr, err)
		}
		if err := s.Enqueue(ctx, deskbot.Trigger{Desk: "leaves", Text: "while away"}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond) // the read in flight takes it, if it covers leaves
		tr, err := s.NextTrigger(ctx, "leaves", time.Second)
		if err != nil || tr == nil || tr.Text != "while away" {
			t.Fatalf("leaves' next wait = %+v, %v; want while away", tr, err)
		}
		if err := s.AckTrigger(ctx, tr); err != nil {
			t.Fatal(err)
		}
		if again, err := s.NextTrigger(ctx, "leaves", 50*time.Millisecond); err != nil || again != nil {
			t.Fatalf("after the ack, leaves got %+v, %v; want nothing", again, err)
		}
		s.Enqueue(ctx, deskbot.Trigger{Desk: "stays", Text: "end"})
		<-stays
	})
}

// Close does not wait for the hub's read to end its block: a stopping
// service (a leader that lost its lease) exits at once.
func TestCloseEndsTheInboxRead(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		s, err := s.Reopen(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			s.NextTrigger(ctx, "alpha", 30*time.Second)
		}()
		waitingOn(t, s, 1)
		time.Sleep(20 * time.Millisecond) // the read is in flight
		start := time.Now()
		s.Close()
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("Close took %v with a read in flight; want it at once", took)
		}
		cancel()
		<-done
	})
}
