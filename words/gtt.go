package words

import (
	"math"
	"strings"
	"time"

	"github.com/deskbot/deskbot"
)

// The words of a GTT: each leg as a trader says it, with its trigger's
// distance from the last price, for the approver of a held place_gtt, and
// one line per GTT for get_orders.

// GTTLegWords renders one leg: what it is ("stop-loss" or "target"), its
// order, its trigger with the distance from last (0: no last price, none
// shown) and its limit:
//
//	stop-loss SELL 10 INFY trigger 1,450.00 (−3.2% from 1,498.00) limit 1,445.00
func GTTLegWords(g deskbot.GTT, leg deskbot.GTTLeg, target bool, last float64) string {
	what := "stop-loss"
	if target {
		what = "target"
	}
	s := what + " " + strings.ToUpper(g.Side) + " " + GroupedQuantity(g.Quantity) + " " + g.Symbol + " trigger " + GroupedPrice(leg.Trigger)
	if last > 0 {
		s += " (" + Distance(leg.Trigger, last) + " from " + GroupedPrice(last) + ")"
	}
	return s + " limit " + GroupedPrice(leg.Price)
}

// Distance is how far price is from last, in percent with one decimal and
// a true minus sign: "−3.2%", "+6.8%".
func Distance(price, last float64) string {
	pct := math.Round((price-last)/last*1000) / 10
	switch {
	case pct < 0:
		return "−" + Quantity(-pct) + "%"
	case pct > 0:
		return "+" + Quantity(pct) + "%"
	}
	return "0%"
}

// GTTWords is a GTT in trading words, its stop-loss first, then its target
// if it has one, then its product: what an approver reads.
func GTTWords(g deskbot.GTT, last float64) []string {
	lines := []string{"GTT " + GTTLegWords(g, g.Stop, false, last)}
	if g.Target != nil {
		lines = append(lines, "GTT "+GTTLegWords(g, *g.Target, true, last)+" (one cancels the other)")
	}
	if g.Product != "" {
		lines = append(lines, "Product "+g.Product+"; kept at the broker until it fires, is deleted or expires")
	}
	return lines
}

// GTTLine renders a desk's GTT on one line, for get_orders and answers:
//
//	GTT 123 · stop-loss SELL 10 INFY trigger 1,450.00 limit 1,445.00 · target … · CNC · active
func GTTLine(g deskbot.PlacedGTT) string {
	id := "GTT " + g.ID
	if g.ID == "" {
		id = "GTT (no broker id yet)"
	}
	s := id + " · " + GTTLegWords(g.GTT, g.GTT.Stop, false, 0)
	if g.GTT.Target != nil {
		s += " · " + GTTLegWords(g.GTT, *g.GTT.Target, true, 0)
	}
	if g.GTT.Product != "" {
		s += " · " + g.GTT.Product
	}
	s += " · " + string(g.State)
	if g.Fired != "" {
		s += " (its order is tagged " + g.Fired + ")"
	}
	if r := strings.Join(strings.Fields(g.Reason), " "); r != "" {
		s += ": " + r
	}
	return s
}

// GTTKept tells the group that g, a desk's GTT that now closes more than
// the have it holds, could not be deleted because Kite refuses order
// requests from the server's address: it stays at Kite, and may fire into
// the other side, until it is deleted. Deletion is asked again every
// every.
func GTTKept(g deskbot.PlacedGTT, have float64, every time.Duration) string {
	return "⚠️ Desk " + g.Desk + "'s " + GTTLine(g) + " closes more than the " + Quantity(have) + " " + g.GTT.Symbol +
		" the desk now holds, and could not be deleted: Kite refuses order requests from this server's address (not in the Kite app's IP whitelist). " +
		"It stays at Kite and, if it fires, may open the other side. deskbot asks Kite to delete it again every " + Duration(every) +
		"; delete it by hand at Kite (GTT list) or register this server's address in the Kite developer console's IP whitelist."
}
