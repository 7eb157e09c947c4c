package deskbot

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"

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

// SplitSymbol splits "NFO:NIFTY24DECFUT" into its exchange and trading
// symbol; a symbol without an exchange has "" for it.
func SplitSymbol(symbol string) (exchange, tradingsymbol string) {
	if ex, ts, ok := strings.Cut(symbol, ":"); ok {
		return ex, ts
	}
	return "", symbol
}

// CheckOrder refuses an order that is not exactly what it means. Nothing is
// normalised: the approver of a held order reads its arguments, and the
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
	if !positive(o.Price) {
		return Errorf(EINVALID, "price must be a number greater than 0, not %v", o.Price)
	}
	if !finite(o.Quantity * o.Price) {
		return Errorf(EINVALID, "order for %s is too large: quantity × price overflows", o.Symbol)
	}
	return nil
}

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

var orderArgs = []string{"symbol", "side", "quantity", "price"}

// ParseOrder reads place_order's arguments exactly as given and checks them
// (CheckOrder): what it returns is what the approver read.
func ParseOrder(args json.RawMessage) (Order, error) {
	var o Order
	fields, err := ArgumentFields(ToolPlaceOrder, args)
	if err != nil {
		return o, err
	}
	for k := range fields {
		if !slices.Contains(orderArgs, k) {
			return o, Errorf(EINVALID, "place_order has no argument %q; it takes symbol, side, quantity and price", k)
		}
	}
	var missing []string
	for _, k := range orderArgs {
		if _, ok := fields[k]; !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return o, Errorf(EINVALID, "place_order needs symbol, side, quantity and price; missing: %s", strings.Join(missing, ", "))
	}
	if err := field(fields, "symbol", &o.Symbol, `a string, e.g. "RELIANCE"`); err != nil {
		return o, err
	}
	if err := field(fields, "side", &o.Side, `"buy" or "sell"`); err != nil {
		return o, err
	}
	if err := field(fields, "quantity", &o.Quantity, "a number, e.g. 10"); err != nil {
		return o, err
	}
	if err := field(fields, "price", &o.Price, "a number, e.g. 2500.5"); err != nil {
		return o, err
	}
	for _, k := range []string{"quantity", "price"} {
		if n := significantDigits(fields[k]); n > maxDigits {
			return o, Errorf(EINVALID, "%s has %d significant digits; at most %d are kept exactly, so send it rounded", k, n, maxDigits)
		}
	}
	return o, CheckOrder(o)
}

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
