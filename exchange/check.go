package exchange

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/deskbot/deskbot"
)

// Order is what the check reads of an order: which instrument, how many,
// at what price, and whether it is an after-market order.
type Order struct {
	Exchange      string  `json:"exchange"`
	Tradingsymbol string  `json:"tradingsymbol"`
	Quantity      float64 `json:"quantity"` // units, not lots: Kite's quantity
	Price         float64 `json:"price"`    // 0 for a market order
	AMO           bool    `json:"amo"`
}

// Market holds what the check needs: the calendar and the day's
// instruments. The service keeps one behind an atomic pointer and swaps a
// new one in when the morning's instrument list arrives.
type Market struct {
	Calendar    *Calendar
	Instruments *Instruments
}

// maxQuantity bounds a quantity so lot arithmetic stays exact in int64 and
// no float above 2^53 is read as a whole number; no exchange's freeze
// quantity is near it.
const maxQuantity = 1e9

// maxPriceUnits bounds a price in price units so it is exact in a float.
const maxPriceUnits = 1 << 53

// Check refuses an order the exchange would refuse for what it names or
// when: an unknown or expired instrument, a quantity that is not whole
// lots, a limit price off the tick, or a closed market without amo (or amo
// while open). The checks run in that order, so the first refusal is the
// first thing to fix, and an order fixed for the instrument is not later
// found to name another. Every refusal is an EINVALID error whose message
// tells a model exactly what to send instead and invents nothing: a
// symbol it mentions is one in the list. A market with no instrument list
// or calendar yet is EUNAVAILABLE: not the order's fault, and worth
// retrying. now is the caller's clock (deskbot.Now).
func (m Market) Check(o Order, now time.Time) error {
	if m.Calendar == nil {
		return deskbot.Errorf(deskbot.EUNAVAILABLE, "the market calendar is not set up, so no order can be checked; try again later")
	}
	if m.Instruments.Len() == 0 {
		return deskbot.Errorf(deskbot.EUNAVAILABLE, "the day's instrument list is not loaded yet, so no order can be checked; try again later")
	}
	inst, err := m.instrument(o)
	if err != nil {
		return err
	}
	today := DateOf(now)
	if !inst.Expiry.IsZero() && inst.Expiry.Before(today) {
		return deskbot.Errorf(deskbot.EINVALID, "%s expired on %s and can no longer be traded; check the symbol for a contract that has not expired", show(inst.Key()), inst.Expiry)
	}
	if err := checkQuantity(inst, o.Quantity); err != nil {
		return err
	}
	if err := checkPrice(inst, o.Price); err != nil {
		return err
	}
	return m.checkHours(inst, o, now)
}

// instrument finds the order's instrument or says why not.
func (m Market) instrument(o Order) (Instrument, error) {
	exchanges := func() string { return strings.Join(m.Instruments.Exchanges(), ", ") } // only when refusing
	if o.Exchange == "" {
		return Instrument{}, deskbot.Errorf(deskbot.EINVALID, "exchange is required; send one of %s", exchanges())
	}
	if _, ok := m.Instruments.exchange(o.Exchange); !ok {
		return Instrument{}, deskbot.Errorf(deskbot.EINVALID, "exchange %s has no instruments today; send one of %s, spelled that way", strconv.QuoteToASCII(o.Exchange), exchanges())
	}
	if o.Tradingsymbol == "" {
		return Instrument{}, deskbot.Errorf(deskbot.EINVALID, "tradingsymbol is required, spelled exactly as %s lists it", o.Exchange)
	}
	inst, ok := m.Instruments.Lookup(o.Exchange, o.Tradingsymbol)
	if !ok {
		msg := fmt.Sprintf("%s is not an instrument on %s today; check the symbol and exchange", show(o.Exchange+":"+o.Tradingsymbol), o.Exchange)
		// Where else the same symbol is listed is a fact from the list,
		// not a guess, and the likeliest fix (INFY sent to NFO).
		var elsewhere []string
		for _, e := range m.Instruments.exchanges {
			if _, ok := m.Instruments.Lookup(e.name, o.Tradingsymbol); ok {
				elsewhere = append(elsewhere, e.name)
			}
		}
		if len(elsewhere) > 0 {
			msg += fmt.Sprintf(" (%s is listed on %s)", o.Tradingsymbol, strings.Join(elsewhere, ", "))
		} else if strings.ToUpper(o.Tradingsymbol) != o.Tradingsymbol {
			msg += " (symbols are listed in upper case)"
		}
		return Instrument{}, deskbot.Errorf(deskbot.EINVALID, "%s", msg)
	}
	if inst.Segment == "INDICES" {
		return Instrument{}, deskbot.Errorf(deskbot.EINVALID, "%s is an index, which cannot be traded; check the symbol and exchange", show(inst.Key()))
	}
	return inst, nil
}

