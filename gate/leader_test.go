package gate_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/gate"
)

// term is a process's leadership as the gate sees it; the lease itself is
// the store's real one.
type term struct{ token atomic.Int64 }

func (t *term) Token() int64 { return t.token.Load() }
func (t *term) Valid() bool  { return t.token.Load() != 0 }

func (f *fixture) mustLead(t *testing.T, tm *term) {
	t.Helper()
	token, err := f.store.AcquireLease(t.Context(), time.Minute)
	if err != nil || token == 0 {
		t.Fatalf("AcquireLease = %d, %v", token, err)
	}
	tm.token.Store(token)
}

// Two processes on one Redis: a second instance started by mistake (no
// lease) interrupts nothing and decides nothing; once the first one's lease
// is gone and the second leads, it interrupts the first one's running call
// but not its own; and the first one, unaware it lost the lease (a pause),
// can no longer start a call.
func TestRecoverOnlyWhenTheOwnersLeaseIsGone(t *testing.T) {
	var first, second term
	f := mustFixture(t, func(c *gate.Config) { c.Leader = &first })
	f.mustLead(t, &first)
	running := f.mustHold(t, "main", "flatten_desk", `{}`)
	if _, err := f.gate.Decide(t.Context(), running.ID, deskbot.AllowOnce, "", asha); err != nil {
		t.Fatal(err)
	}
	open := f.mustHold(t, "main", "place_order", `{}`)

	cfg := f.cfg
	cfg.Leader = &second
	mistake := gate.New(cfg, f.store, f.runner, f.clock.Now, quietLog())
	if n, err := mistake.Recover(t.Context()); n != 0 || deskbot.ErrorCode(err) != deskbot.EUNAVAILABLE {
		t.Errorf("Recover by a standby = %d, %v; want nothing interrupted and EUNAVAILABLE", n, err)
	}
	if _, err := mistake.Decide(t.Context(), open.ID, deskbot.AllowOnce, "", ravi); deskbot.ErrorCode(err) != deskbot.EUNAVAILABLE {
		t.Errorf("Decide by a standby: %v, want EUNAVAILABLE", err)
	}
	for _, c := range []struct {
		id   string
		want deskbot.RequestState
	}{{running.ID, deskbot.StateRunning}, {open.ID, deskbot.StateOpen}} {
		if got, _ := f.gate.Request(t.Context(), c.id); got.State != c.want {
			t.Errorf("after the standby tried: %s is %s, want %s", c.id, got.State, c.want)
		}
	}

	// The first leader's lease is gone (it stopped renewing); the second
	// takes over. The first still believes it leads.
	if err := f.store.ReleaseLease(t.Context(), first.Token()); err != nil {
		t.Fatal(err)
	}
	f.mustLead(t, &second)
	if _, err := mistake.Decide(t.Context(), open.ID, deskbot.AllowOnce, "", ravi); err != nil {
		t.Fatalf("the new leader's decision: %v", err)
	}
	if _, err := f.gate.Decide(t.Context(), open.ID, deskbot.Deny, "", asha); deskbot.ErrorCode(err) != deskbot.EUNAVAILABLE && deskbot.ErrorCode(err) != deskbot.ECONFLICT {
		t.Errorf("the old leader's decision after losing the lease: %v", err)
	}
	other := f.mustHold(t, "fno", "flatten_desk", `{}`)
	if _, err := f.gate.Decide(t.Context(), other.ID, deskbot.AllowOnce, "", asha); deskbot.ErrorCode(err) != deskbot.EUNAVAILABLE {
		t.Errorf("the old leader allowed a call after losing the lease: %v, want EUNAVAILABLE", err)
	}
	if got, _ := f.gate.Request(t.Context(), other.ID); got.State != deskbot.StateOpen {
		t.Errorf("the stale allow left %s, want open", got.State)
	}

	n, err := mistake.Recover(t.Context())
	if err != nil || n != 1 {
		t.Fatalf("the new leader's Recover = %d, %v; want the old leader's one call", n, err)
	}
	if got, _ := f.gate.Request(t.Context(), running.ID); got.State != deskbot.StateInterrupted {
		t.Errorf("the old leader's call is %s, want interrupted", got.State)
	}
	if got, _ := f.gate.Request(t.Context(), open.ID); got.State != deskbot.StateRunning || got.Fence != second.Token() {
		t.Errorf("the new leader's own call is %s (owner %d), want running under %d", got.State, got.Fence, second.Token())
	}
	// The old leader, stale, cannot interrupt the new leader's call either.
	if n, err := f.gate.Recover(t.Context()); n != 0 || deskbot.ErrorCode(err) != deskbot.EUNAVAILABLE {
		t.Errorf("the stale leader's Recover = %d, %v; want 0 and EUNAVAILABLE", n, err)
	}
	if got, _ := f.gate.Request(t.Context(), open.ID); got.State != deskbot.StateRunning {
		t.Errorf("after the stale Recover the new leader's call is %s", got.State)
	}
	if runs := f.runner.runs(); len(runs) != 0 {
		t.Errorf("calls ran: %v", runs)
	}
}
