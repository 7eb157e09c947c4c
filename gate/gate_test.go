package gate_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/gate/gatetest"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/gate"
	"github.com/deskbot/deskbot/store"
	"github.com/deskbot/deskbot/store/storetest"
)

// newClock is the tests' clock: 14:00 IST on a weekday.
func newClock() *deskbottest.Clock {
	return deskbottest.NewClock(time.Date(2026, 11, 30, 8, 30, 0, 0, time.UTC))
}

// runner records every call it runs, with its call key.
type runner struct {
	mu    sync.Mutex
	calls []deskbot.ToolCall
	keys  []string // deskbot.CallKey of each run ("" when it had none)
	fail  bool
	block chan struct{} // when set, a run waits for it
}

func (r *runner) RunTool(ctx context.Context, desk string, call deskbot.ToolCall) (deskbot.ToolResult, error) {
	if r.block != nil {
		<-r.block
	}
	key, _ := deskbot.CallKey(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, call)
	r.keys = append(r.keys, key)
	if r.fail {
		return deskbot.ToolResult{Text: "broker said no", IsError: true}, nil
	}
	return deskbot.ToolResult{Text: "closed 2 positions"}, nil
}

func (r *runner) callKeys() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.keys...)
}

func (r *runner) runs() []deskbot.ToolCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]deskbot.ToolCall(nil), r.calls...)
}

type fixture struct {
	store  *store.Store
	gate   *gate.Gate
	runner *runner
	clock  *deskbottest.Clock
	cfg    gate.Config
}

func mustFixture(t *testing.T, mod ...func(*gate.Config)) *fixture {
	t.Helper()
	f := &fixture{store: storetest.MustOpen(t), runner: &runner{}, clock: newClock()}
	f.cfg = gate.Config{Tools: []string{"flatten_desk", "place_order"}, Expiry: 5 * time.Minute}
	for _, m := range mod {
		m(&f.cfg)
	}
	if f.cfg.Limits == nil {
		// Orders are sized where they enter, as in the service: a LIMIT
		// order at its own price on a market without prices.
		f.cfg.Limits = &market{}
	}
	f.gate = gatetest.MustNew(t, f.cfg, f.store, f.runner, f.clock.Now, quietLog())
	return f
}

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

var asha = deskbot.Person{ID: 101, Name: "Asha"}
var ravi = deskbot.Person{ID: 102, Name: "Ravi"}

// read is call as the executor hands it to the gate: an order sized by
// the gate's Limits, as the service sizes it where it enters (an error
// when it cannot be); with no Limits, as sent (not sized: four eyes
// counts it as large).
func (f *fixture) read(ctx context.Context, call deskbot.ToolCall) (deskbot.ToolCall, error) {
	if f.cfg.Limits == nil || call.Name != deskbot.ToolPlaceOrder {
		return call, nil
	}
	o, err := deskbot.ParseOrder(call.Arguments)
	if err != nil {
		return call, nil
	}
	call.Order, err = f.cfg.Limits.Size(ctx, o)
	return call, err
}

// Hold holds call as read (read): the fixture is the tests' holder
// (gatetest.MustHold).
func (f *fixture) Hold(ctx context.Context, desk, trigger string, call deskbot.ToolCall) (*deskbot.Request, deskbot.ToolResult, error) {
	call, err := f.read(ctx, call)
	if err != nil {
		return nil, deskbot.ToolResult{}, err
	}
	return f.gate.Hold(ctx, desk, trigger, call)
}

// needed is Permission's answer without its grant.
func needed(need bool, _ *deskbot.Grant, err error) (bool, error) { return need, err }

// needs is Permission for call as read (read).
func (f *fixture) needs(ctx context.Context, desk string, call deskbot.ToolCall) (bool, error) {
	call, err := f.read(ctx, call)
	if err != nil {
		return true, err
	}
	return needed(f.gate.Permission(ctx, desk, call))
}

