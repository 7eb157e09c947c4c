package agent_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/agent"
	"github.com/deskbot/deskbot/agent/agenttest"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/broker/brokertest"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/gate"
	"github.com/deskbot/deskbot/gate/gatetest"
	"github.com/deskbot/deskbot/sizing"
	"github.com/deskbot/deskbot/store/storetest"
	"github.com/deskbot/deskbot/words"
)

// modifyWorld is the service's path for desks main and other on the
// paper broker, with main's place_order (and so modify_order) under
// policy.
type modifyWorld struct {
	paper *broker.Paper
	store interface {
		OpenRequests(context.Context) ([]*deskbot.Request, error)
	}
	gate   *gate.Gate
	modify func(desk, trigger, args string) agent.Execution
}

func mustModifyWorld(t *testing.T, policy deskbot.ToolPolicy) *modifyWorld {
	t.Helper()
	s := storetest.MustOpen(t)
	clock := deskbottest.NewClock(time.Date(2026, 11, 30, 8, 30, 0, 0, time.UTC))
	market := &brokertest.Quotes{Now: clock.Now}
	market.Set("TCS", 1000)
	paper := broker.NewPaperMarket(s, clock.Now, market)
	tools := broker.Tools(paper, nil, nil)
	regs := agent.Registries{"main": agent.NewRegistry(tools...), "other": agent.NewRegistry(tools...)}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	policies := deskbot.Policies{"main": {deskbot.ToolPlaceOrder: policy}}
	sizer := &sizing.Sizer{Market: paper, Check: paper.Check, Orders: paper, Now: clock.Now}
	limits := &gate.HardLimits{Policies: policies, Broker: paper, Sizer: sizer, Requests: s, Counter: s, Audit: s, Now: clock.Now, Log: log}
	g := gatetest.MustNew(t, gate.Config{Tools: []string{deskbot.ToolPlaceOrder, deskbot.ToolModifyOrder}, Expiry: time.Hour, Policies: policies, Limits: limits}, s, regs, clock.Now, log)
	exec := &agent.ToolCallExecutor{Runner: regs, Gate: g, Events: s, Memory: s, Now: clock.Now, MaxRepeats: 100, Log: log, Reader: sizer}
	modify := func(desk, trigger, args string) agent.Execution {
		t.Helper()
		turn := agenttest.Begin(t, exec, desk, trigger)
		ex, err := exec.Execute(t.Context(), turn, deskbot.ToolCall{ID: trigger, Name: deskbot.ToolModifyOrder, Arguments: []byte(args)})
		if err != nil {
			t.Fatalf("execute: %v", err)
		}
		turn.Record()
		return ex
	}
	return &modifyWorld{paper: paper, store: s, gate: g, modify: modify}
}

// modify_order end to end, as the service runs it: read where it enters,
// limited as the order it becomes, held with the change in words, run
// once on an allow. main's position limit is ₹10,00,000 (1,000 TCS at
// ₹1,000).
func TestHostileModifyOrder(t *testing.T) {
	w := mustModifyWorld(t, deskbot.ToolPolicy{MaxPositionNotional: 1_000_000})
	paper, s, g, modify := w.paper, w.store, w.gate, w.modify
	mine, err := paper.PlaceOrder(t.Context(), "main", deskbottest.NewKey(), deskbot.Order{Symbol: "TCS", Side: deskbot.Buy, Quantity: 500, Price: 900, Type: deskbot.OrderLimit, Product: deskbot.ProductMIS})
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := paper.PlaceOrder(t.Context(), "other", deskbottest.NewKey(), deskbot.Order{Symbol: "TCS", Side: deskbot.Buy, Quantity: 5, Price: 900, Type: deskbot.OrderLimit, Product: deskbot.ProductMIS})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, args, says string }{
		{"another desk's order", `{"order_id":"` + theirs.ID + `","price":950}`, "no order"},
		{"a position past the limit", `{"order_id":"` + mine.ID + `","quantity":1100}`, "above the desk's position limit"},
		{"a price of ₹0", `{"order_id":"` + mine.ID + `","price":0}`, "greater than 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex := modify("main", "t-"+tc.name, tc.args)
			if !ex.Refused || ex.Held || !strings.Contains(ex.Result.Text, tc.says) {
				t.Fatalf("%+v; want refused saying %q", ex, tc.says)
			}
			if open, _ := s.OpenRequests(t.Context()); len(open) != 0 {
				t.Fatalf("a request exists: %+v", open[0])
			}
		})
	}
	ex := modify("main", "t-ok", `{"order_id":"`+mine.ID+`","price":950}`)
	if !ex.Held {
		t.Fatalf("%+v; want held", ex)
	}
	open, err := s.OpenRequests(t.Context())
	if err != nil || len(open) != 1 {
		t.Fatalf("open requests %v, %v; want one", open, err)
	}
	shown := strings.Join(words.TradingWords(open[0], words.Live{}), "\n")
	if want := "Modifies order " + mine.ID + ": BUY 500 TCS LIMIT 900.00 → 950.00 · MIS"; !strings.Contains(shown, want) {
		t.Errorf("shown %q, want %q", shown, want)
	}
	if _, err := gatetest.Resolve(t.Context(), g, open[0].ID, deskbot.AllowOnce, "", deskbot.Person{ID: 1, Name: "Asha"}); err != nil {
		t.Fatal(err)
	}
	orders, err := paper.Orders(t.Context(), "main")
	if err != nil {
		t.Fatal(err)
	}
	if got := orders[0]; got.Order.Price != 950 || len(got.Modifications) != 1 {
		t.Errorf("main's order %+v, want at 950.00, modified once", got)
	}
	if got, _ := paper.Orders(t.Context(), "other"); got[0].Order.Price != 900 || len(got[0].Modifications) != 0 {
		t.Errorf("other's order %+v, want unchanged", got[0])
	}
}

// Under two_approvers_above a modification adds the order as it becomes to
// the desk's day: small orders grown one at a time need two approvers
// once the day's total passes the threshold.
func TestHostileModificationsAddUpUnderFourEyes(t *testing.T) {
	w := mustModifyWorld(t, deskbot.ToolPolicy{Approvals: 2, TwoApproversAbove: 1_000_000})
	var needs []int
	for i := range 2 {
		po, err := w.paper.PlaceOrder(t.Context(), "main", deskbottest.NewKey(), deskbot.Order{Symbol: "TCS", Side: deskbot.Buy, Quantity: 1, Price: 900, Type: deskbot.OrderLimit, Product: deskbot.ProductMIS})
		if err != nil {
			t.Fatal(err)
		}
		if ex := w.modify("main", fmt.Sprint("grow-", i), `{"order_id":"`+po.ID+`","quantity":900}`); !ex.Held {
			t.Fatalf("%+v; want held", ex)
		}
		open, err := w.store.OpenRequests(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range open {
			if strings.Contains(string(r.Content.Arguments), po.ID) {
				needs = append(needs, r.Needs())
			}
		}
	}
	if got, want := fmt.Sprint(needs), "[1 2]"; got != want {
		t.Errorf("approvers needed by two modifications of ₹9,00,000 each: %s, want %s", got, want)
	}
}
