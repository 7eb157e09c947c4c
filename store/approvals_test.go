package store_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/store"
)

// mustCreateNeeding is mustCreate for a request that needs n approvers.
func mustCreateNeeding(t testing.TB, s *store.Store, id string, exp time.Time, n int) {
	t.Helper()
	r := newRequest(id, exp)
	r.Required = n
	audit := deskbot.AuditEntry{Action: "hold", Tool: "flatten_desk", By: "system", At: base}
	ev := deskbot.Event{Kind: deskbot.EventUserRequest, Desk: r.Desk, Time: base}
	if err := s.CreateRequest(t.Context(), r, audit, ev); err != nil {
		t.Fatalf("CreateRequest(%s): %v", id, err)
	}
}

// approve is an allow by person id that counts toward the request's count,
// carrying a grant (written only when every counted approval is always).
func approve(id int64, name string, d deskbot.Decision) deskbot.Transition {
	tr := allow(base)
	tr.Set.Decision, tr.Set.DecidedBy = d, deskbot.Person{ID: id, Name: name}
	tr.Approve = &deskbot.Approval{ByID: id, By: name, Decision: d, At: base}
	tr.Approved = &deskbot.Event{Kind: deskbot.EventRequestApproved, Desk: "alpha", Time: base}
	tr.Audit = &deskbot.AuditEntry{Action: string(d), Tool: "flatten_desk", By: name, At: base}
	if d == deskbot.AlwaysAllow {
		tr.Grant = &deskbot.Grant{Desk: "alpha", Tool: "flatten_desk", GrantedBy: name, GrantedAt: base, Approvers: 2}
	}
	return tr
}

func TestTransitionCountsApprovals(t *testing.T) {
	type tap struct {
		id   int64
		name string
		d    deskbot.Decision
		want deskbot.Outcome
	}
	asha := func(want deskbot.Outcome) tap { return tap{1, "Asha", deskbot.AllowOnce, want} }
	ravi := func(want deskbot.Outcome) tap { return tap{2, "Ravi", deskbot.AllowOnce, want} }
	tests := []struct {
		name      string
		need      int
		taps      []tap
		wantState deskbot.RequestState
		wantGrant bool
		wantDec   deskbot.Decision
	}{
		{"one approver needed", 1, []tap{asha(deskbot.Applied)}, deskbot.StateRunning, false, deskbot.AllowOnce},
		{"two needed, one tap", 2, []tap{asha(deskbot.Counted)}, deskbot.StateOpen, false, ""},
		{"two needed, same person twice", 2, []tap{asha(deskbot.Counted), asha(deskbot.AlreadyApproved)}, deskbot.StateOpen, false, ""},
		{"two needed, two people", 2, []tap{asha(deskbot.Counted), ravi(deskbot.Applied)}, deskbot.StateRunning, false, deskbot.AllowOnce},
		{"a third tap is too late", 2, []tap{asha(deskbot.Counted), ravi(deskbot.Applied), {3, "Mira", deskbot.AllowOnce, deskbot.WrongState}}, deskbot.StateRunning, false, deskbot.AllowOnce},
		{"always by both grants", 2, []tap{{1, "Asha", deskbot.AlwaysAllow, deskbot.Counted}, {2, "Ravi", deskbot.AlwaysAllow, deskbot.Applied}}, deskbot.StateRunning, true, deskbot.AlwaysAllow},
		{"always by one is an allow once", 2, []tap{asha(deskbot.Counted), {2, "Ravi", deskbot.AlwaysAllow, deskbot.Applied}}, deskbot.StateRunning, false, deskbot.AllowOnce},
		{"a name cannot pose as an id", 2, []tap{{1, "x\x1e2\x1f", deskbot.AllowOnce, deskbot.Counted}, ravi(deskbot.Applied)}, deskbot.StateRunning, false, deskbot.AllowOnce},
	}
	backends(t, func(t *testing.T, s *store.Store) {
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				ctx := t.Context()
				id := tc.name
				mustCreateNeeding(t, s, id, base.Add(time.Hour), tc.need)
				var got *deskbot.Request
				for i, tp := range tc.taps {
					r, out, err := s.Transition(ctx, id, approve(tp.id, tp.name, tp.d))
					if err != nil || out != tp.want {
						t.Fatalf("tap %d by %s = %v, %v; want %v", i+1, tp.name, out, err, tp.want)
					}
					got = r
				}
				if got.State != tc.wantState || got.Decision != tc.wantDec {
					t.Errorf("state, decision = %s, %q; want %s, %q", got.State, got.Decision, tc.wantState, tc.wantDec)
				}
				if got.Needs() != tc.need {
					t.Errorf("Needs() = %d; want %d", got.Needs(), tc.need)
				}
				counted := 0
				for _, tp := range tc.taps {
					if tp.want == deskbot.Counted || tp.want == deskbot.Applied {
						counted++
					}
				}
				if len(got.Approvals) != counted {
					t.Errorf("approvals = %+v; want %d", got.Approvals, counted)
				}
				_, err := s.Grant(ctx, "alpha", "flatten_desk", base)
				if hasGrant := err == nil; hasGrant != tc.wantGrant {
					t.Errorf("grant recorded = %v (%v); want %v", hasGrant, err, tc.wantGrant)
				}
				if err == nil {
					if err := s.RevokeGrant(ctx, "alpha", "flatten_desk", deskbot.AuditEntry{Action: "revoke", By: "test", At: base}); err != nil {
						t.Fatal(err)
					}
				}
			})
		}
	})
}

// Every approval is in the audit trail: the counted ones as "approve n of
// m", the one that meets the count as the decision.
func TestTransitionAuditsEveryApproval(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		mustCreateNeeding(t, s, "r", base.Add(time.Hour), 2)
		for _, tr := range []deskbot.Transition{approve(1, "Asha", deskbot.AllowOnce), approve(1, "Asha", deskbot.AllowOnce), approve(2, "Ravi", deskbot.AllowOnce)} {
			if _, _, err := s.Transition(ctx, "r", tr); err != nil {
				t.Fatal(err)
			}
		}
		trail, err := s.AuditTrail(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range trail {
			got = append(got, e.Action+" "+e.By+" "+e.Detail)
		}
		want := []string{"hold system ", "approve Asha 1 of 2", "allow_once Ravi 2 of 2"}
		if !eq(got, want) {
			t.Errorf("audit = %q; want %q", got, want)
		}
	})
}

// However many approvers tap at once, the count is met exactly once: one
// transition applies, one approval is counted short of it, the rest find
// it running.
func TestTransitionApprovalsRace(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		for round := range 30 {
			id := fmt.Sprintf("race-%d-%d", round, time.Now().UnixNano())
			mustCreateNeeding(t, s, id, base.Add(time.Hour), 2)
			outs := make([]deskbot.Outcome, 6)
			var wg sync.WaitGroup
			for i := range outs {
				wg.Go(func() {
					// Two devices per person: ids 1, 2, 3, each twice.
					_, out, err := s.Transition(t.Context(), id, approve(int64(i%3+1), "p", deskbot.AllowOnce))
					if err != nil {
						t.Error(err)
					}
					outs[i] = out
				})
			}
			wg.Wait()
			n := map[deskbot.Outcome]int{}
			for _, o := range outs {
				n[o]++
			}
			if n[deskbot.Applied] != 1 || n[deskbot.Counted] != 1 {
				t.Fatalf("round %d: outcomes %v; want exactly one Applied and one Counted", round, n)
			}
		}
	})
}
