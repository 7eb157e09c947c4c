package store_test

import (
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/store"
	"github.com/deskbot/deskbot/store/storetest"
)

// The transitions other than allow (helpers_test.go) and approve
// (approvals_test.go), as the gate makes them.
func deny(now time.Time) deskbot.Transition {
	return deskbot.Transition{Kind: deskbot.TransitionDeny, Now: now,
		Set: deskbot.RequestPatch{Decision: deskbot.Deny, DecidedBy: deskbot.Person{ID: 42, Name: "Asha"}, DecidedAt: now, Response: "denied", DeliveredAt: now}}
}

// denyWaiting is a denial whose reason may still come: the desk is not told.
func denyWaiting(now time.Time) deskbot.Transition {
	return deskbot.Transition{Kind: deskbot.TransitionDeny, Now: now,
		Set: deskbot.RequestPatch{Decision: deskbot.Deny, DecidedBy: deskbot.Person{ID: 42, Name: "Asha"}, DecidedAt: now, DenyDueAt: now.Add(time.Minute)}}
}

func result(text string, isError bool) deskbot.Transition {
	return deskbot.Transition{Kind: deskbot.TransitionResult, Now: base,
		Set: deskbot.RequestPatch{Result: &deskbot.ToolResult{Text: text, IsError: isError}, Response: "told", DeliveredAt: base}}
}

func reason(why string) deskbot.Transition {
	return deskbot.Transition{Kind: deskbot.TransitionReason, Now: base,
		Set: deskbot.RequestPatch{Reason: why, Response: "denied: " + why, DeliveredAt: base}}
}

func lapse(now time.Time) deskbot.Transition {
	return deskbot.Transition{Kind: deskbot.TransitionLapse, Now: now, Set: deskbot.RequestPatch{Response: "lapsed", DeliveredAt: now}}
}

func interrupt() deskbot.Transition {
	return deskbot.Transition{Kind: deskbot.TransitionInterrupt, Now: base, Set: deskbot.RequestPatch{Response: "interrupted", DeliveredAt: base}}
}

// change is Asha's change of the call the view with version changes
// showed, to one that needs required approvers.
func change(now time.Time, version, required int) deskbot.Transition {
	tr := approve(42, "Asha", deskbot.AllowOnce)
	tr.Kind, tr.Now, tr.Grant, tr.Version = deskbot.TransitionChange, now, nil, &version
	tr.Change = &deskbot.ChangeRecord{Required: required, CallChange: deskbot.CallChange{
		Arguments: []byte(`{"desk": "alpha", "qty": 1}`), What: "qty 1", By: "Asha", ByID: 42, At: now}}
	return tr
}

// fenced is tr carrying a leader's token that is not the lease's (no
// lease is taken where it is used).
func fenced(tr deskbot.Transition) deskbot.Transition {
	tr.Fence = 987654321
	return tr
}

