package words

import (
	"fmt"
	"math"
	"strings"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/argtext"
)

// The words of an order: as a trader says it, what it is worth, and where
// it stands at the broker, for the approver of a held order, the desk's
// get_orders, the update a desk is told in its inbox and the chat's word
// of a fill or a rejection.

// FormatOrder renders an order as a trader says it: side, quantity,
// symbol, order type with its limit and trigger, product, and AMO for an
// after-market order.
//
//	BUY 50 NFO:NIFTY25DECFUT LIMIT @ 24,512.50 · NRML
//	BUY 50 NSE:INFY MARKET · MIS
//	SELL 50 NSE:INFY SL @ 1,490.00 trigger 1,495.00 · MIS
//	SELL 50 NSE:INFY SL-M trigger 1,495.00 · MIS · AMO
//
// A product of "" is left out: callers that show an order a desk placed
// resolve it first (Order.ForDesk), so the words name the product that
// trades.
func FormatOrder(o deskbot.Order) string {
	k := o.Kind()
	s := strings.ToUpper(o.Side) + " " + GroupedQuantity(o.Quantity) + " " + o.Symbol + " " + k
	switch k {
	case deskbot.OrderLimit:
		s += " @ " + GroupedPrice(o.Price)
	case deskbot.OrderSL:
		s += " @ " + GroupedPrice(o.Price) + " trigger " + GroupedPrice(o.TriggerPrice)
	case deskbot.OrderSLM:
		s += " trigger " + GroupedPrice(o.TriggerPrice)
	}
	if o.Product != "" {
		s += " · " + o.Product
	}
	if o.Variety == deskbot.VarietyAMO {
		s += " · AMO"
	}
	return s
}

// Notional says what o is worth, without a capital: at its own limit
// ("notional ₹12,25,625.00"), or, for an order at the market's price
// (Order.AtMarket), at the market's last price, which the caller reads
// (deskbot.Market; 0 when it has none): "notional ≈ ₹75,000.00 at the
// last price". An order's own price is never what an order at market is
// valued at: it names none. Nor is a LIMIT sell's limit below the last
// price: it fills at the market's, so a sell of a crore limited at a paisa
// reads as a crore ("…, where a sell limited at ₹0.01 fills").
func Notional(o deskbot.Order, last float64) string {
	if limitSell(o) && last > o.Price {
		return "notional ≈ " + Rupees(o.Quantity*last) + " at the last price, where a sell limited at " + Rupees(o.Price) + " fills"
	}
	if !o.AtMarket() {
		return "notional " + Rupees(o.Quantity*o.Price)
	}
	if last <= 0 {
		return "notional not known: no last price for " + o.Symbol + " just now"
	}
	return "notional ≈ " + Rupees(o.Quantity*last) + " at the last price"
}

// NeedsLastPrice reports whether o's notional (Notional) is read at the
// market's last price: an order at market, or a LIMIT sell, which fills
// there when its limit is below it.
func NeedsLastPrice(o deskbot.Order) bool { return o.AtMarket() || limitSell(o) }

func limitSell(o deskbot.Order) bool { return o.Kind() == deskbot.OrderLimit && o.Side == deskbot.Sell }

// OrderSummary renders an order on one line: the order, its notional
// (Notional, at last for an order at market) and, with the desk's book,
// the position it leaves:
//
//	SELL 50 NIFTY24DECFUT LIMIT @ 24,512.50 · NRML, notional ₹12,25,625.00, position after: short 50
func OrderSummary(o deskbot.Order, b *deskbot.Book, last float64) string {
	s := FormatOrder(o) + ", " + Notional(o, last)
	if b != nil {
		s += ", position after: " + Holding(deskbot.PositionAfter(*b, o))
	}
	return s
}

// MarginLine is the margin an order needs against what the account has
// available, as the broker reckons it: "Margin needed ₹1,20,000.00 ·
// available ₹5,00,000.00".
func MarginLine(m deskbot.OrderMargin) string {
	return "Margin needed " + Rupees(m.Required) + " · available " + Rupees(m.Available)
}

// maxReason bounds the broker's reason in the words: it is the broker's
// text, and a line should stay a line.
const maxReason = 200

