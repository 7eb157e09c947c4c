package gate_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/deskbot/deskbot/gate/gatetest"
	"github.com/deskbot/deskbot/words"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/gate"
	"github.com/deskbot/deskbot/store/storetest"
)

var mira = deskbot.Person{ID: 103, Name: "Mira"}

// twoForFlatten makes flatten_desk on desk main need two approvers, and
// place_order two above ₹5,00,000 notional.
// grantsUpToThreshold sets GRANT_MAX_NOTIONAL far above the policy's
// threshold, so a grant reaches the threshold and no further.
func grantsUpToThreshold(c *gate.Config) { c.GrantMaxNotional = 1e12 }

func twoForFlatten(c *gate.Config) {
	c.Policies = deskbot.Policies{"main": {
		"flatten_desk": {Approvals: 2},
		"place_order":  {Approvals: 2, TwoApproversAbove: 500000},
	}}
	if c.Limits == nil {
		// Orders are sized where they enter, as in the service: a LIMIT
		// buy at its own price on a market without prices.
		c.Limits = &market{}
	}
}

const (
	smallOrder = `{"symbol":"TCS","side":"buy","quantity":100,"price":4000}`  // ₹4,00,000
	largeOrder = `{"symbol":"TCS","side":"buy","quantity":1000,"price":4000}` // ₹40,00,000
	edgeOrder  = `{"symbol":"TCS","side":"buy","quantity":125,"price":4000}`  // ₹5,00,000: at the threshold
)

func (f *fixture) mustResolve(t *testing.T, id string, d deskbot.Decision, by deskbot.Person) *deskbot.Answer {
	t.Helper()
	resp, err := gatetest.Resolve(t.Context(), f.gate, id, d, "", by)
	if err != nil {
		t.Fatalf("resolve by %s: %v", by.Name, err)
	}
	return resp
}

func TestHoldFixesTheCountANeeds(t *testing.T) {
	f := mustFixture(t, twoForFlatten)
	tests := []struct {
		desk, tool, args string
		want             int
	}{
		{"main", "flatten_desk", `{}`, 2},
		{"fno", "flatten_desk", `{}`, 1}, // no policy
		{"main", "place_order", smallOrder, 1},
		{"main", "place_order", edgeOrder, 1},
		{"main", "place_order", largeOrder, 2},
		{"main", "place_order", `{"symbol":"TCS"}`, 2}, // not readable as an order: the stricter count
	}
	for _, tc := range tests {
		r := gatetest.MustHold(t, f, tc.desk, tc.tool, tc.args)
		got, err := f.store.Request(t.Context(), r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Needs() != tc.want {
			t.Errorf("%s %s %s needs %d; want %d", tc.desk, tc.tool, tc.args, got.Needs(), tc.want)
		}
	}
}

// Two approvers tapping at the same moment, each from two devices, on two
// service processes: the call runs exactly once, every round.
func TestTwoApproversAtOnceRunOnce(t *testing.T) {
	f := mustFixture(t, twoForFlatten)
	other := gatetest.MustNew(t, f.cfg, storetest.MustReopen(t, f.store), f.runner, f.clock.Now, quietLog())
	const rounds = 40
	for round := range rounds {
		r := gatetest.MustHold(t, f, "main", "flatten_desk", `{}`)
		var wg sync.WaitGroup
		var mu sync.Mutex
		counted, ran, refused := 0, 0, 0
		for i, p := range []deskbot.Person{asha, ravi, asha, ravi} {
			g := f.gate
			if i%2 == 1 {
				g = other
			}
			wg.Go(func() {
				resp, err := gatetest.Resolve(context.Background(), g, r.ID, deskbot.AllowOnce, "", p)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case deskbot.ErrorCode(err) == deskbot.ECONFLICT:
					refused++
				case err != nil:
					t.Errorf("resolve: %v", err)
				case resp.Counted:
					counted++
				default:
					ran++
				}
			})
		}
		wg.Wait()
		if counted != 1 || ran != 1 || refused != 2 {
			t.Fatalf("round %d: counted %d, ran %d, refused %d; want 1, 1, 2", round, counted, ran, refused)
		}
	}
	if got := len(f.runner.runs()); got != rounds {
		t.Fatalf("runs = %d; want %d (one per request)", got, rounds)
	}
}

