package store_test

import (
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/store"
	"github.com/deskbot/deskbot/store/storetest"
)

func TestTransitionOutcomes(t *testing.T) {
	exp := base.Add(5 * time.Minute)
	open := []deskbot.RequestState{deskbot.StateOpen}
	denied := []deskbot.RequestState{deskbot.StateDenied}
	deny := deskbot.Transition{From: open, To: deskbot.StateDenied, Now: base, Expiry: deskbot.BeforeExpiry,
		Set: deskbot.RequestPatch{Decision: deskbot.Deny, DeliveredAt: base}}
	tests := []struct {
		name      string
		before    []deskbot.Transition
		tr        deskbot.Transition
		want      deskbot.Outcome
		wantState deskbot.RequestState
	}{
		{"decision before expiry", nil, allow(exp.Add(-time.Millisecond)), deskbot.Applied, deskbot.StateRunning},
		{"decision at expiry", nil, allow(exp), deskbot.Expired, deskbot.StateOpen},
		{"second decision", []deskbot.Transition{allow(base)}, allow(base), deskbot.WrongState, deskbot.StateRunning},
		{"sweep before expiry", nil,
			deskbot.Transition{From: open, To: deskbot.StateLapsed, Now: exp.Add(-time.Millisecond), Expiry: deskbot.AfterExpiry},
			deskbot.NotDue, deskbot.StateOpen},
		{"sweep at expiry", nil,
			deskbot.Transition{From: open, To: deskbot.StateLapsed, Now: exp, Expiry: deskbot.AfterExpiry},
			deskbot.Applied, deskbot.StateLapsed},
		{"sweep after a decision", []deskbot.Transition{allow(base)},
			deskbot.Transition{From: open, To: deskbot.StateLapsed, Now: exp, Expiry: deskbot.AfterExpiry},
			deskbot.WrongState, deskbot.StateRunning},
		{"reason after delivery", []deskbot.Transition{deny},
			deskbot.Transition{From: denied, To: deskbot.StateDenied, Now: base, RequireUndelivered: true,
				Set: deskbot.RequestPatch{Reason: "too late"}},
			deskbot.WrongState, deskbot.StateDenied},
		{"reason before delivery", []deskbot.Transition{{From: open, To: deskbot.StateDenied, Now: base}},
			deskbot.Transition{From: denied, To: deskbot.StateDenied, Now: base, RequireUndelivered: true,
				Set: deskbot.RequestPatch{Reason: "in time"}},
			deskbot.Applied, deskbot.StateDenied},
	}
	backends(t, func(t *testing.T, s *store.Store) {
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				id := tc.name
				mustCreate(t, s, id, exp)
				for _, b := range tc.before {
					mustTransition(t, s, id, b)
				}
				got, out, err := s.Transition(t.Context(), id, tc.tr)
				if err != nil {
					t.Fatal(err)
				}
				if out != tc.want || got.State != tc.wantState {
					t.Errorf("outcome, state = %v, %s; want %v, %s", out, got.State, tc.want, tc.wantState)
				}
			})
		}
		t.Run("missing request", func(t *testing.T) {
			_, _, err := s.Transition(t.Context(), "nope", allow(base))
			if got := deskbot.ErrorCode(err); got != deskbot.ENOTFOUND {
				t.Errorf("code = %q (%v); want %q", got, err, deskbot.ENOTFOUND)
			}
		})
	})
}