// mustInbox drains the desk's inbox, acknowledging what it reads.
func (f *fixture) mustInbox(t *testing.T, desk string) []deskbot.Trigger {
	t.Helper()
	var got []deskbot.Trigger
	for {
		tr, err := f.store.NextTrigger(t.Context(), desk, 0)
		if err != nil {
			t.Fatalf("next trigger: %v", err)
		}
		if tr == nil {
			return got
		}
		got = append(got, *tr)
		if err := f.store.AckTrigger(t.Context(), tr); err != nil {
			t.Fatalf("ack trigger: %v", err)
		}
	}
}

func TestHoldThenAllowRunsExactCallOnce(t *testing.T) {
	f := mustFixture(t)
	args := `{"symbol":"NIFTY24DECFUT", "quantity":50,"price":24512.123456789012}`
	r := gatetest.MustHold(t, f, "fno", "place_order", args)

	if got := f.runner.runs(); len(got) != 0 {
		t.Fatalf("held call ran before a decision: %v", got)
	}
	resp, err := gatetest.Resolve(t.Context(), f.gate, r.ID, deskbot.AllowOnce, "", asha)
	if err != nil {
		t.Fatalf("resolve: %v", err)
	}
	runs := f.runner.runs()
	if len(runs) != 1 {
		t.Fatalf("runs = %d, want 1", len(runs))
	}
	if got, want := string(runs[0].Arguments), args; got != want {
		t.Errorf("ran with arguments %s, want exactly %s", got, want)
	}
	if got, want := resp.Request.State, deskbot.StateRan; got != want {
		t.Errorf("state = %s, want %s", got, want)
	}
	if resp.Request.Result == nil || resp.Request.Result.Text != "closed 2 positions" {
		t.Errorf("stored result = %+v", resp.Request.Result)
	}
	want := "The user allowed place_order (request " + r.ID + "), and the harness ran it with the arguments you gave. It was run:\nclosed 2 positions"
	inbox := f.mustInbox(t, "fno")
	if len(inbox) != 1 || inbox[0].Text != want || inbox[0].Kind != deskbot.TriggerPermission {
		t.Fatalf("desk inbox = %+v, want one permission trigger %q", inbox, want)
	}

	// A second decision, of any kind, runs nothing.
	_, err = gatetest.Resolve(t.Context(), f.gate, r.ID, deskbot.AllowOnce, "", ravi)
	if got, want := deskbot.ErrorMessage(err), "Already allowed by Asha at 14:00 IST; it ran."; got != want {
		t.Errorf("second resolve: %q, want %q", got, want)
	}
	if got := len(f.runner.runs()); got != 1 {
		t.Errorf("runs after second resolve = %d, want 1", got)
	}
}

func TestConcurrentResolvesOneWinnerOneRun(t *testing.T) {
	f := mustFixture(t)
	other := gatetest.MustNew(t, f.cfg, storetest.MustReopen(t, f.store), f.runner, f.clock.Now, quietLog())
	r := gatetest.MustHold(t, f, "main", "flatten_desk", `{}`)

	var wg sync.WaitGroup
	var mu sync.Mutex
	wins, conflicts := 0, 0
	decisions := []deskbot.Decision{deskbot.AllowOnce, deskbot.AlwaysAllow, deskbot.Deny}
	for i := range 100 {
		g := f.gate
		if i%2 == 1 {
			g = other // a second client, as another process would be
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := gatetest.Resolve(context.Background(), g, r.ID, decisions[i%3], "", deskbot.Person{ID: int64(i + 1), Name: "p"})
			mu.Lock()
			defer mu.Unlock()
			switch deskbot.ErrorCode(err) {
			case "":
				wins++
			case deskbot.ECONFLICT:
				conflicts++
			default:
				t.Errorf("resolve: %v", err)
			}
		}()
	}
	wg.Wait()
	if wins != 1 || conflicts != 99 {
		t.Fatalf("wins = %d, conflicts = %d; want 1 and 99", wins, conflicts)
	}
	after, err := f.gate.Request(t.Context(), r.ID)
	if err != nil {
		t.Fatal(err)
	}
	wantRuns := 0
	if after.Decision.Allows() {
		wantRuns = 1
	}
	if got := len(f.runner.runs()); got != wantRuns {
		t.Errorf("runs = %d, want %d (decision %s)", got, wantRuns, after.Decision)
	}
}