// Every kind's every outcome against the script that applies it.
func TestTransitionOutcomes(t *testing.T) {
	exp := base.Add(5 * time.Minute)
	halted := allow(base)
	halted.UnlessHalted = "halted" // a desk a risk rule halted, below
	oldView := allow(base)
	oldView.Version = new(int)
	*oldView.Version = 1 // the request was never changed
	changeAt := func(now time.Time) deskbot.Transition { return change(now, 0, 1) }
	haltedChange := changeAt(base)
	haltedChange.UnlessHalted = "halted"
	tests := []struct {
		name      string
		need      int
		before    []deskbot.Transition
		tr        deskbot.Transition
		want      deskbot.Outcome
		wantState deskbot.RequestState
	}{
		{"allow before expiry", 1, nil, allow(exp.Add(-time.Millisecond)), deskbot.Applied, deskbot.StateRunning},
		{"allow at expiry", 1, nil, allow(exp), deskbot.Expired, deskbot.StateOpen},
		{"second allow", 1, []deskbot.Transition{allow(base)}, allow(base), deskbot.WrongState, deskbot.StateRunning},
		{"allow with a stale fence", 1, nil, fenced(allow(base)), deskbot.Stale, deskbot.StateOpen},
		{"allow of a halted desk", 1, nil, halted, deskbot.Halted, deskbot.StateOpen},
		{"allow from a view of another call", 1, nil, oldView, deskbot.Rechanged, deskbot.StateOpen},
		{"allow short of the count", 2, nil, approve(1, "Asha", deskbot.AllowOnce), deskbot.Counted, deskbot.StateOpen},
		{"allow by the same person twice", 2, []deskbot.Transition{approve(1, "Asha", deskbot.AllowOnce)},
			approve(1, "Asha", deskbot.AllowOnce), deskbot.AlreadyApproved, deskbot.StateOpen},
		{"allow that meets the count", 2, []deskbot.Transition{approve(1, "Asha", deskbot.AllowOnce)},
			approve(2, "Ravi", deskbot.AllowOnce), deskbot.Applied, deskbot.StateRunning},

		{"change", 1, nil, changeAt(base), deskbot.Applied, deskbot.StateRunning},
		{"change short of the changed call's count", 1, nil, change(base, 0, 2), deskbot.Counted, deskbot.StateOpen},
		{"change from a view of another call", 1, []deskbot.Transition{change(base, 0, 2)}, change(base, 0, 2), deskbot.Rechanged, deskbot.StateOpen},
		{"change at expiry", 1, nil, changeAt(exp), deskbot.Expired, deskbot.StateOpen},
		{"change after an allow", 1, []deskbot.Transition{allow(base)}, changeAt(base), deskbot.WrongState, deskbot.StateRunning},
		{"change with a stale fence", 1, nil, fenced(changeAt(base)), deskbot.Stale, deskbot.StateOpen},
		{"change of a halted desk", 1, nil, haltedChange, deskbot.Halted, deskbot.StateOpen},

		{"deny", 1, nil, deny(base), deskbot.Applied, deskbot.StateDenied},
		{"deny at expiry", 1, nil, deny(exp), deskbot.Expired, deskbot.StateOpen},
		{"deny after an allow", 1, []deskbot.Transition{allow(base)}, deny(base), deskbot.WrongState, deskbot.StateRunning},
		{"deny with a stale fence", 1, nil, fenced(deny(base)), deskbot.Stale, deskbot.StateOpen},

		{"ran", 1, []deskbot.Transition{allow(base)}, result("ok", false), deskbot.Applied, deskbot.StateRan},
		{"failed", 1, []deskbot.Transition{allow(base)}, result("no", true), deskbot.Applied, deskbot.StateFailed},
		{"result of an open request", 1, nil, result("ok", false), deskbot.WrongState, deskbot.StateOpen},
		{"second result", 1, []deskbot.Transition{allow(base), result("ok", false)}, result("no", true), deskbot.WrongState, deskbot.StateRan},

		{"reason before delivery", 1, []deskbot.Transition{denyWaiting(base)}, reason("in time"), deskbot.Applied, deskbot.StateDenied},
		{"reason after delivery", 1, []deskbot.Transition{deny(base)}, reason("too late"), deskbot.WrongState, deskbot.StateDenied},
		{"reason of an open request", 1, nil, reason("what"), deskbot.WrongState, deskbot.StateOpen},

		{"lapse before expiry", 1, nil, lapse(exp.Add(-time.Millisecond)), deskbot.NotDue, deskbot.StateOpen},
		{"lapse at expiry", 1, nil, lapse(exp), deskbot.Applied, deskbot.StateLapsed},
		{"lapse after an allow", 1, []deskbot.Transition{allow(base)}, lapse(exp), deskbot.WrongState, deskbot.StateRunning},
		{"lapse after an approval counted", 2, []deskbot.Transition{approve(1, "Asha", deskbot.AllowOnce)}, lapse(exp), deskbot.Applied, deskbot.StateLapsed},

		{"interrupt", 1, []deskbot.Transition{allow(base)}, interrupt(), deskbot.Applied, deskbot.StateInterrupted},
		{"interrupt with a stale fence", 1, []deskbot.Transition{allow(base)}, fenced(interrupt()), deskbot.Stale, deskbot.StateRunning},
		{"interrupt of an open request", 1, nil, interrupt(), deskbot.WrongState, deskbot.StateOpen},
	}
	backends(t, func(t *testing.T, s *store.Store) {
		if err := s.Client().HSet(t.Context(), s.Key("desk", "halted"), "halt", "{}").Err(); err != nil {
			t.Fatal(err)
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				id := tc.name
				mustCreateNeeding(t, s, id, exp, tc.need)
				for _, b := range tc.before {
					if _, _, err := s.Transition(t.Context(), id, b); err != nil {
						t.Fatal(err)
					}
				}
				got, out, err := s.Transition(t.Context(), id, tc.tr)
				if err != nil {
					t.Fatal(err)
				}
				if out != tc.want || got.State != tc.wantState {
					t.Errorf("outcome, state = %v, %s; want %v, %s", out, got.State, tc.want, tc.wantState)
				}
				if read, err := s.Request(t.Context(), id); err != nil || read.State != tc.wantState {
					t.Errorf("read back: %v, %v; want %s", read, err, tc.wantState)
				}
			})
		}
		for _, tr := range []deskbot.Transition{allow(base), changeAt(base), deny(base), result("ok", false), reason("r"), lapse(exp), interrupt()} {
			t.Run("missing request/"+tr.Kind.String(), func(t *testing.T) {
				_, _, err := s.Transition(t.Context(), "nope", tr)
				if got := deskbot.ErrorCode(err); got != deskbot.ENOTFOUND {
					t.Errorf("code = %q (%v); want %q", got, err, deskbot.ENOTFOUND)
				}
			})
		}
	})
}

