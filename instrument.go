package deskbot

import (
	"math"
	"strings"
	"time"
)

// Instrument types, as Kite's instrument list names them: shares, futures,
// call and put options.
const (
	InstrumentEQ  = "EQ"
	InstrumentFUT = "FUT"
	InstrumentCE  = "CE"
	InstrumentPE  = "PE"
)

// Instrument is what sizing an order needs to know of what it trades. A
// market answers it (Market.Instrument); nothing a desk sends sets it.
type Instrument struct {
	Symbol string `json:"symbol"` // its one spelling (SymbolOf)
	Type   string `json:"type"`   // one of the Instrument* types
	// ContractSize is how many units of what the price is quoted in one
	// unit of an order's quantity is: 1 for shares and NSE/BSE futures and
	// options (their quantity is in units), 1,000 for a USDINR contract (a
	// unit is a contract of $1,000 priced per dollar), an MCX contract's
	// size (CRUDEOIL: 100 barrels priced per barrel). Never 0: an
	// instrument whose size is not known has no Instrument.
	ContractSize float64 `json:"contract_size"`
	LotSize      int     `json:"lot_size,omitempty"`
	TickSize     float64 `json:"tick_size,omitempty"`
	Strike       float64 `json:"strike,omitempty"` // options only
	Expiry       string  `json:"expiry,omitempty"` // 2006-01-02; "" for what does not expire
	// Underlying is where an option's (or future's) underlying is priced,
	// in its one spelling ("NSE:NIFTY 50" for NIFTY's index, "RELIANCE"
	// for a stock's options): a sold option's exposure is counted at its
	// price. "" for shares.
	Underlying string `json:"underlying,omitempty"`
}

// Option reports whether the instrument is a call or a put.
func (i Instrument) Option() bool { return i.Type == InstrumentCE || i.Type == InstrumentPE }

// Exposure is the one exposure rule: what qty units of in, bought or
// sold (side), put at risk in rupees, price being what one unit is counted
// at and underlying the underlying's price (read for a sold option only).
// Shares and futures: quantity × contract size × price. A bought option
// can lose only its premium: quantity × contract size × premium. A sold
// option can lose without bound, so it is counted at what it is written
// on: quantity × contract size × the underlying's price (7,500 NIFTY calls
// sold at ₹2 are about ₹18 crore, not ₹15,000). The limits, four eyes,
// grant caps, the risk rules' P&L and the words all count with it.
func Exposure(in Instrument, side string, qty, price, underlying float64) float64 {
	if in.Option() && side == Sell {
		return math.Abs(qty) * in.ContractSize * underlying
	}
	return math.Abs(qty) * in.ContractSize * price
}

// Price is a market's last traded price of an instrument and when the
// market had it.
type Price struct {
	Value float64   `json:"value"`
	At    time.Time `json:"at"`
}

// DefaultPriceMaxAge is PRICE_MAX_AGE's default: how old a last price may
// be, while its market is open, and still price an order.
const DefaultPriceMaxAge = 60 * time.Second

// Usable reports whether p may price an order at now. A last price of 0
// or less is no price: Kite reports 0 for a contract that is listed but
// has not traded, and an order counted at it is counted at nothing. A
// price older than maxAge while the market is open (open) is stale: the
// market has moved since. Outside market hours the last price is the
// close, however old.
func (p Price) Usable(now time.Time, maxAge time.Duration, open bool) bool {
	if !(p.Value > 0) || math.IsInf(p.Value, 0) {
		return false
	}
	return !open || maxAge <= 0 || now.Sub(p.At) <= maxAge
}

// ContractSizes is contract size by "EXCHANGE:NAME" (the underlying's
// name in Kite's instrument list: "MCX:CRUDEOIL", "CDS:USDINR") for the
// exchanges whose unit of quantity is a whole contract. NSE, BSE, NFO and
// BFO count in units (size 1) and are not listed.
type ContractSizes map[string]float64