func reason(po deskbot.PlacedOrder) string {
	return argtext.Clip(strings.Join(strings.Fields(po.Reason), " "), maxReason, "…")
}

// orderID names a placed order by the broker's id, or says it has none
// yet.
func orderID(po deskbot.PlacedOrder) string {
	if po.ID == "" {
		return "order (no broker id yet)"
	}
	return "order " + po.ID
}

// filledAt is what of po filled, at what average: "20 @ 1,499.50 avg".
func filledAt(po deskbot.PlacedOrder) string {
	return GroupedQuantity(po.Filled) + " @ " + GroupedPrice(po.AvgPrice) + " avg"
}

// stateWords is po's state with what filled and why, as get_orders lines
// end: "open", "partly filled 20 @ 1,499.50 avg", "rejected: <reason>".
func stateWords(po deskbot.PlacedOrder) string {
	s := string(po.State)
	switch po.State {
	case deskbot.OrderPartlyFilled, deskbot.OrderComplete:
		s += " " + filledAt(po)
	case deskbot.OrderCancelled:
		if po.Filled > 0 {
			s += " after " + filledAt(po)
		}
	}
	if r := reason(po); r != "" && (po.State == deskbot.OrderRejected || po.State == deskbot.OrderCancelled) {
		s += ": " + r
	}
	return s
}

// PlacedLine renders a placed order on one line, for get_orders:
//
//	order 2512040001 · BUY 50 NSE:INFY LIMIT @ 1,500.00 · MIS · partly filled 20 @ 1,499.50 avg
//	order 2512040002 · SELL 10 NSE:INFY MARKET · MIS · rejected: insufficient funds
//	order 2512040003 · BUY 5 NSE:INFY MARKET · MIS · algo id 12345 · complete 5 @ 1,500.00 avg
//
// The exchange's algo id the order was sent with comes before its state,
// which stays last (OrderOutcome reads it there).
func PlacedLine(po deskbot.PlacedOrder) string {
	algo := ""
	if po.AlgoID != "" {
		algo = " · algo id " + po.AlgoID
	}
	return orderID(po) + " · " + FormatOrder(po.Order) + algo + " · " + stateWords(po)
}

// OrderOutcome reads place_order's answer to its desk ("Filled: order
// 2512040001 · BUY 50 INFY LIMIT @ 1,500.00 · MIS · complete 50 @
// 1,499.75 avg. Now INFY: …") for people, as the chat and the desks page
// tell an allowed order's outcome under the order itself: its id and
// where it stood when placed (as PlacedLine ends), without what the
// answer goes on to tell the desk's model. Where it stood then, not now:
// each later fill is told once, on its own. ok is false for an answer of
// another shape (a refusal, an error).
//
//	order 2512040001 · complete 50 @ 1,499.75 avg
//	order 2512040001 · open
func OrderOutcome(answer string) (outcome string, ok bool) {
	_, line, found := strings.Cut(answer, ": order ")
	if !found {
		return "", false
	}
	// The line ends its sentence; the prices in it have no space after
	// their point.
	if i := strings.Index(line, ". "); i >= 0 {
		line = line[:i]
	}
	line = strings.TrimSuffix(line, ".")
	id, _, found := strings.Cut(line, " · ")
	i := strings.LastIndex(line, " · ")
	if !found || i <= len(id) || strings.ContainsAny(line, "\n") {
		return "", false
	}
	return "order " + id + " · " + line[i+len(" · "):], true
}

