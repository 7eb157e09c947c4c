package words

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/argtext"
)

// The trading words of a held broker call: the one rendering the chat's
// request messages and the desks page both show, so a call reads the same
// wherever an approver decides it. Plain text; each caller escapes it for
// its medium.

// Live is what a held broker call's words read besides the call, each
// part optional, so the words go out with what was read in time.
type Live struct {
	// Book is the desk's book as it stands: the position an order leaves,
	// the desk's P&L, what a flatten would close.
	Book *deskbot.Book
	// Product is the desk's default product (deskbot.Policies.Product),
	// named in an order that names none: the product that trades.
	Product string
	// LastPrice is the market's last price of the order's symbol, at which
	// an order at market is valued (Notional); 0 when not known.
	LastPrice float64
	// Margin is what the order needs of the account's margin, as the
	// broker reckons it; nil when the broker keeps none or did not say.
	Margin *deskbot.OrderMargin
	// Orders are the desk's orders of the day, for a cancel_order's words
	// (the order it cancels); nil when not read.
	Orders []deskbot.PlacedOrder
	// Now is when the words are drawn: an order's last price (read when
	// it was sized) is shown with its age then (LastPriceLine); zero
	// leaves the line out.
	Now time.Time
	// MaxAge is PRICE_MAX_AGE: a last price older is shown as stale.
	MaxAge time.Duration
	// Underlying is an option's underlying's last price, read for the
	// words; zero when not read (a sold option's, read at sizing, is
	// used then).
	Underlying deskbot.Price
}

// TradingWords renders a broker call the way a trader reads it, as plain
// lines above its arguments:
//
//	SELL 50 NFO:NIFTY24DECFUT LIMIT @ 24,512.50 · NRML
//	Notional ₹12,25,625.00
//	Margin needed ₹1,20,000.00 · available ₹5,00,000.00
//	Position after: short 50
//	Desk P&L: realised +₹40.00, open +₹60.00
//
// An order at market reads "Notional ≈ ₹75,000.00 at the last price".
// What live lacks is left out: the lines that need the book or the
// margin. A flatten no longer open gets no words: what it closed is its
// result. Arguments the words could misstate (anything ParseOrder refuses,
// numbers the words would round) get no words: the call below is what
// runs, and it is always shown.
func TradingWords(r *deskbot.Request, live Live) []string {
	book := live.Book
	var lines []string
	switch r.Content.ToolName {
	case deskbot.ToolPlaceOrder:
		o, ok := OrderOf(r.Content.Arguments)
		if !ok {
			return nil
		}
		o = o.ForDesk(live.Product)
		if s := r.Call().Order; s != nil && (s.Instrument.Option() || s.Instrument.ContractSize != 1) {
			// What it puts at risk is not quantity × price: an option's
			// premium and its exposure, or a contract's whole size.
			lines = append(lines, FormatOrder(o), ExposureLine(s))
		} else {
			n := Notional(o, live.LastPrice)
			lines = append(lines, FormatOrder(o), strings.ToUpper(n[:1])+n[1:])
		}
		if s := r.Call().Order; s != nil && !live.Now.IsZero() {
			lines = append(lines, LastPriceLine(o, s.Market, live.Now, live.MaxAge))
			if s.Instrument.Option() && s.Instrument.Underlying != "" {
				u := live.Underlying
				if !(u.Value > 0) && s.Underlying > 0 {
					u = deskbot.Price{Value: s.Underlying, At: s.Market.At}
				}
				lines = append(lines, UnderlyingLine(s.Instrument, u, live.Now, live.MaxAge))
			}
		}
		if m := live.Margin; m != nil {
			lines = append(lines, MarginLine(*m))
		}
		if book != nil {
			lines = append(lines, "Position after: "+Holding(deskbot.PositionAfter(*book, o)))
		}
	case deskbot.ToolFlattenDesk:
		if r.State != deskbot.StateOpen {
			// Decided or lapsed: the book as it stands now says nothing of
			// what this flatten did. What it closed is its result, which
			// the outcome shows.
			return nil
		}
		if book == nil {
			return []string{"Closes every open position of the desk (its book could not be read just now)."}
		}
		plan := FlattenPlan(*book)
		if len(plan) == 0 {
			return []string{"Would close nothing: the desk has no open positions.", "Desk P&L: " + BookPnL(*book)}
		}
		lines = append(lines, fmt.Sprintf("Would close %d:", len(plan)))
		for _, l := range plan {
			lines = append(lines, "• "+l)
		}
	case deskbot.ToolModifyOrder:
		lines = ModifyLines(r.Call())
		if len(lines) == 0 {
			return nil
		}
	case deskbot.ToolPlaceGTT:
		g, ok := GTTOf(r.Content.Arguments)
		if !ok {
			return nil
		}
		lines = append(lines, GTTWords(g.ForDesk(live.Product), live.LastPrice)...)
		if book != nil {
			lines = append(lines, "Position now: "+Holding(deskbot.Held(*book, g.Symbol))+" (a GTT may only close it)")
		}
	case deskbot.ToolCancelOrder:
		id, ok := CancelledID(r.Content.Arguments)
		if !ok || live.Orders == nil {
			return nil
		}
		i := slices.IndexFunc(live.Orders, func(po deskbot.PlacedOrder) bool { return po.ID == id })
		if i < 0 {
			return []string{"Cancels no order of this desk today: it has no order " + id + "."}
		}
		return []string{argtext.Show("Cancels " + PlacedLine(live.Orders[i]))}
	default:
		return nil
	}
	if book != nil {
		lines = append(lines, "Desk P&L: "+BookPnL(*book))
	}
	for i, l := range lines {
		lines[i] = argtext.Show(l)
	}
	return lines
}

