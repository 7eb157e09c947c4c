package broker

import (
	"math"
	"strconv"

	"github.com/deskbot/deskbot"
)

// MaxSymbolLen bounds a symbol; exchange symbols are far shorter.
const MaxSymbolLen = 32

// maxDigits is how many significant digits a quantity or price may have:
// any decimal of 15 digits reads back as itself from a float64, so the
// number an approver reads is the number the broker fills.
const maxDigits = 15

// symbolRule says what a valid symbol looks like, for the model.
const symbolRule = `a symbol is 1 to 32 characters of upper-case A-Z, digits 0-9 and the punctuation & . _ - /, ` +
	`starting with a letter or digit, spelled exactly as the exchange writes it (e.g. "RELIANCE", "M&M", "BAJAJ-AUTO", "NIFTY24DECFUT")`

// CheckOrder refuses an order that is not exactly what it means. Nothing is
// normalised: the approver of a held order reads its arguments, and the
// broker must receive exactly those, so a symbol that is lower case, padded
// (U+00A0 included), spelled with a look-alike letter (Cyrillic "Ѕ", the long
// "ſ" that upper-cases to "S") or carrying a bidi control is refused rather
// than turned into another symbol. Every failure is an EINVALID error whose
// message tells a model what to fix; any broker, paper or real, should
// accept orders only through it.
func CheckOrder(o deskbot.Order) error {
	if o.Symbol == "" {
		return deskbot.Errorf(deskbot.EINVALID, "symbol is required: %s", symbolRule)
	}
	if !validSymbol(o.Symbol) {
		// QuoteToASCII shows every character the model sent, invisible or
		// look-alike ones as escapes.
		return deskbot.Errorf(deskbot.EINVALID, "symbol %s is not valid and the order was not placed: %s. Nothing is corrected for you; send the symbol spelled that way.",
			strconv.QuoteToASCII(o.Symbol), symbolRule)
	}
	if o.Side != deskbot.Buy && o.Side != deskbot.Sell {
		return deskbot.Errorf(deskbot.EINVALID, "side must be \"buy\" or \"sell\" (lower case), not %s", strconv.QuoteToASCII(o.Side))
	}
	if !positive(o.Quantity) {
		return deskbot.Errorf(deskbot.EINVALID, "quantity must be a number greater than 0, not %v", o.Quantity)
	}
	if !positive(o.Price) {
		return deskbot.Errorf(deskbot.EINVALID, "price must be a number greater than 0, not %v", o.Price)
	}
	if !finite(o.Quantity * o.Price) {
		return deskbot.Errorf(deskbot.EINVALID, "order for %s is too large: quantity × price overflows", o.Symbol)
	}
	return nil
}

// validSymbol is the one symbol rule: canonical already, nothing to fold.
// The stored forms rely on there being no whitespace in it.
func validSymbol(s string) bool {
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
