package broker_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/store/storetest"
)

func mustTools(t *testing.T, b deskbot.Broker) map[string]deskbot.Tool {
	t.Helper()
	m := map[string]deskbot.Tool{}
	for _, tl := range broker.Tools(b, nil, nil) {
		m[tl.Name()] = tl
	}
	return m
}

func mustRun(t *testing.T, tl deskbot.Tool, desk, args string) deskbot.ToolResult {
	t.Helper()
	r, err := tl.Run(deskbot.WithCallKey(t.Context(), deskbottest.NewKey()), desk, json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s(%s) on %s: system error %v", tl.Name(), args, desk, err)
	}
	return r
}

func TestToolSpecs(t *testing.T) {
	type schema struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
		Additional *bool                      `json:"additionalProperties"`
	}
	var names []string
	for _, tl := range broker.Tools(nil, nil, nil) {
		names = append(names, tl.Name())
		var s schema
		if err := json.Unmarshal(tl.Schema(), &s); err != nil {
			t.Fatalf("%s schema is not JSON: %v", tl.Name(), err)
		}
		if s.Type != "object" || s.Additional == nil || *s.Additional {
			t.Errorf("%s schema %s: want an object with additionalProperties false", tl.Name(), tl.Schema())
		}
		if len(tl.Description()) < 40 {
			t.Errorf("%s description %q is too thin for a model", tl.Name(), tl.Description())
		}
		if tl.Name() == deskbot.ToolCancelOrder {
			if got, want := s.Required, []string{"order_id"}; !reflect.DeepEqual(got, want) {
				t.Errorf("cancel_order required %v, want %v", got, want)
			}
			continue
		}
		if tl.Name() == deskbot.ToolModifyOrder {
			if got, want := s.Required, []string{"order_id"}; !reflect.DeepEqual(got, want) {
				t.Errorf("modify_order required %v, want %v", got, want)
			}
			for _, k := range []string{"symbol", "side", "product", "variety"} {
				if _, ok := s.Properties[k]; ok {
					t.Errorf("modify_order takes %s; an order's %s cannot change", k, k)
				}
			}
			continue
		}
		if tl.Name() == deskbot.ToolCancelGTT {
			if got, want := s.Required, []string{"gtt_id"}; !reflect.DeepEqual(got, want) {
				t.Errorf("cancel_gtt required %v, want %v", got, want)
			}
			continue
		}
		if tl.Name() == deskbot.ToolPlaceGTT {
			if got, want := s.Required, []string{"symbol", "side", "quantity", "stop_trigger", "stop_price"}; !reflect.DeepEqual(got, want) {
				t.Errorf("place_gtt required %v, want %v", got, want)
			}
			continue
		}
		if tl.Name() != deskbot.ToolPlaceOrder {
			if len(s.Properties) != 0 {
				t.Errorf("%s takes no arguments, schema has %v", tl.Name(), s.Properties)
			}
			continue
		}
		if got, want := s.Required, []string{"symbol", "side", "quantity"}; !reflect.DeepEqual(got, want) {
			t.Errorf("place_order required %v, want %v", got, want)
		}
		var side struct{ Enum []string }
		json.Unmarshal(s.Properties["side"], &side)
		if got, want := side.Enum, []string{"buy", "sell"}; !reflect.DeepEqual(got, want) {
			t.Errorf("place_order side enum %v, want %v", got, want)
		}
	}
	if got, want := names, []string{"get_positions", "place_order", "get_orders", "cancel_order", "flatten_desk", "modify_order", "place_gtt", "cancel_gtt"}; !reflect.DeepEqual(got, want) {
		t.Errorf("tools %v, want %v", got, want)
	}
}