// OrderUpdate is what a desk's model is told in its inbox when one of its
// orders changes state: the order in trading words, where it stands now,
// what filled at what average, and the broker's reason for a rejection or
// a cancellation. The words are part of the contract with the desk's
// model.
func OrderUpdate(po deskbot.PlacedOrder) string {
	head := "Your " + orderID(po) + " (" + FormatOrder(po.Order) + ")"
	of := GroupedQuantity(po.Filled) + " of " + GroupedQuantity(po.Order.Quantity)
	avg := " at " + GroupedPrice(po.AvgPrice) + " on average"
	why := ""
	if r := reason(po); r != "" {
		why = " The broker says: " + r + "."
	}
	switch po.State {
	case deskbot.OrderPending:
		return head + " was sent; the broker's answer is not known yet. Its state comes as another update."
	case deskbot.OrderOpen:
		return head + " is open at the broker; nothing of it has filled yet."
	case deskbot.OrderPartlyFilled:
		return head + " is partly filled: " + of + " filled" + avg + ". The rest is still open."
	case deskbot.OrderComplete:
		return head + " is complete: " + GroupedQuantity(po.Filled) + " filled" + avg + "."
	case deskbot.OrderRejected:
		return head + " was rejected; nothing of it filled." + why
	case deskbot.OrderCancelled:
		if po.Filled > 0 {
			return head + " was cancelled after " + of + " filled" + avg + "; the rest will not fill." + why
		}
		return head + " was cancelled; nothing of it filled." + why
	case deskbot.OrderNotPlaced:
		return head + " was not placed: the broker has no order of it, so nothing traded." + why
	}
	return head + " is now " + string(po.State) + "." + why
}

// OrderEvent is the chat's word of a desk's order that filled (in part or
// in full) or was rejected or cancelled, on one line:
//
//	alpha · order 2512040001 complete: BUY 50 NSE:INFY LIMIT @ 1,500.00 · MIS · 50 @ 1,499.50 avg
//	alpha · order 2512040002 rejected: SELL 10 NSE:INFY MARKET · MIS · insufficient funds
func OrderEvent(po deskbot.PlacedOrder) string {
	s := fmt.Sprintf("%s · %s %s: %s", po.Desk, orderID(po), po.State, FormatOrder(po.Order))
	switch po.State {
	case deskbot.OrderPartlyFilled:
		s += " · " + GroupedQuantity(po.Filled) + " of " + GroupedQuantity(po.Order.Quantity) + " @ " + GroupedPrice(po.AvgPrice) + " avg"
	case deskbot.OrderComplete:
		s += " · " + filledAt(po)
	case deskbot.OrderCancelled:
		if po.Filled > 0 {
			s += " · " + filledAt(po) + " filled before"
		}
	}
	if r := reason(po); r != "" && (po.State == deskbot.OrderRejected || po.State == deskbot.OrderCancelled) {
		s += " · " + r
	}
	return s
}

// SizedAt says what an order's exposure (deskbot.SizedOrder) was counted
// at, as the limits' refusals and the approver's message end: "at the
// market's price of ₹1,500.00", "at its trigger price of ₹1,490.00", "at
// its underlying's price of ₹24,000.00" (a sold option), with the
// contract size where a unit is more than one ("× contract size 1,000").
func SizedAt(s *deskbot.SizedOrder) string {
	o := s.Order
	var at string
	switch {
	case s.Instrument.Option() && o.Side == deskbot.Sell:
		at = "at its underlying's price of " + Rupees(s.Underlying)
	case s.Market.Value > 0 && s.Price == s.Market.Value && s.Price > o.Price && s.Price > o.TriggerPrice:
		at = "at the market's price of " + Rupees(s.Price)
	case o.TriggerPrice > o.Price && s.Price == o.TriggerPrice:
		at = "at its trigger price of " + Rupees(o.TriggerPrice)
	default:
		at = "at this price"
	}
	if c := s.Instrument.ContractSize; c != 1 && c > 0 {
		at += " × contract size " + GroupedQuantity(c)
	}
	return at
}

// ExposureLine says what a sized order puts at risk where quantity × price
// does not: an option's premium and exposure ("Premium ₹15,000.00 ·
// exposure ₹18,00,00,000.00 at its underlying's price of ₹24,000.00"), a
// contract's ("Exposure ₹83,50,000.00 at this price × contract size
// 1,000").
func ExposureLine(s *deskbot.SizedOrder) string {
	if s.Instrument.Option() {
		premium := math.Abs(s.Order.Quantity) * s.Instrument.ContractSize * s.Price
		return "Premium " + Rupees(premium) + " · exposure " + Rupees(s.Exposure) + " " + SizedAt(s)
	}
	return "Exposure " + Rupees(s.Exposure) + " " + SizedAt(s)
}
