package broker_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/sizing"
	"github.com/deskbot/deskbot/words"
)

// runModify reads desk's modify_order where it enters and runs it through
// the tool under key, as the executor and the gate do.
func runModify(t *testing.T, p *broker.Paper, desk, key, args string) (deskbot.ToolResult, error) {
	t.Helper()
	call, err := readModify(t, p, desk, args)
	if err != nil {
		return deskbot.ToolResult{}, err
	}
	return runRead(t, p, desk, key, call)
}

func readModify(t *testing.T, p *broker.Paper, desk, args string) (deskbot.ToolCall, error) {
	t.Helper()
	s := &sizing.Sizer{Market: p, Check: p.Check, Orders: p, Now: time.Now}
	return s.Read(t.Context(), desk, deskbot.ToolCall{ID: "c", Name: deskbot.ToolModifyOrder, Arguments: json.RawMessage(args)})
}

// runRead runs a call read before, as the gate runs an allowed one.
func runRead(t *testing.T, p *broker.Paper, desk, key string, call deskbot.ToolCall) (deskbot.ToolResult, error) {
	t.Helper()
	return modifyTool(t, p).Run(deskbot.WithReadOrder(deskbot.WithCallKey(t.Context(), key), call.Order), desk, call.Arguments)
}

func modifyTool(t *testing.T, p *broker.Paper) deskbot.Tool {
	t.Helper()
	for _, tl := range broker.Tools(p, nil, nil) {
		if tl.Name() == deskbot.ToolModifyOrder {
			return tl
		}
	}
	t.Fatal("no modify_order tool")
	return nil
}

func mustPaperOrder(t *testing.T, p *broker.Paper, desk string, o deskbot.Order) deskbot.PlacedOrder {
	t.Helper()
	po, err := p.PlaceOrder(t.Context(), desk, deskbottest.NewKey(), o.ForDesk(deskbot.ProductMIS))
	if err != nil {
		t.Fatal(err)
	}
	return po
}

func paperOrder(t *testing.T, p *broker.Paper, desk, id string) deskbot.PlacedOrder {
	t.Helper()
	orders, err := p.Orders(t.Context(), desk)
	if err != nil {
		t.Fatal(err)
	}
	for _, po := range orders {
		if po.ID == id {
			return po
		}
	}
	t.Fatalf("%s has no order %s", desk, id)
	return deskbot.PlacedOrder{}
}

// A desk's resting paper order is modified once per allowed call, and
// fills once the market allows it as it became.
func TestPaperModifyOrder(t *testing.T) {
	p, tape := mustMarket(t)
	tape.Set("INFY", 1500)
	po := mustPaperOrder(t, p, "alpha", buy("INFY", 10, 1400))
	key := deskbottest.NewKey()
	call, err := readModify(t, p, "alpha", `{"order_id":"`+po.ID+`","price":1450}`)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(words.ModifyLines(call), "\n"), "Modifies order "+po.ID+": BUY 10 INFY LIMIT 1,400.00 → 1,450.00 · MIS"; !strings.HasPrefix(got, want) {
		t.Errorf("shown as %q, want it to start %q", got, want)
	}
	for range 2 { // run again with its key (a replay), it changes nothing more
		res, err := runRead(t, p, "alpha", key, call)
		if err != nil || res.IsError || !strings.HasPrefix(res.Text, "Modified: ") {
			t.Fatalf("modify: %+v, %v", res, err)
		}
		got := paperOrder(t, p, "alpha", po.ID)
		if got.Order.Price != 1450 || len(got.Modifications) != 1 || got.State != deskbot.OrderOpen {
			t.Fatalf("order %+v, want open at 1,450 modified once", got)
		}
	}
	if _, err := runModify(t, p, "alpha", deskbottest.NewKey(), `{"order_id":"`+po.ID+`","price":1500,"quantity":12}`); err != nil {
		t.Fatal(err)
	}
	got := paperOrder(t, p, "alpha", po.ID)
	if got.State != deskbot.OrderComplete || got.Filled != 12 || len(got.Modifications) != 2 {
		t.Fatalf("order %+v, want 12 filled after its second modification", got)
	}
	if b := mustBook(t, p, "alpha"); len(b.Positions) != 1 || b.Positions[0].Quantity != 12 {
		t.Errorf("book %+v, want long 12 INFY", b)
	}
}

// The hostile desk on paper: another desk's order, one not open, a call
// run without the reading that was shown, or one whose order changed since
// it was shown changes nothing.
func TestPaperModifyRefusals(t *testing.T) {
	p, tape := mustMarket(t)
	tape.Set("INFY", 1500)
	mine := mustPaperOrder(t, p, "alpha", buy("INFY", 10, 1400))
	theirs := mustPaperOrder(t, p, "beta", buy("INFY", 10, 1400))
	filled := mustPaperOrder(t, p, "alpha", buy("INFY", 1, 1600))
	for _, tc := range []struct{ name, args, says string }{
		{"another desk's order", `{"order_id":"` + theirs.ID + `","price":1450}`, "no order"},
		{"an order that filled", `{"order_id":"` + filled.ID + `","price":1450}`, "complete"},
		{"a price of ₹0", `{"order_id":"` + mine.ID + `","price":0}`, "greater than 0"},
		{"a fractional quantity", `{"order_id":"` + mine.ID + `","quantity":2.5}`, "whole number"},
		{"a MARKET order with a price", `{"order_id":"` + mine.ID + `","order_type":"MARKET","price":1450}`, "takes no price"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runModify(t, p, "alpha", deskbottest.NewKey(), tc.args)
			if deskbot.ErrorCode(err) != deskbot.EINVALID || !strings.Contains(deskbot.ErrorMessage(err), tc.says) {
				t.Fatalf("got %v, want refused saying %q", err, tc.says)
			}
		})
	}
	// Run without its reading (a call the approver was never shown).
	res, err := modifyTool(t, p).Run(deskbot.WithCallKey(t.Context(), deskbottest.NewKey()), "alpha", json.RawMessage(`{"order_id":"`+mine.ID+`","price":1450}`))
	if err != nil || !res.IsError {
		t.Errorf("run without its reading: %+v, %v, want refused", res, err)
	}
	// Shown before the order changed: the change does not run.
	m := deskbot.Modification{ID: mine.ID, From: buy("INFY", 8, 1400).ForDesk(deskbot.ProductMIS), To: buy("INFY", 9, 1400).ForDesk(deskbot.ProductMIS)}
	if _, err := p.ModifyOrder(context.Background(), "alpha", deskbottest.NewKey(), m); deskbot.ErrorCode(err) != deskbot.ECONFLICT {
		t.Errorf("modifying an order that changed since shown: %v, want ECONFLICT", err)
	}
	m = deskbot.Modification{ID: theirs.ID, From: theirs.Order, To: buy("INFY", 20, 1400).ForDesk(deskbot.ProductMIS)}
	if _, err := p.ModifyOrder(context.Background(), "alpha", deskbottest.NewKey(), m); deskbot.ErrorCode(err) != deskbot.ENOTFOUND {
		t.Errorf("alpha modifying beta's order: %v, want ENOTFOUND", err)
	}
	for desk, po := range map[string]deskbot.PlacedOrder{"alpha": mine, "beta": theirs} {
		if got := paperOrder(t, p, desk, po.ID); got.Order != po.Order || len(got.Modifications) != 0 {
			t.Errorf("%s's order %+v, want unchanged", desk, got)
		}
	}
}
