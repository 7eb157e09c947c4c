package deskbot

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/deskbot/deskbot/argtext"
)

// MaxSymbolLen bounds a symbol; exchange symbols are far shorter.
const MaxSymbolLen = 32

// maxDigits is how many significant digits a quantity or price may have:
// any decimal of 15 digits reads back as itself from a float64, so the
// number an approver reads is the number the broker fills.
const maxDigits = 15

// symbolRule says what a valid symbol looks like, for the model.
var symbolRule = `a symbol is 1 to 32 characters of upper-case A-Z, digits 0-9 and the punctuation & . _ - /, ` +
	`starting with a letter or digit, spelled exactly as the exchange writes it (e.g. "RELIANCE", "M&M", "BAJAJ-AUTO", "NIFTY24DECFUT"), ` +
	`optionally after its exchange and a colon (one of ` + strings.Join(Exchanges, ", ") + `: e.g. "NSE:RELIANCE", "NFO:NIFTY24DECFUT")`

// Exchanges are the exchanges a symbol may name before its colon: Kite's
// segments for cash, F&O, currency and commodities.
var Exchanges = []string{"NSE", "BSE", "NFO", "BFO", "CDS", "BCD", "MCX"}

// DefaultExchange is the exchange of a symbol written without one: a bare
// symbol means NSE.
const DefaultExchange = "NSE"

// InstrumentOf is the exchange and trading symbol a valid symbol names: a
// bare symbol is on DefaultExchange.
func InstrumentOf(symbol string) (exchange, tradingsymbol string) {
	ex, ts := SplitSymbol(symbol)
	if ex == "" {
		ex = DefaultExchange
	}
	return ex, ts
}

// SymbolOf writes an instrument in its one spelling, the one orders, books
// and limits compare: a DefaultExchange symbol bare ("INFY"), any other
// after its exchange ("NFO:NIFTY24DECFUT"). ParseOrder writes every order's
// symbol so, and a broker its account's positions, so that "NSE:INFY" and
// "INFY" are one instrument with one position and one limit.
func SymbolOf(exchange, tradingsymbol string) string {
	if exchange == DefaultExchange {
		return tradingsymbol
	}
	return exchange + ":" + tradingsymbol
}

// OneSpelling is symbol in its one spelling (SymbolOf): "NSE:INFY" is
// "INFY"; any other symbol is as written.
func OneSpelling(symbol string) string { return SymbolOf(InstrumentOf(symbol)) }

// Security names what a symbol's position is a position in, for the
// limits: the same shares listed on NSE and BSE ("INFY", "BSE:INFY") are
// one security, counted together; any other symbol is its own.
func Security(symbol string) string {
	ex, ts := InstrumentOf(symbol)
	if ex == "NSE" || ex == "BSE" {
		return ts
	}
	return SymbolOf(ex, ts)
}

// SplitSymbol splits "NFO:NIFTY24DECFUT" into its exchange and trading
// symbol as written; a symbol without an exchange has "" for it.
func SplitSymbol(symbol string) (exchange, tradingsymbol string) {
	if ex, ts, ok := strings.Cut(symbol, ":"); ok {
		return ex, ts
	}
	return "", symbol
}