func TestDenyNeverRuns(t *testing.T) {
	f := mustFixture(t)
	r := gatetest.MustHold(t, f, "main", "flatten_desk", `{}`)
	resp, err := gatetest.Resolve(t.Context(), f.gate, r.ID, deskbot.Deny, "market is closing", asha)
	if err != nil {
		t.Fatalf("deny: %v", err)
	}
	if resp.Decision.Allows() {
		t.Fatal("deny allows")
	}
	for _, d := range []deskbot.Decision{deskbot.AllowOnce, deskbot.AlwaysAllow} {
		if _, err := gatetest.Resolve(t.Context(), f.gate, r.ID, d, "", ravi); deskbot.ErrorCode(err) != deskbot.ECONFLICT {
			t.Errorf("%s after deny: err = %v, want conflict", d, err)
		}
	}
	if got := f.runner.runs(); len(got) != 0 {
		t.Fatalf("denied call ran: %v", got)
	}
	want := "The user denied flatten_desk (request " + r.ID + "), so it was not run. Their reason: market is closing Do not try to reach the same result another way; ask them if it still matters."
	if inbox := f.mustInbox(t, "main"); len(inbox) != 1 || inbox[0].Text != want {
		t.Fatalf("inbox = %+v, want %q", inbox, want)
	}
}

func TestDenyWaitsForReason(t *testing.T) {
	f := mustFixture(t, func(c *gate.Config) { c.DenyReasonWait = 2 * time.Minute })
	tests := []struct {
		name   string
		finish func(t *testing.T, id string)
		want   string
	}{
		{"reason given", func(t *testing.T, id string) {
			if _, err := f.gate.AddReason(t.Context(), id, "wait for the close", asha); err != nil {
				t.Fatal(err)
			}
		}, " Their reason: wait for the close Do not"},
		{"skipped", func(t *testing.T, id string) {
			if _, err := f.gate.AddReason(t.Context(), id, "", asha); err != nil {
				t.Fatal(err)
			}
		}, "so it was not run. Do not"},
		{"wait over", func(t *testing.T, id string) {
			f.clock.Add(2*time.Minute + time.Second)
			rep, err := f.gate.Sweep(t.Context())
			if err != nil || rep.Denials != 1 {
				t.Fatalf("sweep = %+v, %v; want one denial handed over", rep, err)
			}
		}, "so it was not run. Do not"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := gatetest.MustHold(t, f, "main", "flatten_desk", `{}`)
			if _, err := gatetest.Resolve(t.Context(), f.gate, r.ID, deskbot.Deny, "", asha); err != nil {
				t.Fatal(err)
			}
			if inbox := f.mustInbox(t, "main"); len(inbox) != 0 {
				t.Fatalf("desk told before the reason: %+v", inbox)
			}
			tt.finish(t, r.ID)
			inbox := f.mustInbox(t, "main")
			if len(inbox) != 1 || !strings.Contains(inbox[0].Text, tt.want) {
				t.Fatalf("inbox = %+v, want one message containing %q", inbox, tt.want)
			}
			if _, err := f.gate.AddReason(t.Context(), r.ID, "late", ravi); deskbot.ErrorCode(err) != deskbot.ECONFLICT {
				t.Errorf("second reason: %v, want conflict", err)
			}
			if got := f.mustInbox(t, "main"); len(got) != 0 {
				t.Errorf("desk told twice: %+v", got)
			}
		})
	}
	if got := f.runner.runs(); len(got) != 0 {
		t.Fatalf("denied call ran: %v", got)
	}
}