// The patch, the exact arguments and every index survive the trip through Lua.
func TestTransitionPatchAndIndexes(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		exp := base.Add(5 * time.Minute)
		created := mustCreate(t, s, "r1", exp)
		mustCreate(t, s, "r2", exp.Add(time.Minute))

		r := mustTransition(t, s, "r1", allow(base.Add(time.Second)))
		if got, want := string(r.Content.Arguments), string(created.Content.Arguments); got != want {
			t.Errorf("arguments = %s; want byte-for-byte %s", got, want)
		}
		if r.Decision != deskbot.AllowOnce || r.DecidedBy != "Asha" || r.DecidedByID != 42 || !r.DecidedAt.Equal(base.Add(time.Second)) {
			t.Errorf("decision fields = %q %q %d %v", r.Decision, r.DecidedBy, r.DecidedByID, r.DecidedAt)
		}
		if open, _ := s.OpenRequests(ctx); !eq(ids(open), []string{"r2"}) {
			t.Errorf("open = %v; want [r2]", ids(open))
		}
		if running, _ := s.RunningRequests(ctx); !eq(ids(running), []string{"r1"}) {
			t.Errorf("running = %v; want [r1]", ids(running))
		}

		res := &deskbot.ToolResult{Text: "closed 2 positions", Picture: "chart.png"}
		r = mustTransition(t, s, "r1", deskbot.Transition{
			From: []deskbot.RequestState{deskbot.StateRunning}, To: deskbot.StateRan, Now: base,
			Set: deskbot.RequestPatch{Result: res, Response: "The user allowed...", DeliveredAt: base.Add(2 * time.Second)},
		})
		if r.Result == nil || *r.Result != *res || r.Response != "The user allowed..." || !r.DeliveredAt.Equal(base.Add(2*time.Second)) {
			t.Errorf("after ran: result %+v response %q delivered %v", r.Result, r.Response, r.DeliveredAt)
		}
		if running, _ := s.RunningRequests(ctx); len(running) != 0 {
			t.Errorf("running after ran = %v; want none", ids(running))
		}

		due := base.Add(time.Minute)
		mustTransition(t, s, "r2", deskbot.Transition{
			From: []deskbot.RequestState{deskbot.StateOpen}, To: deskbot.StateDenied, Now: base,
			Set: deskbot.RequestPatch{Decision: deskbot.Deny, DenyDueAt: due},
		})
		for _, c := range []struct {
			now  time.Time
			want []string
		}{{due.Add(-time.Millisecond), nil}, {due, []string{"r2"}}} {
			if got, _ := s.DenialsDue(ctx, c.now, 10); !eq(got, c.want) {
				t.Errorf("DenialsDue(%v) = %v; want %v", c.now.Sub(due), got, c.want)
			}
		}
		mustTransition(t, s, "r2", deskbot.Transition{
			From: []deskbot.RequestState{deskbot.StateDenied}, To: deskbot.StateDenied, Now: due,
			Set: deskbot.RequestPatch{Response: "The user denied...", DeliveredAt: due},
		})
		if got, _ := s.DenialsDue(ctx, due, 10); len(got) != 0 {
			t.Errorf("DenialsDue after delivery = %v; want none", got)
		}
		if open, _ := s.OpenRequests(ctx); len(open) != 0 {
			t.Errorf("open at the end = %v; want none", ids(open))
		}
	})
}

// What a transition carries is recorded when it applies and only then.
func TestTransitionCarries(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		mustCreate(t, s, "r1", base.Add(time.Minute))
		tr := allow(base)
		tr.Set.Decision = deskbot.AlwaysAllow
		tr.Audit = &deskbot.AuditEntry{Action: "always_allow", Desk: "alpha", Tool: "flatten_desk", By: "Asha (42)", At: base}
		tr.Event = &deskbot.Event{Kind: deskbot.EventRequestDecided, Desk: "alpha", Time: base}
		tr.Trigger = &deskbot.Trigger{Desk: "alpha", Kind: deskbot.TriggerPermission, Text: "allowed", RequestID: "r1"}
		tr.Grant = &deskbot.Grant{Desk: "alpha", Tool: "flatten_desk", GrantedBy: "Asha", GrantedAt: base, RequestID: "r1"}

		for i, wantApplied := range []bool{true, false} { // the second attempt loses
			_, out, err := s.Transition(ctx, "r1", tr)
			if err != nil || (out == deskbot.Applied) != wantApplied {
				t.Fatalf("attempt %d: outcome %v, %v", i, out, err)
			}
		}
		trail, _ := s.AuditTrail(ctx, 0)
		if len(trail) != 2 || trail[1].Action != "always_allow" || trail[1].RequestID != "r1" || trail[1].Desk != "alpha" {
			t.Errorf("audit trail = %+v; want hold then one always_allow for r1", trail)
		}
		evs, _ := s.ReadEvents(ctx, "g", "c", 10, 0)
		if len(evs) != 2 || evs[1].Kind != deskbot.EventRequestDecided || evs[1].RequestID != "r1" {
			t.Errorf("events = %+v; want user_request then one request_decided", evs)
		}
		trig, _ := s.NextTrigger(ctx, "alpha", 0)
		if trig == nil || trig.ID == "" || trig.Text != "allowed" || !trig.CreatedAt.Equal(base) {
			t.Errorf("trigger = %+v; want the allowed trigger with an id and time", trig)
		}
		if n, _ := s.PendingTriggers(ctx, "alpha"); n != 1 {
			t.Errorf("pending triggers = %d; want 1", n)
		}
		if g, err := s.Grant(ctx, "alpha", "flatten_desk", base); err != nil || g.RequestID != "r1" {
			t.Errorf("grant = %+v, %v; want one from r1", g, err)
		}
	})
}