func TestOneApproverTappingTwiceCountsOnce(t *testing.T) {
	f := mustFixture(t, twoForFlatten)
	r := gatetest.MustHold(t, f, "main", "flatten_desk", `{}`)
	resp := f.mustResolve(t, r.ID, deskbot.AllowOnce, asha)
	if !resp.Counted {
		t.Fatalf("first approval of two: %+v; want counted", resp)
	}
	if got, want := words.CountedMessage(resp.Request), "Approved (1 of 2); it needs one more before it runs."; got != want {
		t.Errorf("counted message %q; want %q", got, want)
	}
	for _, d := range []deskbot.Decision{deskbot.AllowOnce, deskbot.AlwaysAllow} {
		_, err := gatetest.Resolve(t.Context(), f.gate, r.ID, d, "", asha)
		if got, want := deskbot.ErrorMessage(err), "You already approved; it needs one more."; got != want {
			t.Errorf("Asha's second tap (%s): %q; want %q", d, got, want)
		}
	}
	if got := f.runner.runs(); len(got) != 0 {
		t.Fatalf("ran on one person's taps: %v", got)
	}
	if inbox := f.mustInbox(t, "main"); len(inbox) != 0 {
		t.Fatalf("desk told %+v before the count was met", inbox)
	}
	resp = f.mustResolve(t, r.ID, deskbot.AllowOnce, ravi)
	if resp.Counted || resp.Request.State != deskbot.StateRan || len(f.runner.runs()) != 1 {
		t.Fatalf("Ravi's approval: %+v, runs %d; want ran once", resp.Request, len(f.runner.runs()))
	}
	// The desk reads the same words as with one approver.
	want := "The user allowed flatten_desk (request " + r.ID + "), and the harness ran it with the arguments you gave. It was run:\nclosed 2 positions"
	if inbox := f.mustInbox(t, "main"); len(inbox) != 1 || inbox[0].Text != want {
		t.Fatalf("inbox = %+v; want %q", inbox, want)
	}
	_, err := gatetest.Resolve(t.Context(), f.gate, r.ID, deskbot.AllowOnce, "", mira)
	if got, want := deskbot.ErrorMessage(err), "Already allowed by Asha and Ravi at 14:00 IST; it ran."; got != want {
		t.Errorf("late tap: %q; want %q", got, want)
	}
}

func TestDenyAfterOneApproval(t *testing.T) {
	f := mustFixture(t, twoForFlatten)
	r := gatetest.MustHold(t, f, "main", "flatten_desk", `{}`)
	f.mustResolve(t, r.ID, deskbot.AllowOnce, asha)
	resp, err := gatetest.Resolve(t.Context(), f.gate, r.ID, deskbot.Deny, "too big", ravi)
	if err != nil || resp.Request.State != deskbot.StateDenied {
		t.Fatalf("deny: %+v, %v", resp, err)
	}
	_, err = gatetest.Resolve(t.Context(), f.gate, r.ID, deskbot.AllowOnce, "", mira)
	if got, want := deskbot.ErrorMessage(err), "Already denied by Ravi at 14:00 IST."; got != want {
		t.Errorf("allow after deny: %q; want %q", got, want)
	}
	if got := f.runner.runs(); len(got) != 0 {
		t.Fatalf("denied call ran: %v", got)
	}
	want := "The user denied flatten_desk (request " + r.ID + "), so it was not run. Their reason: too big Do not try to reach the same result another way; ask them if it still matters."
	if inbox := f.mustInbox(t, "main"); len(inbox) != 1 || inbox[0].Text != want {
		t.Fatalf("inbox = %+v; want %q", inbox, want)
	}
}

