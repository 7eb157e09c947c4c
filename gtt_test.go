package deskbot_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/deskbot/deskbot"
)

func mustParseGTT(t *testing.T, args string) deskbot.GTT {
	t.Helper()
	g, err := deskbot.ParseGTT(json.RawMessage(args))
	if err != nil {
		t.Fatalf("ParseGTT(%s): %v", args, err)
	}
	return g
}

// place_gtt's arguments are read exactly: a stop always, a target only
// whole, NSE's symbol written bare.
func TestParseGTT(t *testing.T) {
	g := mustParseGTT(t, `{"symbol":"NSE:INFY","side":"sell","quantity":10,"stop_trigger":1450,"stop_price":1445,"target_trigger":1600,"target_price":1595,"product":"CNC"}`)
	want := deskbot.GTT{Symbol: "INFY", Side: "sell", Quantity: 10, Product: "CNC", Stop: deskbot.GTTLeg{Trigger: 1450, Price: 1445}, Target: &deskbot.GTTLeg{Trigger: 1600, Price: 1595}}
	if g.Symbol != want.Symbol || g.Side != want.Side || g.Quantity != want.Quantity || g.Product != want.Product || g.Stop != want.Stop || g.Target == nil || *g.Target != *want.Target {
		t.Errorf("got %+v, want %+v", g, want)
	}
	if s := mustParseGTT(t, `{"symbol":"INFY","side":"sell","quantity":10,"stop_trigger":1450,"stop_price":1445}`); s.Target != nil {
		t.Errorf("a single stop-loss got a target %+v", s.Target)
	}
}

// The hostile desk's GTTs that need no market to refuse are refused as
// they are read: ₹0 prices, a target on the wrong side of the stop, half
// a target, unknown or repeated arguments, a quantity that is not whole.
func TestParseGTTRefuses(t *testing.T) {
	tests := []struct{ name, args, want string }{
		{"₹0 stop trigger", `{"symbol":"INFY","side":"sell","quantity":10,"stop_trigger":0,"stop_price":1445}`, "triggers must be prices greater than 0"},
		{"₹0 stop price", `{"symbol":"INFY","side":"sell","quantity":10,"stop_trigger":1450,"stop_price":0}`, "price greater than 0"},
		{"₹0 target", `{"symbol":"INFY","side":"sell","quantity":10,"stop_trigger":1450,"stop_price":1445,"target_trigger":0,"target_price":0}`, "greater than 0"},
		{"a long's target below its stop", `{"symbol":"INFY","side":"sell","quantity":10,"stop_trigger":1450,"stop_price":1445,"target_trigger":1400,"target_price":1395}`, "must be above its stop_trigger"},
		{"a short's target above its stop", `{"symbol":"INFY","side":"buy","quantity":10,"stop_trigger":1550,"stop_price":1555,"target_trigger":1600,"target_price":1605}`, "must be below its stop_trigger"},
		{"half a target", `{"symbol":"INFY","side":"sell","quantity":10,"stop_trigger":1450,"stop_price":1445,"target_trigger":1600}`, "both target_trigger and target_price"},
		{"no stop", `{"symbol":"INFY","side":"sell","quantity":10}`, "missing: stop_trigger, stop_price"},
		{"another desk named", `{"symbol":"INFY","side":"sell","quantity":10,"stop_trigger":1450,"stop_price":1445,"desk":"other"}`, `no argument "desk"`},
		{"argument twice", `{"symbol":"INFY","side":"sell","quantity":10,"stop_trigger":1450,"stop_price":1445,"quantity":100}`, "given twice"},
		{"part of a unit", `{"symbol":"INFY","side":"sell","quantity":1.5,"stop_trigger":1450,"stop_price":1445}`, "whole number"},
		{"number as a string", `{"symbol":"INFY","side":"sell","quantity":"10","stop_trigger":1450,"stop_price":1445}`, "quantity must be"},
		{"look-alike symbol", `{"symbol":"INFУ","side":"sell","quantity":10,"stop_trigger":1450,"stop_price":1445}`, "not valid"},
		{"upper-case side", `{"symbol":"INFY","side":"SELL","quantity":10,"stop_trigger":1450,"stop_price":1445}`, "side must be"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := deskbot.ParseGTT(json.RawMessage(tt.args))
			if deskbot.ErrorCode(err) != deskbot.EINVALID || !strings.Contains(deskbot.ErrorMessage(err), tt.want) {
				t.Errorf("got %v, want EINVALID saying %q", err, tt.want)
			}
		})
	}
}

