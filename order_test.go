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

// Four eyes counts an order at its exposure as it was sized where it
// entered: an order not sized (an order at the market with nothing to
// value it) needs the larger count, never the smaller, and so does every
// order once the day's total is past the threshold.
func TestRequiredCountsTheSizedExposure(t *testing.T) {
	p := deskbot.Policies{"main": {deskbot.ToolPlaceOrder: {Approvals: 2, TwoApproversAbove: 100000}}}
	sized := func(exposure float64) *deskbot.SizedOrder { return &deskbot.SizedOrder{Exposure: exposure} }
	for _, tc := range []struct {
		name  string
		order *deskbot.SizedOrder
		day   float64
		want  int
	}{
		{"small order", sized(1500), 1500, 1},
		{"at the threshold", sized(100000), 100000, 1},
		{"above the threshold", sized(100000.01), 100000.01, 2},
		{"not sized", nil, 0, 2},
		{"small order past the day's total", sized(1500), 100001, 2},
	} {
		call := deskbot.ToolCall{Name: deskbot.ToolPlaceOrder, Arguments: json.RawMessage(`{}`), Order: tc.order}
		if got := p.Required("main", call, tc.day); got != tc.want {
			t.Errorf("%s: Required = %d, want %d", tc.name, got, tc.want)
		}
	}
}
