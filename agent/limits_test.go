package agent_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/agent"
	"github.com/deskbot/deskbot/agent/agenttest"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/broker/brokertest"
	"github.com/deskbot/deskbot/gate"
	"github.com/deskbot/deskbot/gate/gatetest"
	"github.com/deskbot/deskbot/sizing"
	"github.com/deskbot/deskbot/store"
	"github.com/deskbot/deskbot/store/storetest"
)

type limitFixture struct {
	store  *store.Store
	paper  *broker.Paper
	market *brokertest.Quotes
	sizer  *sizing.Sizer
	exec   *agent.ToolCallExecutor
	limits *gate.HardLimits // the gate's
	now    time.Time
	mu     sync.Mutex
}

// mustLimits is an executor over the real paper broker and gate, with
// desk main's place_order under policy; guarded says whether place_order
// is held for approval. TCS trades at ₹1,000 until the test moves it.
func mustLimits(t *testing.T, tp deskbot.ToolPolicy, guarded bool) *limitFixture {
	t.Helper()
	s := storetest.MustOpen(t)
	f := &limitFixture{store: s, now: time.Date(2026, 11, 30, 8, 30, 0, 0, time.UTC)}
	now := func() time.Time { f.mu.Lock(); defer f.mu.Unlock(); return f.now }
	f.market = &brokertest.Quotes{}
	f.market.Set("TCS", 1000)
	f.paper = broker.NewPaperMarket(s, now, f.market)
	regs := agent.Registries{"main": agent.NewRegistry(broker.Tools(f.paper, nil, nil)...)}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	policies := deskbot.Policies{"main": {"place_order": tp}}
	var tools []string
	if guarded {
		tools = []string{"place_order"}
	}
	// One set of limits, as the service has: the desk's calls are checked
	// by them, and four eyes values orders by them.
	f.market.Now = now
	f.sizer = &sizing.Sizer{Market: f.paper, Check: f.paper.Check, Now: now}
	limits := &gate.HardLimits{Policies: policies, Broker: f.paper, Sizer: f.sizer, Requests: s, Counter: s, Audit: s, Now: now, Log: log}
	f.limits = limits
	g := gatetest.MustNew(t, gate.Config{Tools: tools, Expiry: time.Hour, Policies: policies, Limits: limits}, s, regs, now, log)
	f.exec = &agent.ToolCallExecutor{Runner: regs, Gate: g, Events: s, Memory: s, Now: now, MaxRepeats: 100, Log: log, Reader: f.sizer}
	return f
}

func order(side string, qty, price float64) string {
	return fmt.Sprintf(`{"symbol":"TCS","side":%q,"quantity":%v,"price":%v}`, side, qty, price)
}

func (f *limitFixture) place(t *testing.T, trigger, args string) agent.Execution {
	t.Helper()
	turn := agenttest.Begin(t, f.exec, "main", trigger)
	ex, err := f.exec.Execute(t.Context(), turn, deskbot.ToolCall{ID: trigger, Name: "place_order", Arguments: []byte(args)})
	if err != nil {
		t.Fatalf("execute: %v", err)
	}
	turn.Record()
	return ex
}

