package gate_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/gate"
	"github.com/deskbot/deskbot/gate/gatetest"
)

// A desk's place_gtt that could open or grow a position is refused by the
// hard limits, before anyone is asked, and audited; one that only closes
// what the desk holds passes to the gate's hold.
func TestGTTRefusedBeforeAnyoneIsAsked(t *testing.T) {
	f := mustRiskLimits(t, deskbot.RiskRules{}, time.Date(2026, 12, 3, 11, 0, 0, 0, deskbot.IST))
	if _, err := f.paper.PlaceOrder(t.Context(), "main", deskbottest.NewKey(), deskbot.Order{Symbol: "TCS", Side: deskbot.Buy, Quantity: 10, Type: deskbot.OrderMarket, Product: deskbot.ProductMIS}); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, desk, args, want string }{
		{"closes main's long", "main", `{"symbol":"TCS","side":"sell","quantity":10,"stop_trigger":950,"stop_price":945,"target_trigger":1100,"target_price":1095}`, ""},
		{"grows main's long", "main", `{"symbol":"TCS","side":"buy","quantity":10,"stop_trigger":1050,"stop_price":1055}`, "a buy would grow"},
		{"more than main holds", "main", `{"symbol":"TCS","side":"sell","quantity":11,"stop_trigger":950,"stop_price":945}`, "more than the 10 TCS"},
		{"main's position, from another desk", "other", `{"symbol":"TCS","side":"sell","quantity":10,"stop_trigger":950,"stop_price":945}`, "holds no TCS"},
		{"a symbol main does not hold", "main", `{"symbol":"INFY","side":"sell","quantity":1,"stop_trigger":950,"stop_price":945}`, "holds no INFY"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			release, refusal := f.limits.Check(t.Context(), tt.desk, deskbot.ToolCall{ID: "c", Name: deskbot.ToolPlaceGTT, Arguments: []byte(tt.args)})
			if tt.want == "" {
				if release == nil {
					t.Fatalf("refused: %s", refusal)
				}
				release()
				return
			}
			if release != nil || !strings.Contains(refusal, tt.want) {
				t.Errorf("got release %v, refusal %q; want refused saying %q", release != nil, refusal, tt.want)
			}
		})
	}
	trail, err := f.st.AuditTrail(t.Context(), 100)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range trail {
		if e.Action == "refuse" && e.Tool == deskbot.ToolPlaceGTT {
			n++
		}
	}
	if got, want := n, 4; got != want {
		t.Errorf("%d refusals of place_gtt audited, want %d", got, want)
	}
}

// A desk's active GTTs are orders waiting at the broker: each may fire
// whenever the market reaches it. An order on a GTT's side counts them as
// filled, so a sell that only closes a long beside a stop that closes it
// too (together a short) is held to the position limit as the short it
// may become.
func TestOrderBesideAGTTCountsItAsFilled(t *testing.T) {
	f := mustRiskLimits(t, deskbot.RiskRules{}, time.Date(2026, 12, 3, 11, 0, 0, 0, deskbot.IST))
	f.limits.Policies = deskbot.Policies{"main": {deskbot.ToolPlaceOrder: {MaxPositionNotional: 5000}}}
	f.hold(t, "main", 10)
	if got := f.check(t, "main", "sell", 10); got != "" {
		t.Fatalf("a sell that closes the long, no GTT: refused %q", got)
	}
	g := deskbot.GTT{Symbol: "TCS", Side: deskbot.Sell, Quantity: 10, Product: deskbot.ProductMIS, Stop: deskbot.GTTLeg{Trigger: 950, Price: 945}}
	if _, err := f.paper.PlaceGTT(t.Context(), "main", deskbottest.NewKey(), g); err != nil {
		t.Fatal(err)
	}
	if got := f.check(t, "main", "sell", 10); !strings.Contains(got, "position limit") {
		t.Errorf("a sell of the long beside a GTT that sells it too: got %q, want refused for the position limit", got)
	}
	if got := f.check(t, "main", "sell", 4); got != "" {
		t.Errorf("a sell of 4 beside the GTT (a short of 4 at most): refused %q", got)
	}
}