func TestPlaceOrderTool(t *testing.T) {
	tools := mustTools(t, mustPaper(t))
	tests := []struct {
		name    string
		before  []string // place_order calls first
		args    string
		wantErr bool
		want    string // the whole text, or for errors a part of it
	}{
		{name: "opens a position", args: `{"symbol":"RELIANCE","side":"buy","quantity":10,"price":2500}`,
			want: "Now RELIANCE: long 10, avg 2,500.00, last 2,500.00, unrealised +₹0.00."},
		{name: "a market order fills at the market", before: []string{`{"symbol":"TCS","side":"buy","quantity":1,"price":4000}`},
			args: `{"symbol":"TCS","side":"buy","quantity":3}`,
			want: "Now TCS: long 4, avg 4,000.00, last 4,000.00, unrealised +₹0.00."},
		{name: "partial sell", before: []string{`{"symbol":"INFY","side":"buy","quantity":10,"price":100}`},
			args: `{"price":110,"quantity":4,"side":"sell","symbol":"INFY"}`,
			want: "Now INFY: long 6, avg 100.00, last 110.00, unrealised +₹60.00."},
		{name: "sell to flat", before: []string{`{"symbol":"INFY","side":"buy","quantity":10,"price":100}`},
			args: `{"symbol":"INFY","side":"sell","quantity":10,"price":104.5}`,
			want: "INFY is now flat. Realised P&L to date +₹45.00."},
		{name: "broken JSON", args: `{"symbol":`, wantErr: true, want: "place_order arguments must be a JSON object"},
		{name: "not an object", args: `[1,2]`, wantErr: true, want: "must be a JSON object"},
		{name: "no arguments", args: ``, wantErr: true, want: "missing: symbol, side, quantity"},
		{name: "missing fields", args: `{"symbol":"X","side":"buy"}`, wantErr: true, want: "missing: quantity"},
		{name: "unknown field", args: `{"symbol":"X","side":"buy","quantity":1,"price":1,"type":"limit"}`, wantErr: true,
			want: `place_order has no argument "type"`},
		{name: "quantity as a string", args: `{"symbol":"X","side":"buy","quantity":"10","price":1}`, wantErr: true,
			want: `quantity must be a whole number, e.g. 10, not "10"`},
		{name: "price null", args: `{"symbol":"X","side":"buy","quantity":1,"price":null}`, wantErr: true,
			want: "price must be a number"},
		{name: "side upper-case", args: `{"symbol":"X","side":"BUY","quantity":1,"price":1}`, wantErr: true,
			want: `side must be "buy" or "sell" (lower case), not "BUY"`},
		{name: "zero quantity", args: `{"symbol":"X","side":"sell","quantity":0,"price":1}`, wantErr: true,
			want: "quantity must be a number greater than 0"},
		{name: "negative price", args: `{"symbol":"X","side":"sell","quantity":1,"price":-3}`, wantErr: true,
			want: "a LIMIT order needs a price greater than 0 (its limit), not -3"},
		{name: "empty symbol", args: `{"symbol":"","side":"sell","quantity":1,"price":3}`, wantErr: true,
			want: "symbol is required"},
		{name: "lower-case symbol is refused, not upper-cased", args: `{"symbol":"reliance","side":"buy","quantity":10,"price":2500}`, wantErr: true,
			want: `symbol "reliance" is not valid and the order was not placed: a symbol is 1 to 32 characters of upper-case A-Z`},
		{name: "an exchange deskbot does not know", args: `{"symbol":"NYSE:IBM","side":"buy","quantity":1,"price":100}`, wantErr: true,
			want: `symbol "NYSE:IBM" is not valid`},
		{name: "an exchange and nothing after it", args: `{"symbol":"NSE:","side":"buy","quantity":1,"price":100}`, wantErr: true,
			want: `symbol "NSE:" is not valid`},
		{name: "two exchanges", args: `{"symbol":"NSE:NSE:INFY","side":"buy","quantity":1,"price":100}`, wantErr: true,
			want: `symbol "NSE:NSE:INFY" is not valid`},
		{name: "a lower-case exchange", args: `{"symbol":"nse:INFY","side":"buy","quantity":1,"price":100}`, wantErr: true,
			want: `symbol "nse:INFY" is not valid`},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			desk := fmt.Sprintf("desk%d", i)
			for _, a := range tt.before {
				if r := mustRun(t, tools["place_order"], desk, a); r.IsError {
					t.Fatalf("setup order %s: %s", a, r.Text)
				}
			}
			r := mustRun(t, tools["place_order"], desk, tt.args)
			if r.IsError != tt.wantErr {
				t.Fatalf("IsError = %v, want %v (text %q)", r.IsError, tt.wantErr, r.Text)
			}
			// A fill reads as the order, then the position it leaves.
			if tt.wantErr && !strings.Contains(r.Text, tt.want) || !tt.wantErr && (!strings.HasPrefix(r.Text, "Filled: ") || !strings.HasSuffix(r.Text, ". "+tt.want)) {
				t.Errorf("text\n got %q\nwant %q", r.Text, tt.want)
			}
			if tt.wantErr && len(tt.before) == 0 {
				if got, want := mustRun(t, tools["get_positions"], desk, `{}`).Text, "No open positions. Realised P&L to date +₹0.00."; got != want {
					t.Errorf("after a refused order the book reads %q, want %q", got, want)
				}
			}
		})
	}
}

