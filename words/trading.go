// The words a desk team reads about money: books, fills and flattens, for
// the desk's model (broker tools) and for people (the bot) alike.

package words

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/deskbot/deskbot"
)

// FormatBook renders a book for a model or a person: one line per open
// position, then the totals.
//
//	RELIANCE: long 6, avg 100.00, last 110.00, unrealised +₹60.00
//	Total: unrealised +₹60.00, realised +₹40.00, net +₹100.00
func FormatBook(b deskbot.Book) string {
	if len(b.Positions) == 0 {
		return "No open positions. Realised P&L to date " + Money(b.RealisedPnL) + "."
	}
	var sb strings.Builder
	var unrealised float64
	for _, p := range b.Positions {
		sb.WriteString(FormatPosition(p))
		sb.WriteByte('\n')
		unrealised += p.UnrealisedPnL()
	}
	fmt.Fprintf(&sb, "Total: unrealised %s, realised %s, net %s",
		Money(unrealised), Money(b.RealisedPnL), Money(unrealised+b.RealisedPnL))
	return sb.String()
}

// UnownedHead heads what the broker's account holds that belongs to no
// desk.
const UnownedHead = "At the broker, no desk's (trades made by hand)"

// UnownedLine renders one position the account holds beyond the desks'
// books: "NSE:INFY: long 5, last 1,500.00".
func UnownedLine(p deskbot.Position) string {
	return p.Symbol + ": " + Holding(p.Quantity) + ", last " + GroupedPrice(p.LastPrice)
}

// FormatPosition renders one position on one line.
func FormatPosition(p deskbot.Position) string {
	if p.Quantity == 0 {
		return fmt.Sprintf("%s: flat, last %s", p.Symbol, GroupedPrice(p.LastPrice))
	}
	dir := "long"
	if p.Quantity < 0 {
		dir = "short"
	}
	return fmt.Sprintf("%s: %s %s, avg %s, last %s, unrealised %s", p.Symbol, dir,
		GroupedQuantity(math.Abs(p.Quantity)), GroupedPrice(p.AvgPrice), GroupedPrice(p.LastPrice), Money(p.UnrealisedPnL()))
}

// FormatFill renders a fill as "bought 10 RELIANCE @ 100.00 (realised +₹0.00)".
func FormatFill(f deskbot.Fill) string {
	return fmt.Sprintf("%s %s %s @ %s (realised %s)", pastTense(f.Side),
		GroupedQuantity(f.Quantity), f.Symbol, GroupedPrice(f.Price), Money(f.RealisedPnL))
}

// FormatFlatten renders a flatten on one line, for /flatten and for the text
// the desk is told: the open orders it cancelled, the positions it closed
// (a paper broker's fills), the closing market orders it placed (a real
// broker's: open until their fills come, as order updates), and what it
// could not close.
func FormatFlatten(r deskbot.FlattenReport) string {
	if len(r.Closed) == 0 && len(r.Cancelled) == 0 && len(r.Placed) == 0 && len(r.Left) == 0 {
		return "Nothing to flatten: the desk had no open positions."
	}
	var parts []string
	if len(r.Cancelled) > 0 {
		parts = append(parts, "Cancelled "+count(len(r.Cancelled), "open order")+": "+orderList(r.Cancelled)+".")
	}
	if len(r.Closed) > 0 {
		parts = append(parts, fmt.Sprintf("Flattened %s: %s. Realised P&L %s.", closedCount(r), closedFills(r), Money(r.RealisedPnL)))
	}
	if len(r.Placed) > 0 {
		parts = append(parts, "Placed "+count(len(r.Placed), "closing market order")+": "+orderList(r.Placed)+"; each is open until its fills come.")
	}
	if len(r.Left) > 0 {
		parts = append(parts, "Not closed: "+strings.Join(r.Left, "; ")+".")
	}
	return strings.Join(parts, " ")
}

// count is n of a thing: "1 open order", "3 open orders".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// orderList is placed orders as PlacedLine says them, comma separated.
func orderList(pos []deskbot.PlacedOrder) string {
	parts := make([]string, len(pos))
	for i, po := range pos {
		parts[i] = PlacedLine(po)
	}
	return strings.Join(parts, ", ")
}

// closedCount is how many positions a flatten closed: "1 position", "3
// positions".
func closedCount(r deskbot.FlattenReport) string { return count(len(r.Closed), "position") }

// closedFills is a flatten's closing fills, comma separated.
func closedFills(r deskbot.FlattenReport) string {
	parts := make([]string, len(r.Closed))
	for i, f := range r.Closed {
		parts[i] = FormatFill(f)
	}
	return strings.Join(parts, ", ")
}

func pastTense(side string) string {
	switch side {
	case deskbot.Buy:
		return "bought"
	case deskbot.Sell:
		return "sold"
	}
	return side
}

// Money renders a profit or loss as SignedRupees does: the one way a
// desk's money is written, for its model and for people alike.
func Money(x float64) string { return SignedRupees(x) }

