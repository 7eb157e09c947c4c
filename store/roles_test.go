package store_test

import (
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/store"
)

// A request held with a role counts approvals so that one of them comes
// from the role: an outsider's approval that would fill the count without
// one is refused (RoleNeeded) and changes nothing; the role survives a
// read of the request.
func TestTransitionNeedsOneFromTheRole(t *testing.T) {
	type tap struct {
		id   int64
		want deskbot.Outcome
	}
	for _, tc := range []struct {
		name    string
		need    int
		members []int64
		taps    []tap
		state   deskbot.RequestState
	}{
		{"two outsiders", 2, []int64{3}, []tap{{1, deskbot.Counted}, {2, deskbot.RoleNeeded}}, deskbot.StateOpen},
		{"outsider then member", 2, []int64{3}, []tap{{1, deskbot.Counted}, {3, deskbot.Applied}}, deskbot.StateRunning},
		{"member then outsider", 2, []int64{3}, []tap{{3, deskbot.Counted}, {1, deskbot.Applied}}, deskbot.StateRunning},
		{"one needed, outsider", 1, []int64{3}, []tap{{1, deskbot.RoleNeeded}, {3, deskbot.Applied}}, deskbot.StateRunning},
		{"three needed, two outsiders then member", 3, []int64{3}, []tap{{1, deskbot.Counted}, {2, deskbot.Counted}, {4, deskbot.RoleNeeded}, {3, deskbot.Applied}}, deskbot.StateRunning},
	} {
		t.Run(tc.name, func(t *testing.T) {
			backends(t, func(t *testing.T, s *store.Store) {
				r := newRequest(tc.name, base.Add(time.Hour))
				r.Required, r.Role, r.RoleMembers = tc.need, "risk", tc.members
				if err := s.CreateRequest(t.Context(), r, deskbot.AuditEntry{Action: "hold", By: "system", At: base}, deskbot.Event{Kind: deskbot.EventUserRequest, Desk: r.Desk, Time: base}); err != nil {
					t.Fatal(err)
				}
				var got *deskbot.Request
				for i, tp := range tc.taps {
					after, out, err := s.Transition(t.Context(), r.ID, approve(tp.id, "p", deskbot.AllowOnce))
					if err != nil || out != tp.want {
						t.Fatalf("tap %d by %d = %v, %v; want %v", i+1, tp.id, out, err, tp.want)
					}
					got = after
				}
				if got.State != tc.state || got.Role != "risk" || len(got.RoleMembers) != len(tc.members) {
					t.Errorf("after the taps: state %s, role %q %v; want %s, risk %v", got.State, got.Role, got.RoleMembers, tc.state, tc.members)
				}
			})
		})
	}
}