// A GTT may only close what the desk holds: not a symbol it does not
// hold, not the other side, not more than the position (less its GTTs and
// its resting orders on that side), nor a trigger the market has already
// reached.
func TestCheckGTTReduces(t *testing.T) {
	long := mustParseGTT(t, `{"symbol":"INFY","side":"sell","quantity":10,"stop_trigger":1450,"stop_price":1445,"target_trigger":1600,"target_price":1595}`)
	short := mustParseGTT(t, `{"symbol":"INFY","side":"buy","quantity":10,"stop_trigger":1550,"stop_price":1555}`)
	tests := []struct {
		name                         string
		g                            deskbot.GTT
		held, covered, resting, last float64
		want                         string // "" passes
	}{
		{"closes a long", long, 10, 0, 0, 1500, ""},
		{"closes part of a long", long, 25, 0, 0, 1500, ""},
		{"covers a short", short, -10, 0, 0, 1500, ""},
		{"nothing held", long, 0, 0, 0, 1500, "holds no INFY"},
		{"a buy on a long grows it", short, 10, 0, 0, 1500, "a buy would grow"},
		{"a sell on a short grows it", long, -10, 0, 0, 1500, "a sell would grow"},
		{"more than the position", long, 5, 0, 0, 1500, "more than the 5 INFY"},
		{"beside GTTs that close it already", long, 15, 10, 0, 1500, "already close is more than the 15"},
		{"beside GTTs that close part of it", long, 20, 10, 0, 1500, ""},
		{"beside a resting sell that closes part of it", long, 14, 0, 5, 1500, "open orders on INFY may still sell"},
		{"beside a resting sell within it", long, 14, 0, 4, 1500, ""},
		{"no last price", long, 10, 0, 0, 0, "no last price"},
		{"stop already reached", long, 10, 0, 0, 1440, "already reached"},
		{"target already reached", long, 10, 0, 0, 1610, "already reached"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := deskbot.CheckGTTReduces(tt.g, tt.held, tt.covered, tt.resting, tt.last)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("got %v, want it to pass", err)
				}
				return
			}
			if deskbot.ErrorCode(err) != deskbot.EINVALID || !strings.Contains(deskbot.ErrorMessage(err), tt.want) {
				t.Errorf("got %v, want EINVALID saying %q", err, tt.want)
			}
		})
	}
}

// A long's stop fires at or below its trigger and its target at or
// above; a short's the other way round.
func TestGTTCrossed(t *testing.T) {
	long := mustParseGTT(t, `{"symbol":"INFY","side":"sell","quantity":10,"stop_trigger":1450,"stop_price":1445,"target_trigger":1600,"target_price":1595}`)
	short := mustParseGTT(t, `{"symbol":"INFY","side":"buy","quantity":10,"stop_trigger":1550,"stop_price":1555,"target_trigger":1400,"target_price":1405}`)
	tests := []struct {
		g         deskbot.GTT
		last      float64
		wantFired bool
		wantPrice float64
	}{
		{long, 1500, false, 0}, {long, 1450, true, 1445}, {long, 1600, true, 1595}, {long, 0, false, 0},
		{short, 1500, false, 0}, {short, 1550, true, 1555}, {short, 1400, true, 1405},
	}
	for _, tt := range tests {
		leg, fired := tt.g.Crossed(tt.last)
		if fired != tt.wantFired || leg.Price != tt.wantPrice {
			t.Errorf("%s at %v: got %v %v, want %v %v", tt.g.Side, tt.last, fired, leg.Price, tt.wantFired, tt.wantPrice)
		}
	}
}