// A transition that carries what its kind does not apply, or lacks what
// it needs, is refused whole: nothing is written, so nothing a caller set
// is silently dropped.
func TestTransitionRefusesWhatItsKindCannotCarry(t *testing.T) {
	with := func(tr deskbot.Transition, f func(*deskbot.Transition)) deskbot.Transition {
		f(&tr)
		return tr
	}
	trigger := &deskbot.Trigger{Desk: "alpha", Kind: deskbot.TriggerPermission, Text: "told"}
	grant := &deskbot.Grant{Desk: "alpha", Tool: "flatten_desk"}
	held := newRequest("r", base.Add(time.Minute))
	tests := []struct {
		name string
		tr   deskbot.Transition
	}{
		{"no kind", with(allow(base), func(t *deskbot.Transition) { t.Kind = 0 })},
		{"an unknown kind", with(allow(base), func(t *deskbot.Transition) { t.Kind = 99 })},
		{"allow with a trigger", with(allow(base), func(t *deskbot.Transition) { t.Trigger = trigger })},
		{"allow with a response", with(allow(base), func(t *deskbot.Transition) { t.Set.Response = "x" })},
		{"allow with a change", with(allow(base), func(t *deskbot.Transition) { t.Change = change(base, 0, 1).Change })},
		{"allow without the desk's halt", with(allow(base), func(t *deskbot.Transition) { t.UnlessHalted = "" })},
		{"allow without the time", with(allow(base), func(t *deskbot.Transition) { t.Now = time.Time{} })},
		{"allow with approvers but no approval", with(allow(base), func(t *deskbot.Transition) { t.Approvers = []int64{1, 2} })},
		{"allow with the approved event but no approval", with(allow(base), func(t *deskbot.Transition) { t.Approved = approve(1, "A", deskbot.AllowOnce).Approved })},
		{"change with a grant", with(change(base, 0, 1), func(t *deskbot.Transition) { t.Grant = grant })},
		{"change without the view's version", with(change(base, 0, 1), func(t *deskbot.Transition) { t.Version = nil })},
		{"change without its approval", with(change(base, 0, 1), func(t *deskbot.Transition) { t.Approve = nil })},
		{"change without arguments", with(change(base, 0, 1), func(t *deskbot.Transition) { t.Change.Arguments = nil })},
		{"deny with a grant", with(deny(base), func(t *deskbot.Transition) { t.Grant = grant })},
		{"deny with an approval", with(deny(base), func(t *deskbot.Transition) { t.Approve = approve(1, "A", deskbot.AllowOnce).Approve })},
		{"deny with a halt", with(deny(base), func(t *deskbot.Transition) { t.UnlessHalted = "alpha" })},
		{"result without a result", with(result("ok", false), func(t *deskbot.Transition) { t.Set.Result = nil })},
		{"result with a fence", with(result("ok", false), func(t *deskbot.Transition) { t.Fence = 7 })},
		{"result with a decision", with(result("ok", false), func(t *deskbot.Transition) { t.Set.Decision = deskbot.AllowOnce })},
		{"reason with an event", with(reason("r"), func(t *deskbot.Transition) { t.Event = &deskbot.Event{Kind: deskbot.EventRequestDecided} })},
		{"reason held", with(reason("r"), func(t *deskbot.Transition) { t.Held = held })},
		{"lapse with a fence", with(lapse(base), func(t *deskbot.Transition) { t.Fence = 7 })},
		{"lapse with a decision", with(lapse(base), func(t *deskbot.Transition) { t.Set.Decision = deskbot.Deny })},
		{"lapse without the time", with(lapse(base), func(t *deskbot.Transition) { t.Now = time.Time{} })},
		{"interrupt held", with(interrupt(), func(t *deskbot.Transition) { t.Held = held })},
		{"interrupt with a grant", with(interrupt(), func(t *deskbot.Transition) { t.Grant = grant })},
	}
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		mustCreate(t, s, "r", base.Add(time.Minute))
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				_, _, err := s.Transition(ctx, "r", tc.tr)
				if got := deskbot.ErrorCode(err); got != deskbot.EINVALID {
					t.Errorf("code = %q (%v); want %q", got, err, deskbot.EINVALID)
				}
			})
		}
		if r, err := s.Request(ctx, "r"); err != nil || r.State != deskbot.StateOpen || r.Decision != "" {
			t.Errorf("after the refusals: %+v, %v; want open and undecided", r, err)
		}
		if trail, _ := s.AuditTrail(ctx, 0); len(trail) != 1 {
			t.Errorf("audit trail = %+v; want the hold alone", trail)
		}
	})
}