func TestLapseAfterOneApproval(t *testing.T) {
	f := mustFixture(t, twoForFlatten)
	r := gatetest.MustHold(t, f, "main", "flatten_desk", `{}`)
	f.mustResolve(t, r.ID, deskbot.AllowOnce, asha)
	f.clock.Add(5 * time.Minute)
	if rep, err := f.gate.Sweep(t.Context()); err != nil || rep.Lapsed != 1 {
		t.Fatalf("sweep = %+v, %v; want 1 lapsed", rep, err)
	}
	_, err := gatetest.Resolve(t.Context(), f.gate, r.ID, deskbot.AllowOnce, "", ravi)
	if got, want := deskbot.ErrorMessage(err), "This request lapsed at 14:05 IST."; got != want {
		t.Errorf("approval after lapse: %q; want %q", got, want)
	}
	if got := f.runner.runs(); len(got) != 0 {
		t.Fatalf("lapsed call ran: %v", got)
	}
	want := "Request " + r.ID + " for flatten_desk lapsed at 14:05 India time without an answer, so it was not run. Ask the user again only if it still matters."
	if inbox := f.mustInbox(t, "main"); len(inbox) != 1 || inbox[0].Text != want {
		t.Fatalf("inbox = %+v; want %q", inbox, want)
	}
}

// A restart between the two approvals, even into a configuration that no
// longer asks for two: the count held with the request stands, Asha's
// approval survived, and her second tap still runs nothing.
func TestRestartBetweenApprovals(t *testing.T) {
	f := mustFixture(t, twoForFlatten)
	r := gatetest.MustHold(t, f, "main", "flatten_desk", `{}`)
	f.mustResolve(t, r.ID, deskbot.AllowOnce, asha)

	cfg := f.cfg
	cfg.Policies = nil // the policy was removed before the restart
	restarted := gatetest.MustNew(t, cfg, storetest.MustReopen(t, f.store), f.runner, f.clock.Now, quietLog())
	_, err := gatetest.Resolve(t.Context(), restarted, r.ID, deskbot.AllowOnce, "", asha)
	if got, want := deskbot.ErrorMessage(err), "You already approved; it needs one more."; got != want {
		t.Fatalf("Asha after restart: %q; want %q", got, want)
	}
	if got := f.runner.runs(); len(got) != 0 {
		t.Fatalf("ran on one person's taps across a restart: %v", got)
	}
	got, err := restarted.Request(t.Context(), r.ID)
	if err != nil || got.Needs() != 2 || len(got.Approvals) != 1 || got.Approvals[0].ByID != asha.ID {
		t.Fatalf("request after restart: %+v, %v", got, err)
	}
	resp, err := gatetest.Resolve(t.Context(), restarted, r.ID, deskbot.AllowOnce, "", ravi)
	if err != nil || resp.Counted || len(f.runner.runs()) != 1 {
		t.Fatalf("Ravi after restart: %+v, %v; runs %d", resp, err, len(f.runner.runs()))
	}
}