// A place_gtt beside the desk's own resting sell that together sell more
// than its long is refused before anyone is asked: the broker fires a GTT
// whatever rests, and both trading would open a short.
func TestGTTBesideARestingSellRefusedBeforeAnyoneIsAsked(t *testing.T) {
	f := mustRiskLimits(t, deskbot.RiskRules{}, time.Date(2026, 12, 3, 11, 0, 0, 0, deskbot.IST))
	f.hold(t, "main", 10)
	if _, err := f.paper.PlaceOrder(t.Context(), "main", deskbottest.NewKey(), deskbot.Order{Symbol: "TCS", Side: deskbot.Sell, Quantity: 4, Price: 1200}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		qty  int
		want string // "" passes
	}{
		{7, "open orders on TCS may still sell"},
		{6, ""},
	} {
		args := fmt.Sprintf(`{"symbol":"TCS","side":"sell","quantity":%d,"stop_trigger":950,"stop_price":945}`, tt.qty)
		release, refusal := f.limits.Check(t.Context(), "main", deskbot.ToolCall{ID: "c", Name: deskbot.ToolPlaceGTT, Arguments: []byte(args)})
		if release != nil {
			release()
		}
		if got := refusal; tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
			t.Errorf("a GTT of %d beside a resting sell of 4 on a long of 10: refusal %q, want %q", tt.qty, got, tt.want)
		}
	}
}

// Two place_gtt calls of one desk, each within its long but together more
// than it, each of which an approver may allow: the second is refused
// before anyone is asked while the first waits for approval, and while it
// runs, since both allowed would place two GTTs that, fired together, open
// a short. Once the first has run (here placing nothing), a GTT of the
// whole long may be put forward again.
func TestGTTBesideAHeldGTTRefusedBeforeAnyoneIsAsked(t *testing.T) {
	f := mustRiskLimits(t, deskbot.RiskRules{}, time.Date(2026, 12, 3, 11, 0, 0, 0, deskbot.IST))
	f.hold(t, "main", 10)
	now := func() time.Time { return *f.now.Load() }
	run := &runner{block: make(chan struct{})}
	g := gatetest.MustNew(t, gate.Config{Tools: []string{deskbot.ToolPlaceGTT}, Expiry: 5 * time.Minute, Limits: f.limits}, f.st, run, now, quietLog())
	ask := func(qty int) deskbot.Verdict { return mustAskStopGTT(t, g, qty, "") }
	first := ask(10)
	if first.Held == nil {
		t.Fatalf("the first GTT, of the whole long: %+v, want it held", first.Result)
	}
	refusedBeside := func(when string) {
		t.Helper()
		v := ask(4)
		if !v.Refused || !strings.Contains(v.Result.Text, "waiting for approval") {
			t.Errorf("a GTT of 4 beside one of 10 %s, on a long of 10: %+v, want refused naming the other GTT", when, v.Result)
		}
		if open, err := f.st.OpenRequests(t.Context()); err != nil || len(open) != 0 && open[0].ID != first.Held.ID || len(open) > 1 {
			t.Errorf("open requests %s: %d (%v), want none but the first: nobody is asked of the second", when, len(open), err)
		}
	}
	refusedBeside("held")
	if ans, err := g.Decide(t.Context(), first.Held.ID, deskbot.Seen{Changes: -1, Whole: true}, deskbot.AllowOnce, "", asha); err != nil || ans.Request.State != deskbot.StateRunning {
		t.Fatalf("allow: %+v, %v; want it running", ans, err)
	}
	refusedBeside("running")
	close(run.block)
	if r, err := gatetest.Ran(t.Context(), g, first.Held.ID); err != nil || r.State != deskbot.StateRan {
		t.Fatalf("the first GTT's run: %+v, %v", r, err)
	}
	if v := ask(10); v.Held == nil {
		t.Errorf("a GTT of the whole long once the first ran and placed nothing: %+v, want it held", v.Result)
	}
}

// gttPlacer places each place_gtt it runs at the paper broker, under the
// call's key, once block is closed.
type gttPlacer struct {
	paper *broker.Paper
	block chan struct{}
}