// Each script's header names its KEYS and ARGV by number; Go sends exactly
// that many, whatever the transition carries, and the script reads none
// beyond them.
func TestTransitionScriptsTakeWhatTheirHeadersName(t *testing.T) {
	s := storetest.MustOpenEmbedded(t)
	full := func(tr deskbot.Transition) deskbot.Transition {
		tr.Audit = &deskbot.AuditEntry{Action: "x", By: "Asha (42)", At: base}
		tr.Event = &deskbot.Event{Kind: deskbot.EventRequestDecided, Desk: "alpha", Time: base}
		return tr
	}
	held := newRequest("r", base.Add(time.Minute))
	withAll := func(tr deskbot.Transition, f func(*deskbot.Transition)) deskbot.Transition {
		tr = full(tr)
		f(&tr)
		return tr
	}
	trigger := &deskbot.Trigger{Desk: "alpha", Kind: deskbot.TriggerPermission, Text: "told"}
	bare := []deskbot.Transition{allow(base), change(base, 0, 1), denyWaiting(base),
		{Kind: deskbot.TransitionResult, Set: deskbot.RequestPatch{Result: &deskbot.ToolResult{Text: "ok"}}},
		{Kind: deskbot.TransitionReason}, {Kind: deskbot.TransitionLapse, Now: base}, {Kind: deskbot.TransitionInterrupt}}
	loaded := []deskbot.Transition{
		withAll(approve(1, "Asha", deskbot.AlwaysAllow), func(t *deskbot.Transition) {
			t.Fence, t.Held, t.Approvers, t.Version, t.Set.Reason, t.Set.Token = 5, held, []int64{1, 2}, new(int), "why", "tok"
		}),
		withAll(change(base, 0, 2), func(t *deskbot.Transition) { t.Fence, t.Held, t.Approvers = 5, held, []int64{1} }),
		withAll(deny(base), func(t *deskbot.Transition) {
			t.Fence, t.Held, t.Trigger, t.Set.DenyDueAt, t.Set.Token = 5, held, trigger, base, "tok"
		}),
		withAll(result("no", true), func(t *deskbot.Transition) { t.Held, t.Trigger = held, trigger }),
		withAll(reason("why"), func(t *deskbot.Transition) { t.Event, t.Trigger = nil, trigger }),
		withAll(lapse(base), func(t *deskbot.Transition) { t.Held, t.Trigger = held, trigger }),
		withAll(interrupt(), func(t *deskbot.Transition) { t.Fence, t.Trigger = 5, trigger }),
	}
	for i, kind := range []deskbot.TransitionKind{deskbot.TransitionAllow, deskbot.TransitionChange, deskbot.TransitionDeny,
		deskbot.TransitionResult, deskbot.TransitionReason, deskbot.TransitionLapse, deskbot.TransitionInterrupt} {
		t.Run(kind.String(), func(t *testing.T) {
			file := ""
			for _, tr := range []deskbot.Transition{bare[i], loaded[i]} {
				if tr.Kind != kind {
					t.Fatalf("sample of %s is a %s", kind, tr.Kind)
				}
				f, keys, argv, err := s.TransitionCall("r", tr)
				if err != nil {
					t.Fatal(err)
				}
				file = f
				src, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				hk, ha := scriptHeader(t, string(src))
				if len(keys) != hk || len(argv) != ha {
					t.Errorf("%s: Go sends %d KEYS and %d ARGV; the header names %d and %d", f, len(keys), len(argv), hk, ha)
				}
				if bk, ba := scriptReads(string(src)); bk != hk || ba != ha {
					t.Errorf("%s: the script reads KEYS up to %d and ARGV up to %d; the header names %d and %d", f, bk, ba, hk, ha)
				}
			}
			if file != kind.String()+".lua" {
				t.Errorf("the %s script is %s", kind, file)
			}
		})
	}
}