// CancelledID is the order id a cancel_order's arguments name, when they
// are exactly {"order_id": "<id>"}.
func CancelledID(args []byte) (string, bool) {
	var a struct {
		OrderID string `json:"order_id"`
	}
	fields, err := deskbot.ArgumentFields(deskbot.ToolCancelOrder, args)
	if err != nil || len(fields) != 1 || json.Unmarshal(args, &a) != nil || a.OrderID == "" {
		return "", false
	}
	return a.OrderID, true
}

// NeedsOrders reports whether r's words need the desk's orders of the day.
func NeedsOrders(r *deskbot.Request) bool { return r.Content.ToolName == deskbot.ToolCancelOrder }

// NeedsBook reports whether r's words need the desk's book.
func NeedsBook(r *deskbot.Request) bool {
	switch r.Content.ToolName {
	case deskbot.ToolPlaceOrder, deskbot.ToolFlattenDesk, deskbot.ToolPlaceGTT:
		return true
	}
	return false
}

// GTTOf reads place_gtt's arguments for the words: a GTT as
// deskbot.ParseGTT reads it whose numbers the words render exactly.
// Anything else gets no words.
func GTTOf(args []byte) (deskbot.GTT, bool) {
	g, err := deskbot.ParseGTT(args)
	if err != nil {
		return g, false
	}
	exact := func(x float64, shown string) bool {
		v, err := strconv.ParseFloat(strings.ReplaceAll(shown, ",", ""), 64)
		return err == nil && v == x
	}
	if !exact(g.Quantity, GroupedQuantity(g.Quantity)) {
		return g, false
	}
	for _, l := range g.Legs() {
		if !exact(l.Trigger, GroupedPrice(l.Trigger)) || !exact(l.Price, GroupedPrice(l.Price)) {
			return g, false
		}
	}
	return g, true
}

// OrderOf reads place_order's arguments for the words: an order as
// deskbot.ParseOrder reads it whose numbers the words also render exactly.
// Anything else gets no words.
func OrderOf(args []byte) (deskbot.Order, bool) {
	o, err := deskbot.ParseOrder(args)
	ok := err == nil
	exact := func(x float64, shown string) bool {
		v, err := strconv.ParseFloat(strings.ReplaceAll(shown, ",", ""), 64)
		return err == nil && v == x
	}
	if !ok || !exact(o.Quantity, GroupedQuantity(o.Quantity)) || !exact(o.Price, GroupedPrice(o.Price)) || !exact(o.TriggerPrice, GroupedPrice(o.TriggerPrice)) {
		return o, false
	}
	return o, true
}