func (p *gttPlacer) RunTool(ctx context.Context, desk string, call deskbot.ToolCall) (deskbot.ToolResult, error) {
	<-p.block
	g, err := deskbot.ParseGTT(call.Arguments)
	if err != nil {
		return deskbot.ToolResult{Text: deskbot.ErrorMessage(err), IsError: true}, nil
	}
	key, _ := deskbot.CallKey(ctx)
	if _, err := p.paper.PlaceGTT(ctx, desk, key, g); err != nil {
		return deskbot.ToolResult{Text: deskbot.ErrorMessage(err), IsError: true}, nil
	}
	return deskbot.ToolResult{Text: "placed"}, nil
}

// lateGTTs is a broker whose next read of a desk's GTTs, once armed, is
// followed at once by finish: a call running beside places its GTT and
// ends just after the read, so the read does not hold that GTT and the
// call is no longer running afterwards.
type lateGTTs struct {
	deskbot.Broker
	armed  atomic.Bool
	finish func()
}

var _ deskbot.Broker = (*lateGTTs)(nil)

func (l *lateGTTs) GTTs(ctx context.Context, desk string) ([]deskbot.PlacedGTT, error) {
	gs, err := l.Broker.GTTs(ctx, desk)
	if l.armed.CompareAndSwap(true, false) {
		l.finish()
	}
	return gs, err
}

// A place_gtt of the desk that runs (placing its GTT) and ends while
// another of its place_gtt calls is being checked is counted by the check
// once, as running or as placed, never missed between the two: the
// other, which together with it would close more than the long, is
// refused before anyone is asked, not put to an approver for the broker
// to refuse once allowed.
func TestGTTBesideAGTTPlacedWhileItIsCheckedRefusedBeforeAnyoneIsAsked(t *testing.T) {
	f := mustRiskLimits(t, deskbot.RiskRules{}, time.Date(2026, 12, 3, 11, 0, 0, 0, deskbot.IST))
	f.hold(t, "main", 10)
	now := func() time.Time { return *f.now.Load() }
	run := &gttPlacer{paper: f.paper, block: make(chan struct{})}
	late := &lateGTTs{Broker: f.paper}
	f.limits.Broker = late
	g := gatetest.MustNew(t, gate.Config{Tools: []string{deskbot.ToolPlaceGTT}, Expiry: 5 * time.Minute, Limits: f.limits}, f.st, run, now, quietLog())
	ask := func(qty int) deskbot.Verdict { return mustAskStopGTT(t, g, qty, "MIS") }
	first := ask(10)
	if first.Held == nil {
		t.Fatalf("the first GTT, of the whole long: %+v, want it held", first.Result)
	}
	if ans, err := g.Decide(t.Context(), first.Held.ID, deskbot.Seen{Changes: -1, Whole: true}, deskbot.AllowOnce, "", asha); err != nil || ans.Request.State != deskbot.StateRunning {
		t.Fatalf("allow: %+v, %v; want it running", ans, err)
	}
	late.finish = func() {
		close(run.block)
		if r, err := gatetest.Ran(t.Context(), g, first.Held.ID); err != nil || r.State != deskbot.StateRan {
			t.Errorf("the first GTT's run: %+v, %v; want it ran", r, err)
		}
	}
	late.armed.Store(true)
	if v := ask(4); !v.Refused {
		t.Errorf("a GTT of 4 beside one of 10 placed while it was checked, on a long of 10: %+v, want refused before anyone is asked", v.Held)
	}
	gs, err := f.paper.GTTs(t.Context(), "main")
	if err != nil || deskbot.Covered(gs, "TCS", deskbot.Sell) != 10 {
		t.Errorf("active GTTs: %+v, %v; want the first's 10", gs, err)
	}
}

// mustAskStopGTT asks g for main's stop-loss GTT selling qty TCS (product
// named when not ""), releases the verdict and returns it.
func mustAskStopGTT(t *testing.T, g *gate.Gate, qty int, product string) deskbot.Verdict {
	t.Helper()
	args := fmt.Sprintf(`{"symbol":"TCS","side":"sell","quantity":%d,"stop_trigger":950,"stop_price":945`, qty)
	if product != "" {
		args += `,"product":"` + product + `"`
	}
	v, err := g.Ask(t.Context(), "main", "trigger-1", deskbot.ToolCall{ID: "c", Name: deskbot.ToolPlaceGTT, Arguments: []byte(args + "}")}, nil)
	if err != nil {
		t.Fatalf("ask for a GTT of %d: %v", qty, err)
	}
	v.Release()
	return v
}