// DefaultContractSizes are the exchanges' contract sizes deskbot knows:
// the rupee currency pairs (a contract of 1,000 units of the currency,
// JPYINR quoted per 100 yen on a contract of 1,00,000 yen) and MCX's main
// contracts, as the exchange specifies them, in the unit the price is
// quoted in. DESKS_FILE's [contract_sizes] adds to them and overrides
// them; an instrument on CDS, BCD or MCX named in neither is refused
// before anyone is asked, never counted as 1.
func DefaultContractSizes() ContractSizes {
	s := ContractSizes{}
	for _, ex := range []string{"CDS", "BCD"} {
		for _, pair := range []string{"USDINR", "EURINR", "GBPINR", "JPYINR"} {
			s[ex+":"+pair] = 1000
		}
	}
	for name, size := range map[string]float64{
		"CRUDEOIL": 100, "CRUDEOILM": 10, // barrels, priced per barrel
		"GOLD": 100, "GOLDM": 10, // 1 kg and 100 g, priced per 10 g
		"SILVER": 30, "SILVERM": 5, // kg, priced per kg
		"NATURALGAS": 1250, "NATGASMINI": 250, // mmBtu, priced per mmBtu
		"COPPER": 2500, "ZINC": 5000, "LEAD": 5000, "ALUMINIUM": 5000, // kg, priced per kg
	} {
		s["MCX:"+name] = size
	}
	return s
}

// With is s with more (DESKS_FILE's table) added over it.
func (s ContractSizes) With(more map[string]float64) ContractSizes {
	out := make(ContractSizes, len(s)+len(more))
	for k, v := range s {
		out[k] = v
	}
	for k, v := range more {
		out[strings.ToUpper(k)] = v
	}
	return out
}

// unitExchanges are the exchanges whose quantity is in units: a contract
// size of 1.
var unitExchanges = []string{"NSE", "BSE", "NFO", "BFO"}

// Size is the contract size of an instrument on exchange whose underlying
// is named name; false when it is not known (and the order must be
// refused, never counted as 1).
func (s ContractSizes) Size(exchange, name string) (float64, bool) {
	for _, ex := range unitExchanges {
		if ex == exchange {
			return 1, true
		}
	}
	v, ok := s[exchange+":"+name]
	return v, ok && v > 0
}

// SizedOrder is an order as it was read where the call entered, once: the
// order, the instrument it trades, the price one unit was counted at and
// its exposure (Exposure). The limits, the gate, the store, the chat and
// the page use it; nothing downstream reads the arguments or the market
// again for it. A held request keeps it, so a restart does not size it
// differently.
type SizedOrder struct {
	Order      Order      `json:"order"`
	Instrument Instrument `json:"instrument"`
	// Price is what one unit is counted at: the highest of its limit, its
	// trigger and the market's last price (a buy's limit below the market
	// does not fill there, a sell's fills at the market, a stop trades once
	// the market reaches its trigger).
	Price float64 `json:"price"`
	// Market is the market's last price when it was sized (0: none was
	// usable, for a LIMIT buy, which its own price bounds).
	Market Price `json:"market"`
	// Underlying is the underlying's last price, read for a sold option.
	Underlying float64 `json:"underlying,omitempty"`
	Exposure   float64 `json:"exposure"`
	// From is, for a modify_order, the desk's order as it stood when the
	// call was read (Order is the order it becomes): what the approver is
	// shown it changes, and what the broker requires it still to be when
	// the modification runs. nil for a new order.
	From *PlacedOrder `json:"from,omitempty"`
}

// ExposureOf is the exposure of qty units of s's instrument on side at the
// prices s was sized at: a position's, for the position limit.
func (s *SizedOrder) ExposureOf(side string, qty float64) float64 {
	return Exposure(s.Instrument, side, qty, s.Price, s.Underlying)
}