// Exactly one of 100 deciders wins, spread over two separate clients (two
// processes as far as Redis can tell).
func TestTransitionRace(t *testing.T) {
	backends(t, func(t *testing.T, s1 *store.Store) {
		s2 := storetest.MustReopen(t, s1)
		for round := range 3 {
			id := "race" + string(rune('a'+round))
			mustCreate(t, s1, id, base.Add(time.Minute))
			var wg sync.WaitGroup
			var mu sync.Mutex
			outcomes := map[deskbot.Outcome]int{}
			for i := range 100 {
				s := s1
				if i%2 == 1 {
					s = s2
				}
				wg.Go(func() {
					tr := allow(base)
					tr.Set.DecidedBy = deskbot.Person{ID: int64(i), Name: "p"}
					tr.Audit = &deskbot.AuditEntry{Action: "allow_once", By: "p", At: base}
					_, out, err := s.Transition(t.Context(), id, tr)
					if err != nil {
						t.Error(err)
					}
					mu.Lock()
					outcomes[out]++
					mu.Unlock()
				})
			}
			wg.Wait()
			if outcomes[deskbot.Applied] != 1 || outcomes[deskbot.WrongState] != 99 {
				t.Errorf("round %d: outcomes %v; want 1 applied, 99 wrong state", round, outcomes)
			}
		}
		trail, _ := s1.AuditTrail(t.Context(), 0)
		allows := 0
		for _, e := range trail {
			if e.Action == "allow_once" {
				allows++
			}
		}
		if allows != 3 {
			t.Errorf("audited allows = %d; want 3 (one per request)", allows)
		}
	})
}