// hold.lua takes the fixed KEYS and ARGV its header names, then the
// request's fields and values (one field or many: an order's arguments
// take as many pieces as they need).
func TestHoldScriptTakesWhatItsHeaderNames(t *testing.T) {
	s := storetest.MustOpenEmbedded(t)
	src, err := os.ReadFile("hold.lua")
	if err != nil {
		t.Fatal(err)
	}
	hk, ha := scriptHeader(t, string(src))
	if bk, ba := scriptReads(string(src)); bk != hk || ba != ha {
		t.Errorf("hold.lua reads KEYS up to %d and ARGV up to %d; the header names %d and %d", bk, ba, hk, ha)
	}
	small, big := newRequest("r1", base.Add(time.Minute)), newRequest("r2", base.Add(time.Minute))
	big.Content.Arguments = []byte(`{"note": "` + strings.Repeat("x", 300) + `"}`)
	big.Required, big.Role, big.RoleMembers = 2, "risk", []int64{1, 2}
	for _, r := range []*deskbot.Request{small, big} {
		keys, argv, err := s.CreateRequestCall(r, deskbot.AuditEntry{Action: "hold", By: "system", At: base}, deskbot.Event{Kind: deskbot.EventUserRequest})
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) != hk || len(argv) < ha || (len(argv)-ha)%2 != 0 {
			t.Errorf("%s: Go sends %d KEYS and %d ARGV; hold.lua names %d KEYS and %d ARGV before the field, value pairs", r.ID, len(keys), len(argv), hk, ha)
		}
	}
}

// scriptHeader is how many KEYS and ARGV a script's header names: its
// numbered lines ("--   3 ..." or "--   20-26 ...") under "-- KEYS" and
// "-- ARGV", which must run from 1 without a gap.
func scriptHeader(t *testing.T, src string) (keys, argv int) {
	t.Helper()
	item := regexp.MustCompile(`^--\s+(\d+)(?:-(\d+))?\s`)
	counts := map[string]int{}
	section := ""
	for line := range strings.Lines(src) {
		if !strings.HasPrefix(line, "--") {
			break
		}
		switch strings.TrimSpace(line) {
		case "-- KEYS", "-- ARGV":
			section = strings.TrimSpace(line)[3:]
			continue
		}
		m := item.FindStringSubmatch(line)
		if section == "" || m == nil {
			section = ""
			continue
		}
		from, _ := strconv.Atoi(m[1])
		to := from
		if m[2] != "" {
			to, _ = strconv.Atoi(m[2])
		}
		if from != counts[section]+1 || to < from {
			t.Fatalf("header's %s goes on at %s after %d", section, strings.TrimSpace(line), counts[section])
		}
		counts[section] = to
	}
	if counts["KEYS"] == 0 || counts["ARGV"] == 0 {
		t.Fatalf("the header names no KEYS or no ARGV")
	}
	return counts["KEYS"], counts["ARGV"]
}