func TestGrantUnderFourEyes(t *testing.T) {
	ctx := context.Background()
	need := func(t *testing.T, g *gate.Gate, tool, args string) bool {
		t.Helper()
		call := deskbot.ToolCall{Name: tool, Arguments: []byte(args)}
		if o, err := deskbot.ParseOrder(call.Arguments); err == nil && tool == deskbot.ToolPlaceOrder {
			call.Order, _ = (&market{}).Size(ctx, o) // sized as it enters
		}
		n, err := needed(g.Permission(ctx, "main", call))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	t.Run("always allow needs two people", func(t *testing.T) {
		f := mustFixture(t, twoForFlatten)
		r := gatetest.MustHold(t, f, "main", "flatten_desk", `{}`)
		if resp := f.mustResolve(t, r.ID, deskbot.AlwaysAllow, asha); !resp.Counted {
			t.Fatal("one always allow of two ran")
		}
		if !need(t, f.gate, "flatten_desk", `{}`) {
			t.Fatal("one person's always allow granted")
		}
		resp := f.mustResolve(t, r.ID, deskbot.AlwaysAllow, ravi)
		if resp.Decision != deskbot.AlwaysAllow || need(t, f.gate, "flatten_desk", `{}`) {
			t.Fatalf("two always allows: decision %s, still held", resp.Decision)
		}
		gs, err := f.gate.Grants(ctx)
		if err != nil || len(gs) != 1 || gs[0].Approvers != 2 {
			t.Fatalf("grants = %+v, %v", gs, err)
		}
	})
	t.Run("always allow with an allow once grants nothing", func(t *testing.T) {
		f := mustFixture(t, twoForFlatten)
		r := gatetest.MustHold(t, f, "main", "flatten_desk", `{}`)
		f.mustResolve(t, r.ID, deskbot.AllowOnce, asha)
		resp := f.mustResolve(t, r.ID, deskbot.AlwaysAllow, ravi)
		if resp.Decision != deskbot.AllowOnce || !need(t, f.gate, "flatten_desk", `{}`) {
			t.Fatalf("decision %s; want allow_once and no grant", resp.Decision)
		}
		want := "The user allowed flatten_desk (request " + r.ID + "), and the harness ran it with the arguments you gave. It was run:\nclosed 2 positions"
		if got := resp.Request.Response; got != want {
			t.Errorf("desk told %q; want %q (no word of a grant)", got, want)
		}
	})
	t.Run("a one-person grant does not cover a call that now needs two", func(t *testing.T) {
		f := mustFixture(t)
		r := gatetest.MustHold(t, f, "main", "flatten_desk", `{}`)
		f.mustResolve(t, r.ID, deskbot.AlwaysAllow, asha)
		cfg := f.cfg
		twoForFlatten(&cfg)
		stricter := gatetest.MustNew(t, cfg, f.store, f.runner, f.clock.Now, quietLog())
		if !need(t, stricter, "flatten_desk", `{}`) {
			t.Fatal("a grant one person gave covers a call that needs two")
		}
	})
	t.Run("by default a grant covers no order larger than the one shown", func(t *testing.T) {
		f := mustFixture(t, twoForFlatten) // no GRANT_MAX_NOTIONAL
		r := gatetest.MustHold(t, f, "main", "place_order", smallOrder)
		f.mustResolve(t, r.ID, deskbot.AlwaysAllow, asha)
		gs, err := f.gate.Grants(ctx)
		if err != nil || len(gs) != 1 || gs[0].Limit != 400000 {
			t.Fatalf("grants = %+v, %v; want one up to the shown ₹4,00,000", gs, err)
		}
		for _, tc := range []struct {
			args string
			want bool
		}{{smallOrder, false}, {edgeOrder, true}, {largeOrder, true}} {
			if got := need(t, f.gate, "place_order", tc.args); got != tc.want {
				t.Errorf("Permission(%s) = %v; want %v", tc.args, got, tc.want)
			}
		}
	})
	t.Run("a grant never covers an order above the threshold", func(t *testing.T) {
		f := mustFixture(t, twoForFlatten, grantsUpToThreshold)
		r := gatetest.MustHold(t, f, "main", "place_order", smallOrder)
		if resp := f.mustResolve(t, r.ID, deskbot.AlwaysAllow, asha); resp.Counted {
			t.Fatal("a small order needed two")
		}
		for _, tc := range []struct {
			args string
			want bool
		}{{smallOrder, false}, {edgeOrder, false}, {largeOrder, true}, {`{"symbol":"TCS"}`, true}} {
			if got := need(t, f.gate, "place_order", tc.args); got != tc.want {
				t.Errorf("Permission(%s) = %v; want %v", tc.args, got, tc.want)
			}
		}
		// Two people always-allowing a large order: the grant still
		// stops at the threshold.
		r = gatetest.MustHold(t, f, "main", "place_order", largeOrder)
		f.mustResolve(t, r.ID, deskbot.AlwaysAllow, asha)
		f.mustResolve(t, r.ID, deskbot.AlwaysAllow, ravi)
		if !need(t, f.gate, "place_order", largeOrder) {
			t.Error("a grant covers an order above the threshold")
		}
		gs, _ := f.gate.Grants(ctx)
		if len(gs) != 1 || gs[0].Limit != 500000 {
			t.Errorf("grants = %+v; want one limited to 500000", gs)
		}
	})
}

func TestCountedApprovalIsAudited(t *testing.T) {
	f := mustFixture(t, twoForFlatten)
	r := gatetest.MustHold(t, f, "main", "flatten_desk", `{}`)
	f.mustResolve(t, r.ID, deskbot.AllowOnce, asha)
	gatetest.Resolve(t.Context(), f.gate, r.ID, deskbot.AllowOnce, "", asha)
	f.mustResolve(t, r.ID, deskbot.AllowOnce, ravi)
	trail, err := f.store.AuditTrail(t.Context(), 10)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range trail {
		if e.RequestID == r.ID {
			got = append(got, e.Action+" by "+e.By+" "+e.Detail)
		}
	}
	want := []string{"hold by desk main {}", "approve by Asha (101) 1 of 2", "allow_once by Ravi (102) 2 of 2", "ran by system " + got[len(got)-1][len("ran by system "):]}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("audit = %q; want %q", got, want)
	}
}