// A transition given the request as the caller holds it (Held) returns,
// when it applies, exactly the request a read would return afterwards,
// though the script sends back only what the caller could not know; any
// other outcome reads the request as it stands. Each step's Held is the
// request as the caller would hold it: the creation (the counted approvals
// are not in it), then the previous step's result.
func TestTransitionHeldReturnsWhatAReadWould(t *testing.T) {
	exp := base.Add(5 * time.Minute)
	running := []deskbot.RequestState{deskbot.StateRunning}
	ran := func(text string) deskbot.Transition {
		return deskbot.Transition{From: running, To: deskbot.StateRan, Now: base,
			Set: deskbot.RequestPatch{Result: &deskbot.ToolResult{Text: text, Picture: "p.png"}, Response: "The user allowed…", DeliveredAt: base.Add(time.Second + time.Microsecond)}}
	}
	fenced := allow(base.Add(time.Microsecond))
	fenced.Set.Token = "tok"
	fenced.Fence = -1 // the lease's token, below
	deny := deskbot.Transition{From: []deskbot.RequestState{deskbot.StateOpen}, To: deskbot.StateDenied, Now: base, Expiry: deskbot.BeforeExpiry,
		Set: deskbot.RequestPatch{Decision: deskbot.Deny, DecidedBy: deskbot.Person{ID: 7, Name: "Ravi"}, DecidedAt: base, Reason: "no", DenyDueAt: base.Add(time.Minute)}}
	lapse := deskbot.Transition{From: []deskbot.RequestState{deskbot.StateOpen}, To: deskbot.StateLapsed, Now: exp, Expiry: deskbot.AfterExpiry,
		Set: deskbot.RequestPatch{Response: "lapsed", DeliveredAt: exp}}
	tests := []struct {
		name  string
		need  int
		steps []deskbot.Transition
		want  []deskbot.Outcome
	}{
		{"allow then ran", 1, []deskbot.Transition{allow(base), ran("closed 2 positions")}, []deskbot.Outcome{deskbot.Applied, deskbot.Applied}},
		{"fenced allow", 1, []deskbot.Transition{fenced}, []deskbot.Outcome{deskbot.Applied}},
		{"a result that is not UTF-8", 1, []deskbot.Transition{allow(base), ran("bad \xff\xfe bytes")}, []deskbot.Outcome{deskbot.Applied, deskbot.Applied}},
		{"two approvers, narrowed to allow once", 2,
			[]deskbot.Transition{approve(1, "Asha", deskbot.AllowOnce), approve(2, "Ravi", deskbot.AlwaysAllow), ran("ok")},
			[]deskbot.Outcome{deskbot.Counted, deskbot.Applied, deskbot.Applied}},
		{"deny waiting for a reason", 1, []deskbot.Transition{deny}, []deskbot.Outcome{deskbot.Applied}},
		{"lapse", 1, []deskbot.Transition{lapse}, []deskbot.Outcome{deskbot.Applied}},
		{"lapse after an approval counted", 2, []deskbot.Transition{approve(1, "Asha", deskbot.AllowOnce), lapse},
			[]deskbot.Outcome{deskbot.Counted, deskbot.Applied}},
		{"second decision reads", 1, []deskbot.Transition{allow(base), allow(base)}, []deskbot.Outcome{deskbot.Applied, deskbot.WrongState}},
	}
	backends(t, func(t *testing.T, s *store.Store) {
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				ctx := t.Context()
				id := tc.name
				mustCreateNeeding(t, s, id, exp, tc.need)
				held, err := s.Request(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				for i, tr := range tc.steps {
					if tr.Fence == -1 {
						token, err := s.AcquireLease(ctx, time.Minute)
						if err != nil || token == 0 {
							t.Fatalf("AcquireLease = %d, %v", token, err)
						}
						defer s.ReleaseLease(ctx, token)
						tr.Fence = token
					}
					tr.Held = held
					before := *held
					got, out, err := s.Transition(ctx, id, tr)
					if err != nil || out != tc.want[i] {
						t.Fatalf("step %d: outcome %v, %v; want %v", i, out, err, tc.want[i])
					}
					if !reflect.DeepEqual(*held, before) {
						t.Errorf("step %d changed Held: %+v; was %+v", i, *held, before)
					}
					read, err := s.Request(ctx, id)
					if err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(got, read) {
						t.Errorf("step %d returned\n%+v\nwant what a read returns\n%+v", i, got, read)
					}
					if out == deskbot.Applied {
						held = got
					}
				}
			})
		}
		t.Run("applied replies carry no request", func(t *testing.T) {
			// The store trusts what the caller holds: a marker only Held has
			// comes back, so the request was not read back.
			mustCreate(t, s, "marker", exp)
			held, err := s.Request(t.Context(), "marker")
			if err != nil {
				t.Fatal(err)
			}
			held.TriggerID = "only in held"
			tr := allow(base)
			tr.Held = held
			got := mustTransition(t, s, "marker", tr)
			if got.TriggerID != "only in held" || got.State != deskbot.StateRunning {
				t.Errorf("applied with Held: trigger %q, state %s; want Held's with the state applied", got.TriggerID, got.State)
			}
		})
	})
}
