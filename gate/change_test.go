package gate_test

import (
	"github.com/deskbot/deskbot/gate/gatetest"
	"strings"
	"testing"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/gate"
)

// The words a desk's model reads of a changed call, word for word.
func TestChangedResponseMessageWords(t *testing.T) {
	r := &deskbot.Request{ID: "r1", Content: deskbot.PermissionContent{ToolName: "place_order"},
		Changed: &deskbot.CallChange{What: "quantity 50 → 25"}}
	for _, tt := range []struct {
		result deskbot.ToolResult
		want   string
	}{
		{deskbot.ToolResult{Text: "Filled."}, "The user allowed place_order (request r1) with changes: quantity 50 → 25. The harness ran it with those arguments instead of yours. It was run:\nFilled."},
		{deskbot.ToolResult{Text: "Rejected.", IsError: true}, "The user allowed place_order (request r1) with changes: quantity 50 → 25. The harness ran it with those arguments instead of yours. It failed:\nRejected."},
	} {
		// Always allow changes nothing: a changed call is never granted.
		for _, d := range []deskbot.Decision{deskbot.AllowOnce, deskbot.AlwaysAllow} {
			res := tt.result
			if got := gate.ResponseMessage(deskbot.PermissionResponse{Request: r, Decision: d}, &res); got != tt.want {
				t.Errorf("%s: got %q\nwant %q", d, got, tt.want)
			}
		}
	}
}

// Only a change that lowers the order's risk is taken; the other
// arguments are kept byte for byte.
func TestChangedArguments(t *testing.T) {
	buy := []byte(`{"symbol":"NIFTY24DECFUT","side":"buy","quantity":50,"price":24500}`)
	sell := []byte(`{"symbol":"BANKNIFTY24DECFUT","side":"sell","quantity":15,"price":52100}`)
	market := []byte(`{"symbol":"TCS","side":"buy","quantity":100}`)
	slm := []byte(`{"symbol":"TCS","side":"sell","quantity":100,"order_type":"SL-M","trigger_price":3900}`)
	sl := []byte(`{"symbol":"TCS","side":"buy","quantity":100,"order_type":"SL","price":4100,"trigger_price":4050,"product":"NRML","variety":"regular"}`)
	for _, tt := range []struct {
		args          []byte
		changes, want string // want "" for a refusal
		why           string // what a refusal says, beyond that nothing changed
	}{
		{buy, "quantity 25", `{"price":24500,"quantity":25,"side":"buy","symbol":"NIFTY24DECFUT"}`, ""},
		{buy, "price 24400.5", `{"price":24400.5,"quantity":50,"side":"buy","symbol":"NIFTY24DECFUT"}`, ""},
		{buy, "quantity 10, price 24000", `{"price":24000,"quantity":10,"side":"buy","symbol":"NIFTY24DECFUT"}`, ""},
		{sell, "price 52200", `{"price":52200,"quantity":15,"side":"sell","symbol":"BANKNIFTY24DECFUT"}`, ""},
		{sell, "price 52000", "", "may only be raised"},
		{buy, "price 24500", "", "may only be lowered"},
		{buy, "price 0", "", ""},
		{buy, "quantity 0", "", ""},
		{buy, "quantity 51", "", "only lower the quantity"},
		{buy, "Quantity 25", "", "only the quantity and the price can be changed"},
		{buy, "quantity 25 price", "", ""},
		{buy, "", "", ""},
		{buy, "symbol INFY", "", "stay as the desk asked"},
		{buy, "side sell", "", "stay as the desk asked"},
		{buy, "price 24400 price 24300", "", "given twice"},
		{buy, "quantity ２５", "", ""},
		{buy, "quantity 1e1", "", ""},
		{buy, "trigger_price 24000", "", "this LIMIT order has no trigger_price"},
		{buy, "order_type MARKET", "", "stay as the desk asked"},
		// A market order: only its quantity.
		{market, "quantity 50", `{"quantity":50,"side":"buy","symbol":"TCS"}`, ""},
		{market, "price 4000", "", "this MARKET order has no price to change"},
		{market, "trigger_price 3900", "", "this MARKET order has no trigger_price"},
		{market, "order_type LIMIT", "", "stay as the desk asked"},
		{market, "product CNC", "", "stay as the desk asked"},
		// An SL-M: its quantity and a tighter trigger (higher for a sell).
		// A stop's trigger moves only away from the market: it never trades
		// sooner than the desk's would.
		{slm, "trigger_price 3850", `{"order_type":"SL-M","quantity":100,"side":"sell","symbol":"TCS","trigger_price":3850}`, ""},
		{slm, "quantity 40, trigger_price 3899.95", `{"order_type":"SL-M","quantity":40,"side":"sell","symbol":"TCS","trigger_price":3899.95}`, ""},
		{slm, "trigger_price 3950", "", "a sell stop's trigger_price may only be lowered"},
		{slm, "trigger_price 3900", "", "may only be lowered"},
		{slm, "trigger_price 0", "", ""},
		{slm, "price 3900", "", "this SL-M order has no price to change"},
		{slm, "variety amo", "", "stay as the desk asked"},
		// An SL: its quantity, a better limit, and a trigger that trades no
		// sooner (higher for a buy), on its side of the limit.
		{sl, "trigger_price 4060", `{"order_type":"SL","price":4100,"product":"NRML","quantity":100,"side":"buy","symbol":"TCS","trigger_price":4060,"variety":"regular"}`, ""},
		{sl, "quantity 10 price 4090 trigger_price 4060", `{"order_type":"SL","price":4090,"product":"NRML","quantity":10,"side":"buy","symbol":"TCS","trigger_price":4060,"variety":"regular"}`, ""},
		{sl, "trigger_price 4000", "", "a buy stop's trigger_price may only be raised"},
		{sl, "trigger_price 4150", "", "may not be above its price"}, // an SL's trigger stays on its side of the limit
		{sl, "price 4100.5", "", "a buy's price may only be lowered"},
		{sl, "product MIS", "", "stay as the desk asked"},
		{sl, "order_type SL-M", "", "stay as the desk asked"},
		{sl, "trigger_price 4060 trigger_price 4070", "", "given twice"},
		{sl, "quantity 10 price 4090 trigger_price 4040 quantity 5", "", ""},
	} {
		got, err := gate.ChangedArguments(tt.args, tt.changes)
		if tt.want == "" {
			msg := deskbot.ErrorMessage(err)
			if err == nil || deskbot.ErrorCode(err) != deskbot.EINVALID || !strings.Contains(msg, "changed") || !strings.Contains(msg, tt.why) {
				t.Errorf("%s %q: got %s, %v; want a refusal saying %q", tt.args, tt.changes, got, err, tt.why)
			}
			continue
		}
		if err != nil || string(got) != tt.want {
			t.Errorf("%s %q: got %s, %v; want %s", tt.args, tt.changes, got, err, tt.want)
		}
	}
}

