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
	Quantity      float64 `json:"quantity"`                // units, not lots: Kite's quantity
	Price         float64 `json:"price"`                   // 0 for a market order
	TriggerPrice  float64 `json:"trigger_price,omitempty"` // a stop's; 0 for none
	AMO           bool    `json:"amo"`
}

// Market holds what the check needs: the calendar and the day's
// instruments. The service keeps one behind an atomic pointer and swaps a
// new one in when the morning's instrument list arrives.
type Market struct {
	Calendar    *Calendar
	Instruments *Instruments
	// NoAMO is set where no after-market order can be placed (a paper
	// broker fills only while the market is open): a closed market is
	// then a plain "wait for the open".
	NoAMO bool
}

// maxQuantity bounds a quantity so lot arithmetic stays exact in int64 and
// no float above 2^53 is read as a whole number; no exchange's freeze
// quantity is near it.
const maxQuantity = 1e9

// maxPriceUnits bounds a price in price units so it is exact in a float.
const maxPriceUnits = 1 << 53

// Check refuses an order the broker would refuse for what it names or
// when: an unknown instrument or an index, an expired contract, a quantity
// that is not whole lots, a limit price off the tick, a closed market
// without amo, amo while the market is open or outside Kite's after-market
// windows. The checks run in that order, so the first refusal names the
// first thing to fix. Every refusal of the order is an EINVALID error whose
// message tells a model exactly what to send instead and invents nothing:
// a symbol it mentions is one in the list. A Market with no instrument
// list or calendar yet answers EUNAVAILABLE instead: not the order's
// fault, and worth retrying. now is the caller's clock (deskbot.Now).
//
// Not checked, for want of data: freeze quantities, price bands and
// circuits (the broker refuses those with its own reason).
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
	if err := checkPrice(inst, "price", o.Price); err != nil {
		return err
	}
	// A stop's trigger is on the tick too: Kite refuses one that is not,
	// after the approver said yes.
	if err := checkPrice(inst, "trigger_price", o.TriggerPrice); err != nil {
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

// checkPrice refuses a limit or trigger price (name, as the model sends
// it) that is not a whole number of ticks.
// The comparison is in integer price units, rounding away the binary noise
// of a decimal price (24512.35 is 24512.349999... as a float, 0.1+0.2 is
// 0.30000000000000004) but nothing a person could have meant: the
// tolerance is half a unit in the 15th significant digit of the price (a
// float's noise is under a quarter of that; ParseOrder keeps 15 digits, so
// a price off the tick in its 15th digit is refused).
func checkPrice(inst Instrument, name string, p float64) error {
	if math.IsNaN(p) || p < 0 || math.IsInf(p, 0) {
		if name == "price" {
			return deskbot.Errorf(deskbot.EINVALID, "price must be 0 for a market order or a limit price greater than 0, not %s", num(p))
		}
		return deskbot.Errorf(deskbot.EINVALID, "%s must be 0 for none or greater than 0, not %s", name, num(p))
	}
	if p == 0 {
		return nil
	}
	u := p * priceScale
	if u >= maxPriceUnits {
		return deskbot.Errorf(deskbot.EINVALID, "%s %s is too large", name, num(p))
	}
	tick := inst.tickUnits()
	if tick == 0 {
		return nil // not known: the broker checks it
	}
	var units int64
	exact := false
	if r := math.Round(u); math.Abs(u-r) <= u*5e-16 {
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
		return deskbot.Errorf(deskbot.EINVALID, "%s %s is not a multiple of the tick %s; send %s or a higher multiple of it",
			name, num(p), formatUnits(tick, dec), formatUnits(tick, dec))
	}
	return deskbot.Errorf(deskbot.EINVALID, "%s %s is not a multiple of the tick %s; send %s or %s",
		name, num(p), formatUnits(tick, dec), formatUnits(lower, dec), formatUnits(lower+tick, dec))
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

// opening writes a moment as "Mon 7 Dec 09:15 IST": the date
// too, since across a holiday "Mon" alone could be next week's.
func opening(t time.Time) string { return t.In(deskbot.IST).Format("Mon 2 Jan 15:04") + " IST" }

// Kite takes after-market orders only in windows away from the session:
// equity from 16:00 to 08:58, F&O from 15:45 to 09:10, and none from 01:00
// to 05:30 (its maintenance). One calendar serves both, so the windows are
// their intersection, relative to the calendar's sessions: from 30 minutes
// after a close to 17 minutes before the next opening. An order sent
// outside them would be rejected by Kite after an approver had read it.
const (
	amoAfterClose     = 30 * time.Minute
	amoBeforeOpen     = 17 * time.Minute
	maintenanceStart  = 1 * time.Hour
	maintenanceFinish = 5*time.Hour + 30*time.Minute
)

// amoFrom is the first moment at or after t, the market being closed, at
// which Kite takes an after-market order for the opening next; zero when it
// takes none before then.
func (c *Calendar) amoFrom(t, next time.Time) time.Time {
	from := t
	if lc := c.lastClose(t); !lc.IsZero() && from.Before(lc.Add(amoAfterClose)) {
		from = lc.Add(amoAfterClose)
	}
	midnight := DateOf(from).Midnight()
	if since := from.Sub(midnight); maintenanceStart <= since && since < maintenanceFinish {
		from = midnight.Add(maintenanceFinish)
	}
	if !from.Before(next.Add(-amoBeforeOpen)) {
		return time.Time{}
	}
	return from
}

// checkHours refuses an order when the market is closed unless it is an
// after-market order sent when Kite takes those, and an after-market order
// while the market is open.
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
	if m.NoAMO {
		return deskbot.Errorf(deskbot.EINVALID, "the market is closed (opens %s) and paper orders fill only while it is open; wait for the open", opening(next))
	}
	from := m.Calendar.amoFrom(now, next)
	switch {
	case from.IsZero():
		return deskbot.Errorf(deskbot.EINVALID, "the market is closed (opens %s) and after-market orders are no longer taken before it opens; wait, and send the order without amo once it opens", opening(next))
	case from.After(now):
		return deskbot.Errorf(deskbot.EINVALID, "the market is closed (opens %s) and after-market orders are taken again from %s; send it with amo: true from then, or wait for the open", opening(next), opening(from))
	case !o.AMO:
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