// CheckOrder refuses an order that is not exactly what it means. Nothing is
// normalised but the default exchange's name (SymbolOf, which names the same
// instrument): the approver of a held order reads its arguments, and the
// broker must receive exactly those, so a symbol that is lower case, padded
// (U+00A0 included), spelled with a look-alike letter (Cyrillic "Ѕ", the long
// "ſ" that upper-cases to "S") or carrying a bidi control is refused rather
// than turned into another symbol. Every failure is an EINVALID error whose
// message tells a model what to fix; any broker, paper or real, should
// accept orders only through it.
func CheckOrder(o Order) error {
	if o.Symbol == "" {
		return Errorf(EINVALID, "symbol is required: %s", symbolRule)
	}
	if !validSymbol(o.Symbol) {
		// QuoteToASCII shows every character the model sent, invisible or
		// look-alike ones as escapes.
		return Errorf(EINVALID, "symbol %s is not valid and the order was not placed: %s. Nothing is corrected for you; send the symbol spelled that way.",
			strconv.QuoteToASCII(o.Symbol), symbolRule)
	}
	if o.Side != Buy && o.Side != Sell {
		return Errorf(EINVALID, "side must be \"buy\" or \"sell\" (lower case), not %s", strconv.QuoteToASCII(o.Side))
	}
	if !positive(o.Quantity) {
		return Errorf(EINVALID, "quantity must be a number greater than 0, not %v", o.Quantity)
	}
	switch k := o.Kind(); k {
	case OrderLimit, OrderSL:
		if !positive(o.Price) {
			return Errorf(EINVALID, "a %s order needs a price greater than 0 (its limit), not %v", k, o.Price)
		}
	case OrderMarket, OrderSLM:
		if o.Price != 0 {
			return Errorf(EINVALID, "a %s order takes no price (it trades at the market's); leave price out, or send order_type LIMIT", k)
		}
	default:
		return Errorf(EINVALID, "order_type must be one of %s, not %s", strings.Join(orderTypes, ", "), strconv.QuoteToASCII(k))
	}
	switch k := o.Kind(); {
	case k == OrderSL || k == OrderSLM:
		if !positive(o.TriggerPrice) {
			return Errorf(EINVALID, "a %s order needs a trigger_price greater than 0 (where it starts to trade), not %v", k, o.TriggerPrice)
		}
	case o.TriggerPrice != 0:
		return Errorf(EINVALID, "trigger_price is for SL and SL-M orders only; leave it out of a %s order", k)
	}
	if o.Kind() == OrderSL && positive(o.Price) && positive(o.TriggerPrice) {
		// An SL becomes a LIMIT order at its price once the market reaches
		// its trigger: a buy's trigger above its limit, or a sell's below,
		// would trigger where its limit cannot fill (Kite refuses it).
		if o.Side == Buy && o.TriggerPrice > o.Price {
			return Errorf(EINVALID, "a buy SL order's trigger_price (%v) may not be above its price (%v): it starts to trade at the trigger and buys at the price or lower; send a trigger_price at or below the price", o.TriggerPrice, o.Price)
		}
		if o.Side == Sell && o.TriggerPrice < o.Price {
			return Errorf(EINVALID, "a sell SL order's trigger_price (%v) may not be below its price (%v): it starts to trade at the trigger and sells at the price or higher; send a trigger_price at or above the price", o.TriggerPrice, o.Price)
		}
	}
	if o.Product != "" && !slices.Contains(products, o.Product) {
		return Errorf(EINVALID, "product must be one of %s, not %s", strings.Join(products, ", "), strconv.QuoteToASCII(o.Product))
	}
	if o.Variety != "" && o.Variety != VarietyRegular && o.Variety != VarietyAMO {
		return Errorf(EINVALID, "variety must be \"regular\" or \"amo\" (after market hours), not %s", strconv.QuoteToASCII(o.Variety))
	}
	if !finite(o.Quantity*o.Price) || !finite(o.Quantity*o.TriggerPrice) {
		return Errorf(EINVALID, "order for %s is too large: quantity × price overflows", o.Symbol)
	}
	return nil
}

var (
	orderTypes = []string{OrderMarket, OrderLimit, OrderSL, OrderSLM}
	products   = []string{ProductMIS, ProductNRML, ProductCNC}
)

// validSymbol is the one symbol rule: canonical already, nothing to fold.
// The stored forms rely on there being no whitespace in it.
func validSymbol(symbol string) bool {
	ex, s := SplitSymbol(symbol)
	if strings.Contains(symbol, ":") && !slices.Contains(Exchanges, ex) {
		return false
	}
	if len(s) == 0 || len(s) > MaxSymbolLen || !alnum(s[0]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case alnum(c), c == '&', c == '.', c == '_', c == '-', c == '/':
		default:
			return false
		}
	}
	return true
}