// A change says what it changed, in the words the desk and the chat read,
// and the changed call is the one that runs.
func TestChangeSaysWhatChanged(t *testing.T) {
	for _, tt := range []struct {
		args, changes, what string
	}{
		{`{"symbol":"TCS","side":"buy","quantity":50,"price":4000}`, "quantity 25, price 3990", "quantity 50 → 25, price 4000 → 3990"},
		{`{"symbol":"TCS","side":"buy","quantity":50}`, "quantity 10", "quantity 50 → 10"},
		{`{"symbol":"TCS","side":"sell","quantity":50,"order_type":"SL-M","trigger_price":3900}`, "trigger_price 3850", "trigger_price 3900 → 3850"},
	} {
		f := mustFixture(t, func(c *gate.Config) {
			m := &market{}
			m.q.Set("TCS", 4000) // the MARKET order is sized at it
			c.Limits = m
		})
		r := gatetest.MustHold(t, f, "main", "place_order", tt.args)
		resp, err := f.gate.ChangeOnly(t.Context(), r.ID, tt.changes, 0, asha)
		if err != nil {
			t.Fatalf("%s %q: %v", tt.args, tt.changes, err)
		}
		if resp.Request.Changed == nil || resp.Request.Changed.What != tt.what {
			t.Errorf("%s %q: changed %+v; want %q", tt.args, tt.changes, resp.Request.Changed, tt.what)
		}
		if _, err := f.gate.RunDecided(t.Context(), resp); err != nil {
			t.Fatalf("run: %v", err)
		}
		runs := f.runner.runs()
		if len(runs) != 1 || string(runs[0].Arguments) != string(resp.Request.Changed.Arguments) {
			t.Errorf("ran %+v; want the changed call once", runs)
		}
	}
}