func TestAlwaysAllowGrantsUntilRevoked(t *testing.T) {
	f := mustFixture(t)
	ctx := t.Context()
	mustNeed := func(t *testing.T, want bool) {
		t.Helper()
		got, err := needed(f.gate.Permission(ctx, "main", deskbot.ToolCall{Name: "flatten_desk"}))
		if err != nil || got != want {
			t.Fatalf("Permission = %v, %v; want %v", got, err, want)
		}
	}
	mustNeed(t, true)
	r := gatetest.MustHold(t, f, "main", "flatten_desk", `{}`)
	resp, err := gatetest.Resolve(ctx, f.gate, r.ID, deskbot.AlwaysAllow, "fine for today", asha)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(resp.Request.Response, "\nThey also allowed you to use flatten_desk without asking from now on.\nThey added: fine for today") {
		t.Errorf("message = %q", resp.Request.Response)
	}
	mustNeed(t, false)
	if need, _ := needed(f.gate.Permission(ctx, "fno", deskbot.ToolCall{Name: "flatten_desk"})); !need {
		t.Error("a grant for desk main let desk fno through")
	}
	grants, err := f.gate.Grants(ctx)
	if err != nil || len(grants) != 1 || grants[0].GrantedBy != "Asha (101)" {
		t.Fatalf("grants = %+v, %v", grants, err)
	}
	if err := f.gate.Revoke(ctx, "main", "flatten_desk", ravi); err != nil {
		t.Fatal(err)
	}
	mustNeed(t, true)
	if err := f.gate.Revoke(ctx, "main", "flatten_desk", ravi); deskbot.ErrorCode(err) != deskbot.ENOTFOUND {
		t.Errorf("second revoke: %v, want not found", err)
	}
}

func TestGrantTTL(t *testing.T) {
	f := mustFixture(t, func(c *gate.Config) { c.GrantTTL = time.Hour })
	r := gatetest.MustHold(t, f, "main", "flatten_desk", `{}`)
	if _, err := gatetest.Resolve(t.Context(), f.gate, r.ID, deskbot.AlwaysAllow, "", asha); err != nil {
		t.Fatal(err)
	}
	if need, _ := needed(f.gate.Permission(t.Context(), "main", deskbot.ToolCall{Name: "flatten_desk"})); need {
		t.Fatal("grant not in force")
	}
	f.clock.Add(time.Hour)
	if need, _ := needed(f.gate.Permission(t.Context(), "main", deskbot.ToolCall{Name: "flatten_desk"})); !need {
		t.Fatal("grant outlived GRANT_TTL")
	}
}

// Tool names no tool: the executor then leaves the call's arguments to the
// run, as a registry does for a tool it lacks.
func (r *runner) Tool(string, string) (deskbot.Tool, bool) { return nil, false }

// An allowed call runs under its request's id as its call key, however
// it was allowed and by whichever process: the broker places at most one
// order per key.
func TestAllowedCallRunsUnderTheRequestID(t *testing.T) {
	order := `{"symbol":"TCS","side":"buy","quantity":50,"price":4000}`
	for _, tt := range []struct {
		name  string
		allow func(t *testing.T, f *fixture, id string) (*deskbot.Answer, error)
	}{
		{"allow once", func(t *testing.T, f *fixture, id string) (*deskbot.Answer, error) {
			return gatetest.Resolve(t.Context(), f.gate, id, deskbot.AllowOnce, "", asha)
		}},
		{"always allow on another process", func(t *testing.T, f *fixture, id string) (*deskbot.Answer, error) {
			other := gatetest.MustNew(t, f.cfg, storetest.MustReopen(t, f.store), f.runner, f.clock.Now, quietLog())
			return gatetest.Resolve(t.Context(), other, id, deskbot.AlwaysAllow, "", asha)
		}},
		{"changed", func(t *testing.T, f *fixture, id string) (*deskbot.Answer, error) {
			ans, err := f.gate.Change(t.Context(), id, "quantity 25", 0, asha)
			if err == nil {
				ans.Request, err = gatetest.Ran(t.Context(), f.gate, id)
			}
			return ans, err
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := mustFixture(t)
			r := gatetest.MustHold(t, f, "main", "place_order", order)
			resp, err := tt.allow(t, f, r.ID)
			if err != nil || resp.Request.State != deskbot.StateRan {
				t.Fatalf("allow: %+v, %v; want it run", resp, err)
			}
			if got, want := f.runner.callKeys(), []string{r.ID}; len(got) != 1 || got[0] != want[0] {
				t.Errorf("call keys = %q; want %q (the request's id)", got, want)
			}
		})
	}
}
