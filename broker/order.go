package broker

import (
	"math"
	"strings"

	"github.com/deskbot/deskbot"
)

// MaxSymbolLen bounds a symbol; exchange symbols are far shorter.
const MaxSymbolLen = 32

// NormalizeOrder validates o and returns it in canonical form: the symbol
// trimmed and upper-cased, so "reliance" and "RELIANCE" are one position.
// Every failure is an EINVALID error whose message tells a model what to fix;
// any broker, paper or real, should accept orders only through it.
func NormalizeOrder(o deskbot.Order) (deskbot.Order, error) {
	o.Symbol = strings.ToUpper(strings.TrimSpace(o.Symbol))
	if o.Symbol == "" {
		return o, deskbot.Errorf(deskbot.EINVALID, "symbol is required, e.g. \"RELIANCE\"")
	}
	if !validSymbol(o.Symbol) {
		return o, deskbot.Errorf(deskbot.EINVALID,
			"symbol %q is not valid: use up to %d letters, digits or punctuation without spaces, e.g. \"RELIANCE\"",
			o.Symbol, MaxSymbolLen)
	}
	if o.Side != deskbot.Buy && o.Side != deskbot.Sell {
		return o, deskbot.Errorf(deskbot.EINVALID, "side must be \"buy\" or \"sell\", not %q", o.Side)
	}
	if !positive(o.Quantity) {
		return o, deskbot.Errorf(deskbot.EINVALID, "quantity must be a number greater than 0, not %v", o.Quantity)
	}
	if !positive(o.Price) {
		return o, deskbot.Errorf(deskbot.EINVALID, "price must be a number greater than 0, not %v", o.Price)
	}
	if !finite(o.Quantity * o.Price) {
		return o, deskbot.Errorf(deskbot.EINVALID, "order for %s is too large: quantity × price overflows", o.Symbol)
	}
	return o, nil
}

// validSymbol allows printable ASCII without spaces: symbols carry dots,
// dashes, ampersands and slashes (BAJAJ-AUTO, M&M, RELIANCE.NS, BTC/USDT),
// and the stored form relies on there being no whitespace.
func validSymbol(s string) bool {
	if len(s) > MaxSymbolLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

func finite(x float64) bool   { return !math.IsNaN(x) && !math.IsInf(x, 0) }
func positive(x float64) bool { return finite(x) && x > 0 }
