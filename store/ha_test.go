package store_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/store"
	"github.com/deskbot/deskbot/store/storetest"
	"github.com/redis/go-redis/v9"
)

// A Redis that restarts (killed, back from its append-only file a second
// later) is invisible to callers: what they ask meanwhile is retried and
// succeeds, and nothing written before is lost.
func TestRestartMidCallIsRetried(t *testing.T) {
	srv, url := storetest.StartServer(t)
	ctx := t.Context()
	s, err := store.Open(ctx, store.Options{URL: url, Prefix: "blip:"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mustCreate(t, s, "before", base.Add(time.Hour))
	time.Sleep(1100 * time.Millisecond) // appendfsync everysec
	srv.Kill()
	restarted := make(chan error, 1)
	go func() {
		time.Sleep(time.Second)
		restarted <- srv.Restart()
	}()
	start := time.Now()
	r, out, err := s.Transition(ctx, "before", allow(base))
	if err := <-restarted; err != nil {
		t.Fatalf("restarting Redis: %v", err)
	}
	if err != nil || out != deskbot.Applied || r.State != deskbot.StateRunning {
		t.Fatalf("allow during the restart: %v, %v, %v; want applied after the retry", r, out, err)
	}
	if err := s.CreateRequest(ctx, newRequest("during", base.Add(time.Hour)), deskbot.AuditEntry{}, deskbot.Event{}); err != nil {
		t.Fatalf("hold right after the restart: %v", err)
	}
	if waited := time.Since(start); waited < 500*time.Millisecond || waited > store.DefaultRetryFor {
		t.Errorf("the allow took %v; want it to wait out the second's outage, within %v", waited, store.DefaultRetryFor)
	}
}

// An outage longer than RetryFor is reported: EUNAVAILABLE, after about
// RetryFor, not at once and not never.
func TestLongOutageReported(t *testing.T) {
	srv, url := storetest.StartServer(t)
	s, err := store.Open(t.Context(), store.Options{URL: url, Prefix: "blip:", RetryFor: 700 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	srv.Kill()
	start := time.Now()
	_, err = s.Request(t.Context(), "x")
	if deskbot.ErrorCode(err) != deskbot.EUNAVAILABLE {
		t.Fatalf("err = %v; want EUNAVAILABLE", err)
	}
	if d := time.Since(start); d < 500*time.Millisecond || d > 3*time.Second {
		t.Errorf("reported after %v; want about the 700ms of retries", d)
	}
}

// Where the primary has a replica, a transition and a creation return only
// once the replica has them: with the replica frozen, they wait; thawed, they
// return, and the replica already holds what they wrote.
func TestDecisionWaitsForReplica(t *testing.T) {
	set := storetest.StartReplicated(t)
	ctx := t.Context()
	s, err := store.Open(ctx, store.Options{URL: set.URL(), Prefix: "wait:"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n, err := s.Replicas(ctx); n != 1 || err != nil {
		t.Fatalf("Replicas = %d, %v; want 1", n, err)
	}
	replica := redis.NewClient(&redis.Options{Addr: set.Replica.Addr(), Password: set.Password, DisableIdentity: true})
	defer replica.Close()
	stateOnReplica := func(id string) string {
		return replica.HGet(context.Background(), s.Key("req", id), "s").Val()
	}
	for _, step := range []struct {
		name  string
		do    func() error
		id    string
		state string
	}{
		{"hold", func() error {
			return s.CreateRequest(ctx, newRequest("r1", base.Add(time.Hour)), deskbot.AuditEntry{}, deskbot.Event{})
		}, "r1", "open"},
		{"allow", func() error { _, _, err := s.Transition(ctx, "r1", allow(base)); return err }, "r1", "running"},
	} {
		set.Replica.Signal(t, syscall.SIGSTOP)
		done := make(chan error, 1)
		go func() { done <- step.do() }()
		select {
		case err := <-done:
			set.Replica.Signal(t, syscall.SIGCONT)
			t.Fatalf("%s returned (%v) while the replica could not have it", step.name, err)
		case <-time.After(400 * time.Millisecond):
		}
		set.Replica.Signal(t, syscall.SIGCONT)
		if err := <-done; err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if got := stateOnReplica(step.id); got != step.state {
			t.Errorf("after the %s returned the replica reads %q; want %q", step.name, got, step.state)
		}
	}
}

// On a three-node Cluster every atomic step of the store runs unchanged:
// the deployment's keys share one slot, so no script or MULTI meets
// CROSSSLOT, and two deployments may land on different nodes.
func TestOnCluster(t *testing.T) {
	c := storetest.StartCluster(t)
	ctx := t.Context()
	slots := map[string]bool{}
	for _, prefix := range []string{"deskbot:", "staging:", "third:"} {
		s, err := store.Open(ctx, store.Options{ClusterAddrs: c.Addrs(), Password: c.Password, Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		mustCreate(t, s, "r1", base.Add(time.Minute))
		mustCreate(t, s, "r2", base.Add(-time.Minute))
		mustTransition(t, s, "r1", allow(base))
		if due, err := s.DueRequests(ctx, base, 10); err != nil || len(due) != 1 || due[0] != "r2" {
			t.Errorf("%s due = %v, %v; want [r2]", prefix, due, err)
		}
		if err := s.RevokeGrant(ctx, "alpha", "bash", deskbot.AuditEntry{}); deskbot.ErrorCode(err) != deskbot.ENOTFOUND {
			t.Errorf("%s revoke of no grant: %v", prefix, err)
		}
		if err := s.Enqueue(ctx, deskbot.Trigger{Desk: "alpha", Kind: deskbot.TriggerMessage, Text: "hi"}); err != nil {
			t.Fatal(err)
		}
		tr, err := s.NextTrigger(ctx, "alpha", 0)
		if err != nil || tr == nil || s.AckTrigger(ctx, tr) != nil {
			t.Fatalf("%s trigger: %v, %v", prefix, tr, err)
		}
		told, err := s.TellOnce(ctx, "order:1:complete", &deskbot.Trigger{Desk: "alpha", Kind: deskbot.TriggerOrder, Text: "filled"},
			&deskbot.Event{Kind: deskbot.EventOrder, Desk: "alpha", Text: "filled"})
		if err != nil || !told {
			t.Fatalf("%s TellOnce = %v, %v; want told", prefix, told, err)
		}
		if tr, err := s.NextTrigger(ctx, "alpha", 0); err != nil || tr == nil || tr.Text != "filled" {
			t.Errorf("%s told trigger: %+v, %v", prefix, tr, err)
		}
		node, err := s.Client().(*redis.ClusterClient).MasterForKey(ctx, s.Key("audit"))
		if err != nil {
			t.Fatal(err)
		}
		slots[node.Options().Addr] = true
	}
	t.Logf("three deployments on %d of the cluster's nodes", len(slots))
}