func alnum(c byte) bool { return 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' }

func finite(x float64) bool   { return !math.IsNaN(x) && !math.IsInf(x, 0) }
func positive(x float64) bool { return finite(x) && x > 0 }

// ArgumentFields decodes a tool's arguments as a JSON object of raw fields
// (nothing, {} or null: none). A field given twice
// is refused: decoders disagree on which copy wins, and the approver must
// read the one that runs.
func ArgumentFields(name string, args json.RawMessage) (map[string]json.RawMessage, error) {
	args = bytes.TrimSpace(args)
	if len(args) == 0 || string(args) == "null" {
		return nil, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(args, &fields); err != nil {
		return nil, Errorf(EINVALID, "%s arguments must be a JSON object: %v", name, err)
	}
	if _, again, found := argtext.RepeatedKey(args); found {
		return nil, Errorf(EINVALID, "%s argument %s is given twice; give each argument once", name, strconv.QuoteToASCII(again))
	}
	return fields, nil
}

// orderArgs are place_order's arguments; the first three are required.
var orderArgs = []string{"symbol", "side", "quantity", "order_type", "price", "trigger_price", "product", "variety"}

// ParseOrder reads place_order's arguments exactly as given and checks them
// (CheckOrder): what it returns is what the approver read, its symbol in
// its one spelling (SymbolOf: "NSE:INFY" is the order for INFY on NSE,
// written "INFY"). Its defaults are
// place_order's: order_type LIMIT when a price is given, else MARKET;
// product "" (the desk's, Order.ForDesk); variety regular. The quantity
// must be a whole number: exchanges trade whole units.
func ParseOrder(args json.RawMessage) (Order, error) {
	ordersParsed.Add(1)
	var o Order
	fields, err := ArgumentFields(ToolPlaceOrder, args)
	if err != nil {
		return o, err
	}
	for k := range fields {
		if !slices.Contains(orderArgs, k) {
			return o, Errorf(EINVALID, "place_order has no argument %q; it takes %s", k, strings.Join(orderArgs, ", "))
		}
	}
	var missing []string
	for _, k := range orderArgs[:3] {
		if _, ok := fields[k]; !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return o, Errorf(EINVALID, "place_order needs symbol, side and quantity; missing: %s", strings.Join(missing, ", "))
	}
	for _, f := range []struct {
		k    string
		dst  any
		want string
	}{
		{"symbol", &o.Symbol, `a string, e.g. "NSE:INFY"`},
		{"side", &o.Side, `"buy" or "sell"`},
		{"quantity", &o.Quantity, "a whole number, e.g. 10"},
		{"order_type", &o.Type, `one of "MARKET", "LIMIT", "SL", "SL-M"`},
		{"price", &o.Price, "a number, e.g. 2500.5"},
		{"trigger_price", &o.TriggerPrice, "a number, e.g. 2490"},
		{"product", &o.Product, `one of "MIS", "NRML", "CNC"`},
		{"variety", &o.Variety, `"regular" or "amo"`},
	} {
		if _, ok := fields[f.k]; !ok {
			continue
		}
		if err := field(fields, f.k, f.dst, f.want); err != nil {
			return o, err
		}
	}
	for _, k := range []string{"quantity", "price", "trigger_price"} {
		if n := significantDigits(fields[k]); n > maxDigits {
			return o, Errorf(EINVALID, "%s has %d significant digits; at most %d are kept exactly, so send it rounded", k, n, maxDigits)
		}
	}
	if _, given := fields["order_type"]; !given {
		// place_order's default: LIMIT when a price is given, else MARKET.
		o.Type = OrderMarket
		if _, priced := fields["price"]; priced {
			o.Type = OrderLimit
		}
	} else if o.Type == "" {
		return o, Errorf(EINVALID, `order_type must be one of "MARKET", "LIMIT", "SL", "SL-M", not ""; leave it out for LIMIT with a price, MARKET without`)
	}
	if positive(o.Quantity) && o.Quantity != math.Trunc(o.Quantity) {
		return o, Errorf(EINVALID, "quantity must be a whole number of units, not %v", o.Quantity)
	}
	if err := CheckOrder(o); err != nil {
		return o, err
	}
	o.Symbol = OneSpelling(o.Symbol)
	return o, nil
}

// ordersParsed counts ParseOrder's readings since the process started.
var ordersParsed atomic.Int64

// OrdersParsed is how many times place_order's arguments were parsed
// since the process started: an order is read once where it enters
// (package sizing) and once more by its tool as it runs, and a figure
// that grows faster says something reads it again.
func OrdersParsed() int64 { return ordersParsed.Load() }

// significantDigits counts the significant digits of a JSON number's text.
func significantDigits(raw json.RawMessage) int {
	s := strings.TrimLeft(string(bytes.TrimSpace(raw)), "-")
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		s = s[:i]
	}
	s = strings.Replace(s, ".", "", 1)
	return len(strings.TrimRight(strings.TrimLeft(s, "0"), "0"))
}

// field decodes one argument strictly, as the schema says: a number sent as
// a string is refused rather than guessed at, since it is real money.
func field(fields map[string]json.RawMessage, k string, dst any, want string) error {
	raw := fields[k]
	if err := json.Unmarshal(raw, dst); err != nil || string(bytes.TrimSpace(raw)) == "null" {
		return Errorf(EINVALID, "%s must be %s, not %s", k, want, argtext.Show(argtext.Clip(string(raw), 40, "…")))
	}
	return nil
}
