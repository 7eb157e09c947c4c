package deskbot_test

import (
	"encoding/json"
	"testing"

	"github.com/deskbot/deskbot"
)

func TestParseOrderDefaults(t *testing.T) {
	tests := []struct {
		name, args string
		want       deskbot.Order
	}{
		{"no price is a market order; NSE's symbol is written bare", `{"symbol":"NSE:INFY","side":"buy","quantity":10}`,
			deskbot.Order{Symbol: "INFY", Side: "buy", Quantity: 10, Type: deskbot.OrderMarket}},
		{"a price is a limit order", `{"symbol":"INFY","side":"sell","quantity":10,"price":1500.5}`,
			deskbot.Order{Symbol: "INFY", Side: "sell", Quantity: 10, Price: 1500.5, Type: deskbot.OrderLimit}},
		{"every argument", `{"symbol":"NFO:NIFTY25DECFUT","side":"sell","quantity":75,"order_type":"SL","price":24400,"trigger_price":24450,"product":"NRML","variety":"amo"}`,
			deskbot.Order{Symbol: "NFO:NIFTY25DECFUT", Side: "sell", Quantity: 75, Price: 24400, Type: deskbot.OrderSL, TriggerPrice: 24450, Product: deskbot.ProductNRML, Variety: deskbot.VarietyAMO}},
		{"a stop-loss market order", `{"symbol":"INFY","side":"sell","quantity":1,"order_type":"SL-M","trigger_price":1490}`,
			deskbot.Order{Symbol: "INFY", Side: "sell", Quantity: 1, Type: deskbot.OrderSLM, TriggerPrice: 1490}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := deskbot.ParseOrder(json.RawMessage(tt.args))
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("ParseOrder = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// An order without a type (kept before order types were) is a limit: a
// missing price never makes it a market order.
func TestUntypedOrderIsNeverAMarketOrder(t *testing.T) {
	o := deskbot.Order{Symbol: "INFY", Side: "buy", Quantity: 1}
	if o.AtMarket() || deskbot.CheckOrder(o) == nil {
		t.Errorf("untyped order without a price: AtMarket %v, CheckOrder %v; want a refused limit", o.AtMarket(), deskbot.CheckOrder(o))
	}
}

func TestDeskProduct(t *testing.T) {
	p := deskbot.Policies{"fno": {deskbot.ToolPlaceOrder: {Product: deskbot.ProductNRML}}}
	for desk, want := range map[string]string{"fno": deskbot.ProductNRML, "main": deskbot.ProductMIS} {
		if got := p.Product(desk); got != want {
			t.Errorf("Product(%s) = %s, want %s", desk, got, want)
		}
		if got := (deskbot.Order{}).ForDesk(p.Product(desk)).Product; got != want {
			t.Errorf("ForDesk on %s = %s, want %s", desk, got, want)
		}
	}
	if got := (deskbot.Order{Product: deskbot.ProductCNC}).ForDesk(deskbot.ProductMIS).Product; got != deskbot.ProductCNC {
		t.Errorf("ForDesk replaced the order's own product: %s", got)
	}
}

// A market order has no price to count against two_approvers_above: it
// needs the larger count, never the smaller.
func TestMarketOrderNeedsTheLargerCount(t *testing.T) {
	p := deskbot.Policies{"main": {deskbot.ToolPlaceOrder: {Approvals: 2, TwoApproversAbove: 100000}}}
	for _, tc := range []struct {
		args string
		want int
	}{
		{`{"symbol":"INFY","side":"buy","quantity":1,"price":1500}`, 1},
		{`{"symbol":"INFY","side":"buy","quantity":1}`, 2},
		{`{"symbol":"INFY","side":"buy","quantity":1,"order_type":"SL-M","trigger_price":1500}`, 2},
	} {
		if got := p.Required("main", deskbot.ToolCall{Name: deskbot.ToolPlaceOrder, Arguments: json.RawMessage(tc.args)}); got != tc.want {
			t.Errorf("Required(%s) = %d, want %d", tc.args, got, tc.want)
		}
	}
}