func TestPositionsAndFlattenTools(t *testing.T) {
	tools := mustTools(t, mustPaper(t))
	for _, a := range []string{
		`{"symbol":"TCS","side":"sell","quantity":5,"price":4000}`,
		`{"symbol":"RELIANCE","side":"buy","quantity":10,"price":2500}`,
		`{"symbol":"TCS","side":"buy","quantity":1,"price":3950}`,
	} {
		mustRun(t, tools["place_order"], "main", a)
	}
	wantBook := "RELIANCE: long 10, avg 2,500.00, last 2,500.00, unrealised +₹0.00\n" +
		"TCS: short 4, avg 4,000.00, last 3,950.00, unrealised +₹200.00\n" +
		"Total: unrealised +₹200.00, realised +₹50.00, net +₹250.00"
	for _, args := range []string{`{}`, ``, `null`, ` { } `} {
		if got := mustRun(t, tools["get_positions"], "main", args); got.IsError || got.Text != wantBook {
			t.Errorf("get_positions(%q) = %+v\nwant %q", args, got, wantBook)
		}
	}
	for _, name := range []string{"get_positions", "flatten_desk"} {
		if got := mustRun(t, tools[name], "main", `{"desk":"other"}`); !got.IsError || !strings.Contains(got.Text, "takes no arguments") {
			t.Errorf("%s with an argument = %+v, want a model error", name, got)
		}
	}
	want := "Flattened 2 positions: sold 10 RELIANCE @ 2,500.00 (realised +₹0.00), " +
		"bought 4 TCS @ 3,950.00 (realised +₹200.00). Realised P&L +₹200.00."
	if got := mustRun(t, tools["flatten_desk"], "main", `{}`); got.IsError || got.Text != want {
		t.Errorf("flatten_desk = %+v\nwant %q", got, want)
	}
	if got, want := mustRun(t, tools["get_positions"], "main", `{}`).Text, "No open positions. Realised P&L to date +₹250.00."; got != want {
		t.Errorf("after flatten get_positions = %q, want %q", got, want)
	}
}

// A broker that cannot reach Redis is a system failure, not the model's
// mistake, and what people see of it carries no address.
func TestToolsRedisDownIsSystemError(t *testing.T) {
	st := storetest.MustReopen(t, mustStore(t))
	if err := st.Close(); err != nil { // its Redis is gone from under it
		t.Fatal(err)
	}
	p := newFollowing(st)
	tools := mustTools(t, p)
	calls := map[string]string{
		"get_positions": `{}`,
		"place_order":   `{"symbol":"X","side":"buy","quantity":1,"price":1}`,
		"flatten_desk":  `{}`,
	}
	for name, args := range calls {
		r, err := tools[name].Run(deskbot.WithCallKey(t.Context(), deskbottest.NewKey()), "main", json.RawMessage(args))
		if err == nil {
			t.Errorf("%s with Redis down = %+v, want an error", name, r)
			continue
		}
		if got, want := deskbot.ErrorCode(err), deskbot.EUNAVAILABLE; got != want {
			t.Errorf("%s error code %q, want %q (%v)", name, got, want, err)
		}
		if msg := deskbot.ErrorMessage(err); strings.Contains(msg, "127.0.0.1") {
			t.Errorf("%s error message shown to people carries the address: %q", name, msg)
		}
	}
}