// An approver removed (she left, her phone was taken) while a request she
// approved is open: across the restart with the new approvers her approval
// counts for nothing, so Ravi's tap is the first of two again, Mira's the
// second, and the grant and the request name only the two who count now.
func TestRemovedApproversApprovalCountsForNothing(t *testing.T) {
	f := mustFixture(t, twoForFlatten, func(c *gate.Config) { c.Approvers = []int64{asha.ID, ravi.ID, mira.ID} })
	r := gatetest.MustHold(t, f, "main", "flatten_desk", `{}`)
	f.mustResolve(t, r.ID, deskbot.AllowOnce, asha)

	cfg := f.cfg
	cfg.Approvers = []int64{ravi.ID, mira.ID}
	restarted := gatetest.MustNew(t, cfg, storetest.MustReopen(t, f.store), f.runner, f.clock.Now, quietLog())
	resp, err := gatetest.Resolve(t.Context(), restarted, r.ID, deskbot.AllowOnce, "", ravi)
	if err != nil || !resp.Counted {
		t.Fatalf("Ravi after Asha's removal: %+v, %v; want counted, one more needed", resp, err)
	}
	if got, want := words.CountedMessage(resp.Request), "Approved (1 of 2); it needs one more before it runs."; got != want {
		t.Errorf("Ravi is told %q; want %q", got, want)
	}
	if got := f.runner.runs(); len(got) != 0 {
		t.Fatalf("ran on Ravi's tap and the approval of a removed approver: %v", got)
	}
	resp, err = gatetest.Resolve(t.Context(), restarted, r.ID, deskbot.AllowOnce, "", mira)
	if err != nil || resp.Counted || len(f.runner.runs()) != 1 {
		t.Fatalf("Mira's tap: %+v, %v; runs %d", resp, err, len(f.runner.runs()))
	}
	var by []int64
	for _, a := range resp.Request.Approvals {
		by = append(by, a.ByID)
	}
	if got, want := fmt.Sprint(by), fmt.Sprint([]int64{ravi.ID, mira.ID}); got != want {
		t.Errorf("approvals of the run: %s; want %s", got, want)
	}
}

// The desk's orders of the India day count together (the executor's hard
// limits add each to the day's total before the gate is asked): once the
// total passes the threshold, a small order needs two approvers and no
// grant covers it; the next India day starts afresh.
func TestFourEyesCountsTheDesksDay(t *testing.T) {
	ctx := context.Background()
	f := mustFixture(t, twoForFlatten, grantsUpToThreshold)
	r := gatetest.MustHold(t, f, "main", "place_order", smallOrder)
	f.mustResolve(t, r.ID, deskbot.AlwaysAllow, asha) // a one-person grant up to ₹5,00,000
	day := deskbot.OrderDay(f.clock.Now())
	tests := []struct {
		name  string
		desk  string
		total float64 // the desk's day, this order included
		want  int     // approvers a held order needs
		held  bool    // held despite the grant
	}{
		{"within the day's threshold", "main", 400000, 1, false},
		{"at the threshold", "main", 500000, 1, false},
		{"past it over the day", "main", 900000, 2, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			have, err := f.store.DayNotional(ctx, tc.desk, day)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.store.AddDayNotional(ctx, tc.desk, day, tc.total-have); err != nil {
				t.Fatal(err)
			}
			call := deskbot.ToolCall{Name: "place_order", Arguments: []byte(smallOrder)}
			need, err := f.needs(ctx, tc.desk, call)
			if err != nil {
				t.Fatal(err)
			}
			if need != tc.held {
				t.Errorf("Permission = %v; want %v", need, tc.held)
			}
			h := gatetest.MustHold(t, f, tc.desk, "place_order", smallOrder)
			if got, want := h.Needs(), tc.want; got != want {
				t.Errorf("held order needs %d; want %d", got, want)
			}
		})
	}
	f.clock.Add(24 * time.Hour)
	if h := gatetest.MustHold(t, f, "main", "place_order", smallOrder); h.Needs() != 1 {
		t.Errorf("the next day's small order needs %d; want 1", h.Needs())
	}
}