func (f *limitFixture) refusals(t *testing.T) []string {
	t.Helper()
	trail, err := f.store.AuditTrail(t.Context(), 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range trail {
		if e.Action == "refuse" {
			out = append(out, e.Desk+" "+e.Tool+" "+e.By+": "+e.Detail)
		}
	}
	return out
}

func TestHardLimitOnOneOrderRefusesWithoutARequest(t *testing.T) {
	f := mustLimits(t, deskbot.ToolPolicy{MaxOrderNotional: 2000000}, true)
	ex := f.place(t, "t1", order("buy", 1000, 4000)) // ₹40,00,000
	want := "place_order was refused by a hard limit of this desk, so it was not run and nobody was asked: its notional ₹40,00,000.00 is above the desk's limit of ₹20,00,000.00 for one order. Do not split it into smaller calls or reach the same result another way; tell the user if it still matters."
	if !ex.Refused || ex.Held || !ex.Result.IsError || ex.Result.Text != want {
		t.Fatalf("execution = %+v;\nwant refused with %q", ex, want)
	}
	if open, _ := f.store.OpenRequests(t.Context()); len(open) != 0 {
		t.Fatalf("a request exists: %+v", open[0])
	}
	wantAudit := []string{`main place_order desk main: its notional ₹40,00,000.00 is above the desk's limit of ₹20,00,000.00 for one order; {"price":4000,"quantity":1000,"side":"buy","symbol":"TCS"}`}
	if got := f.refusals(t); fmt.Sprint(got) != fmt.Sprint(wantAudit) {
		t.Errorf("audit = %q; want %q", got, wantAudit)
	}
	// At the limit is not above it: held as usual.
	if ex := f.place(t, "t2", order("buy", 500, 4000)); !ex.Held {
		t.Fatalf("an order at the limit: %+v; want held", ex)
	}
}

// The hostile desk splits a large position into many small held orders:
// orders still waiting for approval count as filled, so the split stops
// where the whole would have.
func TestHardLimitOnPositionCountsHeldOrders(t *testing.T) {
	f := mustLimits(t, deskbot.ToolPolicy{MaxPositionNotional: 1000000}, true) // 1,000 TCS at ₹1,000
	var held, refused int
	for i := range 10 {
		ex := f.place(t, fmt.Sprintf("split-%d", i), order("buy", 300, 1000))
		switch {
		case ex.Held:
			held++
		case ex.Refused:
			refused++
			if !strings.Contains(ex.Result.Text, "it would take the desk's TCS position to long 1,200 (₹12,00,000.00 at this price, orders waiting for approval on the same side counted as filled), above the desk's position limit of ₹10,00,000.00") {
				t.Errorf("refusal = %q", ex.Result.Text)
			}
		}
	}
	if held != 3 || refused != 7 {
		t.Fatalf("held %d, refused %d; want 3 and 7", held, refused)
	}
	// A sell while only buys wait: were they denied, it would open a short
	// of 300 (₹3,00,000), within the limit.
	if ex := f.place(t, "reduce", order("sell", 300, 1000)); !ex.Held {
		t.Fatalf("sell while buys wait: %+v; want held", ex)
	}
	// Going short through zero past the limit is refused too.
	if ex := f.place(t, "flip", order("sell", 2500, 1000)); !ex.Refused {
		t.Fatalf("short past the limit: %+v; want refused", ex)
	}
}

// Positions and orders are valued at the market's price, which the test
// moves: a rise past the limit stops buying, never the selling that
// shrinks the position; an order priced under the market is valued at it.
func TestHardLimitValuesAtTheMarket(t *testing.T) {
	f := mustLimits(t, deskbot.ToolPolicy{MaxOrderNotional: 1500000, MaxPositionNotional: 1000000}, false)
	steps := []struct {
		name   string
		market float64
		args   string
		want   string // ran, refused, or the refusal's words
	}{
		{"buy at the market", 1000, order("buy", 900, 1000), "ran"},
		{"buy more after the market doubled", 2000, order("buy", 1, 2100),
			"it would take the desk's TCS position to long 901 (₹18,92,100.00 at this price"},
		{"sell into the rise", 2000, order("sell", 100, 1900), "ran"},
		{"one order priced at a paisa", 2000, order("sell", 1000, 0.01),
			"its notional ₹20,00,000.00 at the market's price of ₹2,000.00 is above the desk's limit of ₹15,00,000.00 for one order"},
	}
	for _, s := range steps {
		f.market.Set("TCS", s.market)
		ex := f.place(t, s.name, s.args)
		switch got := outcome(ex.Held, ex.Refused); {
		case s.want == "ran" && (got != "ran" || ex.Result.IsError):
			t.Errorf("%s: %s (%q); want it run", s.name, got, ex.Result.Text)
		case s.want != "ran" && (got != "refused" || !strings.Contains(ex.Result.Text, s.want)):
			t.Errorf("%s: %s (%q); want refused with %q", s.name, got, ex.Result.Text, s.want)
		}
	}
	if got, want := f.mustTCS(t), 800.0; got != want {
		t.Errorf("TCS position = %v; want %v", got, want)
	}
}

// Orders put forward at once from many turns: exactly the day's maximum
// runs, the rest are refused; the next India day starts afresh.
func TestHardLimitOnOrdersPerDay(t *testing.T) {
	f := mustLimits(t, deskbot.ToolPolicy{MaxOrdersPerDay: 3}, false)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var texts []string
	for i := range 12 {
		wg.Go(func() {
			ex := f.place(t, fmt.Sprintf("day-%d", i), order("buy", 1, 1000))
			if ex.Refused {
				mu.Lock()
				texts = append(texts, ex.Result.Text)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	trades, err := f.paper.Trades(t.Context(), "main", 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(trades) != 3 || len(texts) != 9 {
		t.Fatalf("fills %d, refused %d; want 3 and 9", len(trades), len(texts))
	}
	want := "place_order was refused by a hard limit of this desk, so it was not run and nobody was asked: the desk has already put forward 3 orders today (India time), its daily limit. Do not split it into smaller calls or reach the same result another way; tell the user if it still matters."
	if texts[0] != want {
		t.Errorf("refusal = %q; want %q", texts[0], want)
	}
	if got := len(f.refusals(t)); got != 9 {
		t.Errorf("audited refusals = %d; want 9", got)
	}
	f.mu.Lock()
	f.now = f.now.Add(16 * time.Hour) // past midnight in India
	f.mu.Unlock()
	if ex := f.place(t, "next-day", order("buy", 1, 1000)); ex.Refused {
		t.Fatalf("next day: %+v; want run", ex)
	}
}

// Limits that cannot be checked never let the call through.
func TestHardLimitUncheckedIsNotRun(t *testing.T) {
	f := mustLimits(t, deskbot.ToolPolicy{MaxPositionNotional: 1000000}, false)
	f.limits.Broker = downBroker{}
	ex := f.place(t, "t", order("buy", 1, 1000))
	if !ex.Refused || !strings.HasPrefix(ex.Result.Text, "place_order was not run: the desk's hard limits could not be checked") {
		t.Fatalf("execution = %+v", ex)
	}
	if trades, _ := f.paper.Trades(t.Context(), "main", 10); len(trades) != 0 {
		t.Fatal("the order filled")
	}
}

type downBroker struct{ deskbot.Broker }

func (downBroker) Book(context.Context, string) (deskbot.Book, error) {
	return deskbot.Book{}, deskbot.Errorf(deskbot.EUNAVAILABLE, "The paper broker's store (Redis) is unavailable.")
}

// An order is read once: from the desk's call to its hold, its arguments
// are parsed once and the market read once, however many rules (hard
// limits, four eyes over the day, the position with its waiting orders)
// look at it; and the held request keeps what was read, so the allow and
// the run read neither again for sizing (the run's tool reads the
// arguments it runs, the paper broker the price it fills at, and the
// desk's answer values its book).
func TestAnOrderIsReadOnce(t *testing.T) {
	f := mustLimits(t, deskbot.ToolPolicy{Approvals: 1, TwoApproversAbove: 5000000, MaxOrderNotional: 2000000, MaxPositionNotional: 3000000, MaxOrdersPerDay: 10}, true)
	parses, reads := deskbot.OrdersParsed(), f.market.Reads()
	ex := f.place(t, "t1", `{"symbol":"TCS","side":"sell","quantity":100,"price":990}`) // a LIMIT sell: sized at the market's ₹1,000
	if !ex.Held {
		t.Fatalf("execution = %+v; want held", ex)
	}
	if got, want := deskbot.OrdersParsed()-parses, int64(1); got != want {
		t.Errorf("parses from the call to its hold = %d, want %d", got, want)
	}
	if got, want := f.market.Reads()-reads, 1; got != want {
		t.Errorf("market reads from the call to its hold = %d, want %d", got, want)
	}
	r, err := f.store.Request(t.Context(), ex.Request.ID)
	if err != nil || r.Content.Order == nil || r.Content.Order.Exposure != 100000 || r.Content.Order.Market.Value != 1000 {
		t.Fatalf("the held request keeps %+v (%v); want the order sized at ₹1,00,000 at the market's ₹1,000", r.Content.Order, err)
	}

	// The market moves while it waits: the allow runs what was shown, and
	// nothing is sized again.
	f.market.Set("TCS", 1200)
	parses, reads = deskbot.OrdersParsed(), f.market.Reads()
	resp, err := gatetest.Resolve(t.Context(), f.exec.Gate.(deskbot.Gate), r.ID, deskbot.AllowOnce, "", deskbot.Person{ID: 1, Name: "Asha"})
	if err != nil || resp.Request.State != deskbot.StateRan {
		t.Fatalf("allow: %+v %v; want ran", resp, err)
	}
	if got, want := deskbot.OrdersParsed()-parses, int64(1); got != want {
		t.Errorf("parses from the allow to the order = %d, want %d (the tool's own)", got, want)
	}
	if got, want := f.market.Reads()-reads, 2; got != want {
		t.Errorf("market reads from the allow to the order = %d, want %d (the fill's, and the book's in the desk's answer)", got, want)
	}
}