// show writes a name as it is when it is plain printable ASCII, and
// quoted with escapes otherwise, so an invisible or look-alike character
// the model sent is seen in the refusal.
func show(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e || s[i] == '"' || s[i] == '\\' {
			return strconv.QuoteToASCII(s)
		}
	}
	return s
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// checkQuantity refuses a quantity that is not a whole number of lots.
func checkQuantity(inst Instrument, q float64) error {
	if math.IsNaN(q) || q <= 0 || math.IsInf(q, 0) {
		return deskbot.Errorf(deskbot.EINVALID, "quantity must be a whole number greater than 0, not %s", num(q))
	}
	if q > maxQuantity {
		return deskbot.Errorf(deskbot.EINVALID, "quantity %s is too large; send at most %s", num(q), num(maxQuantity))
	}
	if q != math.Trunc(q) {
		lotWords := ""
		if inst.LotSize > 1 {
			lotWords = fmt.Sprintf(", a multiple of %s's lot size %d", inst.Tradingsymbol, inst.LotSize)
		}
		return deskbot.Errorf(deskbot.EINVALID, "quantity %s is not a whole number; send a whole number of units%s", num(q), lotWords)
	}
	lot := int64(inst.LotSize)
	n := int64(q)
	if lot <= 1 || n%lot == 0 {
		return nil
	}
	lower := n / lot * lot
	if lower == 0 {
		return deskbot.Errorf(deskbot.EINVALID, "quantity %d is not a multiple of %s's lot size %d; send %d, %d or another multiple of %d",
			n, inst.Tradingsymbol, lot, lot, 2*lot, lot)
	}
	return deskbot.Errorf(deskbot.EINVALID, "quantity %d is not a multiple of %s's lot size %d; send %d or %d (%d or %d lots)",
		n, inst.Tradingsymbol, lot, lower, lower+lot, lower/lot, lower/lot+1)
}

// checkPrice refuses a limit price that is not a whole number of ticks.
// The comparison is in integer price units, rounding away the binary noise
// of a decimal price (24512.35 is 24512.349999... as a float, 0.1+0.2 is
// 0.30000000000000004) but nothing a person could have meant: the
// tolerance is a millionth of a millionth of the price.
func checkPrice(inst Instrument, p float64) error {
	if math.IsNaN(p) || p < 0 || math.IsInf(p, 0) {
		return deskbot.Errorf(deskbot.EINVALID, "price must be 0 for a market order or a limit price greater than 0, not %s", num(p))
	}
	if p == 0 {
		return nil
	}
	u := p * priceScale
	if u >= maxPriceUnits {
		return deskbot.Errorf(deskbot.EINVALID, "price %s is too large", num(p))
	}
	tick := inst.tickUnits()
	if tick == 0 {
		return nil // not known: the broker checks it
	}
	var units int64
	exact := false
	if r := math.Round(u); math.Abs(u-r) <= u*1e-12 {
		units, exact = int64(r), true
	} else {
		units = int64(math.Floor(u))
	}
	if exact && units%tick == 0 && units > 0 {
		return nil
	}
	dec := decimals(tick)
	lower := units - units%tick
	if lower == 0 {
		return deskbot.Errorf(deskbot.EINVALID, "price %s is not a multiple of the tick %s; send %s or a higher multiple of it",
			num(p), formatUnits(tick, dec), formatUnits(tick, dec))
	}
	return deskbot.Errorf(deskbot.EINVALID, "price %s is not a multiple of the tick %s; send %s or %s",
		num(p), formatUnits(tick, dec), formatUnits(lower, dec), formatUnits(lower+tick, dec))
}

// decimals is how many decimals a multiple of tick needs: 0.05 two, 0.1
// one, 0.0025 four, 1 none.
func decimals(tick int64) int {
	d := 4
	for d > 0 && tick%10 == 0 {
		tick /= 10
		d--
	}
	return d
}

// formatUnits writes price units as rupees with dec decimals, from the
// integer, so no float rounding can show a price that is not the one
// checked.
func formatUnits(u int64, dec int) string {
	whole := strconv.FormatInt(u/priceScale, 10)
	if dec == 0 {
		return whole
	}
	frac := fmt.Sprintf("%04d", u%priceScale)
	return whole + "." + frac[:dec]
}

// opening writes when the market opens as "Mon 7 Dec 09:15 IST": the date
// too, since across a holiday "Mon" alone could be next week's.
func opening(t time.Time) string { return t.In(IST).Format("Mon 2 Jan 15:04") + " IST" }

// checkHours refuses an order when the market is closed unless it is an
// after-market order, and an after-market order while the market is open:
// Kite takes AMO only outside market hours.
func (m Market) checkHours(inst Instrument, o Order, now time.Time) error {
	if m.Calendar.Open(now) {
		if o.AMO {
			return deskbot.Errorf(deskbot.EINVALID, "the market is open; send the order without amo: true, which is only for when the market is closed")
		}
		return nil
	}
	next := m.Calendar.Next(now)
	if next.IsZero() {
		return deskbot.Errorf(deskbot.EINVALID, "the market is closed and the calendar has no coming session, so the order cannot be placed; tell the operator to check MARKET_HOURS and MARKET_HOLIDAYS")
	}
	if !o.AMO {
		return deskbot.Errorf(deskbot.EINVALID, "the market is closed (opens %s); send amo: true to place an after-market order, or wait", opening(next))
	}
	// An after-market order runs at the next opening: a contract that
	// expires before then would be refused by the exchange.
	if !inst.Expiry.IsZero() && inst.Expiry.Before(DateOf(next)) {
		return deskbot.Errorf(deskbot.EINVALID, "%s expires on %s, before the market opens again (%s), so an after-market order for it cannot run; check the symbol for a contract that has not expired",
			show(inst.Key()), inst.Expiry, opening(next))
	}
	return nil
}