// scriptReads is the highest KEYS and ARGV a script reads.
func scriptReads(src string) (keys, argv int) {
	for _, m := range regexp.MustCompile(`(KEYS|ARGV)\[(\d+)\]|unpack\(ARGV, \d+, (\d+)\)`).FindAllStringSubmatch(src, -1) {
		n, _ := strconv.Atoi(m[2] + m[3])
		if m[1] == "KEYS" {
			keys = max(keys, n)
		} else {
			argv = max(argv, n)
		}
	}
	return keys, argv
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
			Kind: deskbot.TransitionResult, Now: base,
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
			Kind: deskbot.TransitionDeny, Now: base,
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
			Kind: deskbot.TransitionReason, Now: due,
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

// What a transition carries is recorded when it applies and only then,
// whatever its kind: the second attempt of each loses and records nothing.
func TestTransitionCarries(t *testing.T) {
	exp := base.Add(time.Minute)
	tests := []struct {
		name   string
		before []deskbot.Transition
		tr     deskbot.Transition
		action string
		event  bool
	}{
		{"allow", nil, allow(base), "always_allow", true},
		{"deny", nil, deny(base), "deny", true},
		{"result", []deskbot.Transition{allow(base)}, result("ok", false), "ran", true},
		{"reason", []deskbot.Transition{denyWaiting(base)}, reason("why"), "reason", false},
		{"lapse", nil, lapse(exp), "lapse", true},
		{"interrupt", []deskbot.Transition{allow(base)}, interrupt(), "interrupted", true},
	}
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				id, desk := "r-"+tc.name, "d-"+tc.name // the trigger goes to a desk of its own
				mustCreate(t, s, id, exp)
				for _, b := range tc.before {
					mustTransition(t, s, id, b)
				}
				tr := tc.tr
				tr.Audit = &deskbot.AuditEntry{Action: tc.action, Desk: "alpha", Tool: "flatten_desk", By: "Asha (42)", At: base}
				if tc.event {
					tr.Event = &deskbot.Event{Kind: deskbot.EventRequestDecided, Desk: "alpha", Time: base}
				}
				if tr.Kind == deskbot.TransitionAllow {
					tr.Set.Decision = deskbot.AlwaysAllow
					tr.Grant = &deskbot.Grant{Desk: desk, Tool: "flatten_desk", GrantedBy: "Asha", GrantedAt: base, RequestID: id}
				} else {
					tr.Trigger = &deskbot.Trigger{Desk: desk, Kind: deskbot.TriggerPermission, Text: "told", RequestID: id}
				}
				for i, wantApplied := range []bool{true, false} {
					_, out, err := s.Transition(ctx, id, tr)
					if err != nil || (out == deskbot.Applied) != wantApplied {
						t.Fatalf("attempt %d: outcome %v, %v", i, out, err)
					}
				}
				trail, _ := s.AuditTrail(ctx, 0)
				audited := 0
				for _, e := range trail {
					if e.RequestID == id && e.Action == tc.action && e.Desk == "alpha" {
						audited++
					}
				}
				if audited != 1 {
					t.Errorf("%d %s entries for %s on the audit trail; want 1", audited, tc.action, id)
				}
				evs, _ := s.ReadEvents(ctx, "g-"+tc.name, "c", 1000, 0)
				decided := 0
				for _, e := range evs {
					if e.RequestID == id && e.Kind == deskbot.EventRequestDecided {
						decided++
					}
				}
				if want := map[bool]int{true: 1}[tc.event]; decided != want {
					t.Errorf("%d request_decided events for %s; want %d", decided, id, want)
				}
				if tr.Trigger != nil {
					trig, _ := s.NextTrigger(ctx, desk, 0)
					if trig == nil || trig.ID == "" || trig.Text != "told" || !trig.CreatedAt.Equal(tr.Now) {
						t.Errorf("trigger = %+v; want the desk's trigger with an id and the transition's time", trig)
					}
					if n, _ := s.PendingTriggers(ctx, desk); n != 1 {
						t.Errorf("pending triggers = %d; want 1", n)
					}
				}
				if tr.Grant != nil {
					if g, err := s.Grant(ctx, desk, "flatten_desk", base); err != nil || g.RequestID != id {
						t.Errorf("grant = %+v, %v; want one from %s", g, err, id)
					}
				}
			})
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
	ran := func(text string) deskbot.Transition {
		return deskbot.Transition{Kind: deskbot.TransitionResult, Now: base,
			Set: deskbot.RequestPatch{Result: &deskbot.ToolResult{Text: text, Picture: "p.png"}, Response: "The user allowed…", DeliveredAt: base.Add(time.Second + time.Microsecond)}}
	}
	fenced := allow(base.Add(time.Microsecond))
	fenced.Set.Token = "tok"
	fenced.Fence = -1 // the lease's token, below
	deny := deskbot.Transition{Kind: deskbot.TransitionDeny, Now: base,
		Set: deskbot.RequestPatch{Decision: deskbot.Deny, DecidedBy: deskbot.Person{ID: 7, Name: "Ravi"}, DecidedAt: base, Reason: "no", DenyDueAt: base.Add(time.Minute)}}
	lapse := deskbot.Transition{Kind: deskbot.TransitionLapse, Now: exp,
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
