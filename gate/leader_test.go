package gate_test

import (
	"github.com/deskbot/deskbot/gate/gatetest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/gate"
)

// term is a process's leadership as the gate sees it; the lease itself is
// the store's real one. lapsed is a term whose validity ran out by the
// process's own clock (leader.Term.Valid) while its token is still the one
// it holds: what a process sees first when it wakes from a pause longer than
// its lease.
type term struct {
	token  atomic.Int64
	lapsed atomic.Bool
}

func (t *term) Token() int64 { return t.token.Load() }
func (t *term) Valid() bool  { return t.token.Load() != 0 && !t.lapsed.Load() }

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
	running := gatetest.MustHold(t, f, "main", "flatten_desk", `{}`)
	if _, err := f.gate.DecideOnly(t.Context(), running.ID, deskbot.AllowOnce, "", asha); err != nil {
		t.Fatal(err)
	}
	open := gatetest.MustHold(t, f, "main", "place_order", `{}`)

	cfg := f.cfg
	cfg.Leader = &second
	mistake := gatetest.MustNew(t, cfg, f.store, f.runner, f.clock.Now, quietLog())
	if n, err := mistake.Recover(t.Context()); n != 0 || deskbot.ErrorCode(err) != deskbot.EUNAVAILABLE {
		t.Errorf("Recover by a standby = %d, %v; want nothing interrupted and EUNAVAILABLE", n, err)
	}
	if _, err := mistake.DecideOnly(t.Context(), open.ID, deskbot.AllowOnce, "", ravi); deskbot.ErrorCode(err) != deskbot.EUNAVAILABLE {
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
	if _, err := mistake.DecideOnly(t.Context(), open.ID, deskbot.AllowOnce, "", ravi); err != nil {
		t.Fatalf("the new leader's decision: %v", err)
	}
	if _, err := f.gate.DecideOnly(t.Context(), open.ID, deskbot.Deny, "", asha); deskbot.ErrorCode(err) != deskbot.EUNAVAILABLE && deskbot.ErrorCode(err) != deskbot.ECONFLICT {
		t.Errorf("the old leader's decision after losing the lease: %v", err)
	}
	other := gatetest.MustHold(t, f, "fno", "flatten_desk", `{}`)
	if _, err := f.gate.DecideOnly(t.Context(), other.ID, deskbot.AllowOnce, "", asha); deskbot.ErrorCode(err) != deskbot.EUNAVAILABLE {
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

// A leader paused between Decide and Run (a GC pause, SIGSTOP, a frozen VM)
// wakes after its lease passed on: the next leader's Recover has told, or
// will tell, the desk that the call's outcome is unknown and that it was not
// run again. The woken Run must not run it then: the desk would act on a
// report that is false, and might place the order again. The takeover is by
// another process, or by this same process under a new term (a new token,
// its Recover interrupting the old term's call); the recovery comes before
// the woken Run or after it.
func TestRunAfterLosingTheLeaseRunsNothing(t *testing.T) {
	for _, c := range []struct {
		name         string
		sameProcess  bool // the paused process itself leads again, under a new token
		recoverFirst bool // the new leader recovers before the paused Run wakes
	}{
		{"another process, recovered first", false, true},
		{"another process, recovers later", false, false},
		{"same process new term, recovered first", true, true},
		{"same process new term, recovers later", true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var first, second term
			f := mustFixture(t, func(cf *gate.Config) { cf.Leader = &first })
			f.mustLead(t, &first)
			r := gatetest.MustHold(t, f, "main", "flatten_desk", `{}`)
			resp, err := f.gate.DecideOnly(t.Context(), r.ID, deskbot.AllowOnce, "", asha)
			if err != nil || resp.Request.State != deskbot.StateRunning {
				t.Fatalf("Decide = %+v, %v; want running", resp, err)
			}

			// The pause: the lease lapses in Redis and, by its own clock,
			// in the paused process; someone else takes it.
			if err := f.store.ReleaseLease(t.Context(), first.Token()); err != nil {
				t.Fatal(err)
			}
			recoverer := f.gate
			if c.sameProcess {
				first.lapsed.Store(false)
				f.mustLead(t, &first) // a new token for the same gate
			} else {
				first.lapsed.Store(true)
				cfg := f.cfg
				cfg.Leader = &second
				f.mustLead(t, &second)
				recoverer = gatetest.MustNew(t, cfg, f.store, f.runner, f.clock.Now, quietLog())
			}
			recovered := 0
			recoverNow := func() {
				t.Helper()
				n, err := recoverer.Recover(t.Context())
				if err != nil {
					t.Fatalf("the new leader's Recover: %v", err)
				}
				recovered += n
			}
			if c.recoverFirst {
				recoverNow()
			}

			// The paused Run wakes.
			if _, err := f.gate.RunDecided(t.Context(), resp); deskbot.ErrorCode(err) != deskbot.EUNAVAILABLE {
				t.Errorf("Run after losing the lease: %v; want EUNAVAILABLE", err)
			}
			if !c.recoverFirst {
				recoverNow()
			}
			if runs := f.runner.runs(); len(runs) != 0 {
				t.Errorf("the call ran after its leader lost the lease: %v", runs)
			}
			if recovered != 1 {
				t.Errorf("the new leader recovered %d calls; want 1", recovered)
			}
			got, err := f.gate.Request(t.Context(), r.ID)
			if err != nil || got.State != deskbot.StateInterrupted {
				t.Errorf("the request is %+v, %v; want interrupted, as the desk was told", got, err)
			}
			inbox := f.mustInbox(t, "main")
			if len(inbox) != 1 || !strings.Contains(inbox[0].Text, "outcome is unknown") {
				t.Errorf("the desk was told %+v; want once that the outcome is unknown", inbox)
			}
			trail, err := f.store.AuditTrail(t.Context(), 100)
			if err != nil {
				t.Fatal(err)
			}
			var actions []string
			for _, e := range trail {
				if e.RequestID == r.ID {
					actions = append(actions, e.Action)
				}
			}
			if got := strings.Join(actions, " "); !strings.Contains(got, "not_run") || !strings.Contains(got, "interrupted") {
				t.Errorf("the audit trail of the request: %s; want not_run and interrupted", got)
			}
		})
	}
}
