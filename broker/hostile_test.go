package broker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"github.com/deskbot/deskbot/deskbottest"
	"log/slog"
	"strings"
	"testing"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker"
)

// A hostile desk spells an order so that it reads as one thing to the
// approver and would run as another. Each is refused, before the gate holds
// it (CheckArguments) and when it runs, with a text that says what a valid
// call looks like; nothing is normalised into another symbol, side or number.
func TestHostileOrdersRefusedNotNormalised(t *testing.T) {
	p := mustPaper(t)
	tools := mustTools(t, p)
	place := tools[deskbot.ToolPlaceOrder]
	checker := place
	order := func(sym, side, qty, px string) string {
		b, _ := json.Marshal(sym)
		return `{"symbol":` + string(b) + `,"side":"` + side + `","quantity":` + qty + `,"price":` + px + `}`
	}
	const rule = "a symbol is 1 to 32 characters of upper-case A-Z, digits 0-9 and the punctuation & . _ - /"
	tests := []struct{ name, args, want string }{
		{"long s that upper-cases to S", order("ſBIN", "buy", "1", "1"), `symbol "\u017fBIN" is not valid`},
		{"Cyrillic DZE for S", order("ЅBIN", "buy", "1", "1"), `symbol "\u0405BIN" is not valid`},
		{"Greek capital iota for I", order("SBΙN", "buy", "1", "1"), `symbol "SB\u0399N" is not valid`},
		{"fullwidth letters", order("ＳＢＩＮ", "buy", "1", "1"), rule},
		{"no-break space padding", order("\u00a0SBIN\u00a0", "buy", "1", "1"), `symbol "\u00a0SBIN\u00a0" is not valid`},
		{"ASCII space padding", order(" SBIN ", "buy", "1", "1"), `symbol " SBIN " is not valid`},
		{"tab inside", order("SB\tIN", "buy", "1", "1"), rule},
		{"right-to-left override", order("SBIN\u202eNIBS", "buy", "1", "1"), `"SBIN\u202eNIBS"`},
		{"zero-width space", order("SB\u200bIN", "buy", "1", "1"), `"SB\u200bIN"`},
		{"combining mark", order("SBI\u0301N", "buy", "1", "1"), rule},
		{"lower case", order("sbin", "buy", "1", "1"), rule},
		{"mixed case", order("SBin", "buy", "1", "1"), rule},
		{"starts with punctuation", order("-SBIN", "buy", "1", "1"), rule},
		{"too long", order(strings.Repeat("A", 33), "buy", "1", "1"), rule},
		{"side upper case", order("SBIN", "BUY", "1", "1"), `side must be "buy" or "sell" (lower case), not "BUY"`},
		{"side with a look-alike", order("SBIN", "ѕell", "1", "1"), `not "\u0455ell"`},
		{"side padded", order("SBIN", " buy", "1", "1"), `not " buy"`},
		{"quantity beyond float precision", order("SBIN", "buy", "10.0000000000000001", "1"), "quantity has 18 significant digits; at most 15"},
		{"price beyond float precision", order("SBIN", "buy", "1", "2500.00000000000001"), "price has 18 significant digits"},
		{"argument given twice", `{"symbol":"SBIN","symbol":"INFY","side":"buy","quantity":1,"price":1}`, `argument "symbol" is given twice`},
		{"fractional quantity", order("SBIN", "buy", "2.5", "1"), "quantity must be a whole number of units, not 2.5"},
		{"market order with a price", `{"symbol":"SBIN","side":"buy","quantity":1,"order_type":"MARKET","price":1}`, "a MARKET order takes no price"},
		{"order type given empty", `{"symbol":"SBIN","side":"buy","quantity":1,"order_type":"","price":1}`, `order_type must be one of "MARKET", "LIMIT", "SL", "SL-M", not ""`},
		{"order type lower case", `{"symbol":"SBIN","side":"buy","quantity":1,"order_type":"market"}`, `order_type must be one of MARKET, LIMIT, SL, SL-M, not "market"`},
		{"stop-loss without its trigger", `{"symbol":"SBIN","side":"sell","quantity":1,"order_type":"SL","price":790}`, "a SL order needs a trigger_price greater than 0"},
		{"trigger on a limit order", `{"symbol":"SBIN","side":"buy","quantity":1,"price":790,"trigger_price":780}`, "trigger_price is for SL and SL-M orders only"},
		{"SL-M with a price", `{"symbol":"SBIN","side":"sell","quantity":1,"order_type":"SL-M","price":790,"trigger_price":795}`, "a SL-M order takes no price"},
		{"product lower case", `{"symbol":"SBIN","side":"buy","quantity":1,"product":"mis"}`, `product must be one of MIS, NRML, CNC, not "mis"`},
		{"product padded", `{"symbol":"SBIN","side":"buy","quantity":1,"product":"MIS\u00a0"}`, `not "MIS\u00a0"`},
		{"variety upper case", `{"symbol":"SBIN","side":"buy","quantity":1,"variety":"AMO"}`, `variety must be "regular" or "amo"`},
		{"price as a string", `{"symbol":"SBIN","side":"buy","quantity":1,"price":"790"}`, "price must be a number"},
		{"argument name case-folded", `{"Symbol":"SBIN","side":"buy","quantity":1,"price":1}`, `place_order has no argument "Symbol"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checker.CheckArguments(json.RawMessage(tt.args))
			if deskbot.ErrorCode(err) != deskbot.EINVALID || !strings.Contains(deskbot.ErrorMessage(err), tt.want) {
				t.Errorf("CheckArguments(%s) = %v\nwant EINVALID containing %q", tt.args, err, tt.want)
			}
			r := mustRun(t, place, "main", tt.args)
			if !r.IsError || r.Text != deskbot.ErrorMessage(err) {
				t.Errorf("Run(%s) = %+v, want the same refusal as CheckArguments", tt.args, r)
			}
		})
	}
	if b := mustBook(t, p, "main"); len(b.Positions) != 0 {
		t.Errorf("refused orders changed the book: %+v", b)
	}

	// The broker itself refuses them too, whoever calls it.
	for _, sym := range []string{"ſBIN", "\u00a0SBIN", "sbin", "SBIN\u202e"} {
		if _, err := p.PlaceOrder(t.Context(), "main", deskbottest.NewKey(), buy(sym, 1, 1)); deskbot.ErrorCode(err) != deskbot.EINVALID {
			t.Errorf("PlaceOrder(%q) = %v, want EINVALID", sym, err)
		}
	}

	// Canonical symbols and numbers pass unchanged.
	for _, args := range []string{
		order("SBIN", "buy", "1", "1"), order("M&M", "sell", "2", "1500.75"), order("BAJAJ-AUTO", "buy", "1e2", "9000"),
		order("RELIANCE.NS", "buy", "1", "1"), order("BTC/USDT", "buy", "1", "65000.12"), order("NIFTY24DECFUT", "buy", "50", "24512.123456789"),
	} {
		if err := checker.CheckArguments(json.RawMessage(args)); err != nil {
			t.Errorf("CheckArguments(%s) = %v, want accepted", args, err)
		}
	}
}

// Every broker tool refuses arguments before the gate holds the call: an
// approver must not be asked to allow a flatten_desk aimed at another desk.
func TestEveryToolChecksArgumentsBeforeHold(t *testing.T) {
	for _, tl := range broker.Tools(nil, nil, nil) {
		c := tl
		if tl.Name() == deskbot.ToolPlaceOrder {
			continue
		}
		if err := c.CheckArguments(json.RawMessage(`{"desk":"other"}`)); deskbot.ErrorCode(err) != deskbot.EINVALID {
			t.Errorf("%s.CheckArguments with an argument = %v, want EINVALID", tl.Name(), err)
		}
		none := `{}`
		switch tl.Name() {
		case deskbot.ToolCancelOrder:
			none = `{"order_id":"250101000000001"}`
		case deskbot.ToolModifyOrder:
			none = `{"order_id":"250101000000001","price":1490}`
		case deskbot.ToolCancelGTT:
			none = `{"gtt_id":"123"}`
		case deskbot.ToolPlaceGTT:
			continue // it needs a position's symbol; gtt_test.go plays the hostile desk
		}
		if err := c.CheckArguments(json.RawMessage(none)); err != nil {
			t.Errorf("%s.CheckArguments({}) = %v", tl.Name(), err)
		}
	}
}

// The paper broker applies the one desk-name rule.
func TestPaperRefusesInvalidDeskNames(t *testing.T) {
	p := mustPaper(t)
	for _, desk := range []string{"", "all", "a:b", "Main", "main ", strings.Repeat("a", 33)} {
		if _, err := p.PlaceOrder(t.Context(), desk, deskbottest.NewKey(), buy("SBIN", 1, 1)); deskbot.ErrorCode(err) != deskbot.EINVALID {
			t.Errorf("PlaceOrder on desk %q = %v, want EINVALID", desk, err)
		}
		if _, err := p.Book(t.Context(), desk); deskbot.ErrorCode(err) != deskbot.EINVALID {
			t.Errorf("Book of desk %q = %v, want EINVALID", desk, err)
		}
	}
}

// bookFails fills orders but cannot read the book afterwards.
type bookFails struct{ deskbot.Broker }

func (bookFails) PlaceOrder(ctx context.Context, desk, key string, o deskbot.Order) (deskbot.PlacedOrder, error) {
	return deskbot.PlacedOrder{Desk: desk, Order: o, State: deskbot.OrderComplete, Filled: o.Quantity, AvgPrice: o.Price}, nil
}
func (bookFails) Check(o deskbot.Order) error { return deskbot.CheckOrder(o) }
func (bookFails) Book(ctx context.Context, desk string) (deskbot.Book, error) {
	return deskbot.Book{}, errors.New("redis went away")
}

// What the model is not told goes to the service's logger, not the
// package-level one (which skips LOG_FORMAT and the secret scrubber).
func TestToolsLogThroughInjectedLogger(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	var place deskbot.Tool
	for _, tl := range broker.Tools(bookFails{}, nil, log) {
		if tl.Name() == deskbot.ToolPlaceOrder {
			place = tl
		}
	}
	r, err := place.Run(deskbot.WithCallKey(t.Context(), deskbottest.NewKey()), "main", json.RawMessage(`{"symbol":"SBIN","side":"buy","quantity":1,"price":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if r.IsError || !strings.Contains(r.Text, "Position unavailable just now") {
		t.Errorf("result %+v", r)
	}
	if !strings.Contains(buf.String(), "redis went away") {
		t.Errorf("injected logger got %q, want the failure", buf.String())
	}
}