// Price renders a price with at least 2 and at most 4 decimals, so that
// sub-rupee prices and fractional averages stay readable.
func Price(x float64) string {
	r := math.Round(x*1e4) / 1e4
	if r == 0 {
		r = 0 // no "-0.00"
	}
	s := strconv.FormatFloat(r, 'f', -1, 64)
	dot := strings.IndexByte(s, '.')
	switch {
	case dot < 0:
		return s + ".00"
	case len(s)-dot-1 < 2:
		return s + "0"
	}
	return s
}

// Quantity renders a quantity without float noise: "10", "0.3".
func Quantity(x float64) string {
	return strconv.FormatFloat(math.Round(x*1e8)/1e8, 'f', -1, 64)
}

// Rupees renders an amount in rupees, to the paisa, with Indian digit
// grouping: "₹12,25,625.00", "-₹1,250.50".
func Rupees(x float64) string {
	x = deskbot.RoundPaise(x)
	sign := ""
	if x < 0 {
		sign, x = "-", -x
	}
	return sign + "₹" + groupIndian(strconv.FormatFloat(x, 'f', 2, 64))
}

// SignedRupees renders a profit or loss with its sign: "+₹40.00", "-₹12.50"
func SignedRupees(x float64) string {
	if deskbot.RoundPaise(x) >= 0 {
		return "+" + Rupees(x)
	}
	return Rupees(x)
}

// signJoin keeps a sign on the line of its ₹ (WORD JOINER, U+2060): a
// browser may break between "+" and "₹", and "+" at a line's end over
// "₹0.00" reads as two things.
var signJoin = strings.NewReplacer("+₹", "+\u2060₹", "-₹", "-\u2060₹")

// OnOneLine is text laid out for a person's screen with every signed
// amount kept whole ("+₹0.00" never wraps after its sign). It is for what
// a layout wraps (the desks page), never for a model: the joiner is
// invisible, and argtext shows invisible characters where it meets them.
func OnOneLine(text string) string { return signJoin.Replace(text) }

// GroupedPrice renders a price as Price does, its whole part grouped the
// Indian way: "24,512.50", "1,00,000.00".
func GroupedPrice(x float64) string {
	s := Price(x)
	if strings.HasPrefix(s, "-") {
		return "-" + groupIndian(s[1:])
	}
	return groupIndian(s)
}

// GroupedQuantity renders a quantity as Quantity does, grouped the Indian way.
func GroupedQuantity(x float64) string {
	s := Quantity(x)
	if strings.HasPrefix(s, "-") {
		return "-" + groupIndian(s[1:])
	}
	return groupIndian(s)
}

// groupIndian puts Indian separators in the whole part of an unsigned
// decimal: the last three digits, then pairs.
func groupIndian(s string) string {
	whole, frac, dot := strings.Cut(s, ".")
	if len(whole) > 3 {
		head, tail := whole[:len(whole)-3], whole[len(whole)-3:]
		var parts []string
		for len(head) > 2 {
			parts = append([]string{head[len(head)-2:]}, parts...)
			head = head[:len(head)-2]
		}
		whole = strings.Join(append(append([]string{head}, parts...), tail), ",")
	}
	if dot {
		return whole + "." + frac
	}
	return whole
}

// Holding renders a signed quantity as a position: "long 50", "short 50", "flat".
func Holding(qty float64) string {
	switch q := math.Round(qty*1e8) / 1e8; {
	case q > 0:
		return "long " + GroupedQuantity(q)
	case q < 0:
		return "short " + GroupedQuantity(-q)
	}
	return "flat"
}

// BookPnL renders a desk's P&L on one line: "realised +₹40.00, open +₹60.00".
func BookPnL(b deskbot.Book) string {
	var open float64
	for _, p := range b.Positions {
		open += p.UnrealisedPnL()
	}
	return "realised " + SignedRupees(b.RealisedPnL) + ", open " + SignedRupees(open)
}

// FlattenPlan renders what flattening the book would do: one closing
// market order per open position, with the position it closes and the
// price it would close at about (the last price: a market order takes the
// market's), in the book's order.
//
//	SELL 6 RELIANCE MARKET (closes long 6 at about ₹110.00, open +₹60.00)
func FlattenPlan(b deskbot.Book) []string {
	var out []string
	for _, p := range b.Positions {
		if math.Round(p.Quantity*1e8) == 0 {
			continue
		}
		out = append(out, fmt.Sprintf("%s (closes %s at about %s, open %s)", FormatOrder(closing(p)), Holding(p.Quantity), Rupees(p.LastPrice), SignedRupees(p.UnrealisedPnL())))
	}
	return out
}

// closing is the market order that closes p.
func closing(p deskbot.Position) deskbot.Order {
	o := deskbot.Order{Symbol: p.Symbol, Side: deskbot.Sell, Quantity: p.Quantity, Type: deskbot.OrderMarket}
	if p.Quantity < 0 {
		o.Side, o.Quantity = deskbot.Buy, -p.Quantity
	}
	return o
}

// Count renders a whole count with Indian digit grouping: "5,000",
// "1,00,000".
func Count(n int) string {
	if n < 0 {
		return "-" + groupIndian(strconv.Itoa(-n))
	}
	return groupIndian(strconv.Itoa(n))
}
