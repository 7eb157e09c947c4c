package words

import (
	"strings"

	"github.com/deskbot/deskbot"
)

// FormatChange is a modification in trading words: the order as it stands
// with each thing that changes shown as it is → as it becomes, e.g.
//
//	BUY 10 INFY LIMIT 1,500.00 → 1,490.00 · MIS
//	BUY 10 → 20 INFY LIMIT 1,500.00 · MIS
//	SELL 50 NFO:NIFTY26DECFUT SL 24,000.00 trigger 24,010.00 → SL-M trigger 24,010.00 · NRML
//
// A change of order type shows the whole of how it trades, before and after.
func FormatChange(from, to deskbot.Order) string {
	arrow := func(a, b string) string {
		if a == b {
			return a
		}
		return a + " → " + b
	}
	s := strings.ToUpper(from.Side) + " " + arrow(GroupedQuantity(from.Quantity), GroupedQuantity(to.Quantity)) + " " + from.Symbol + " "
	if from.Kind() != to.Kind() {
		s += howItTrades(from) + " → " + howItTrades(to)
	} else {
		s += from.Kind()
		if k := from.Kind(); k == deskbot.OrderLimit || k == deskbot.OrderSL {
			s += " " + arrow(GroupedPrice(from.Price), GroupedPrice(to.Price))
		}
		if k := from.Kind(); k == deskbot.OrderSL || k == deskbot.OrderSLM {
			s += " trigger " + arrow(GroupedPrice(from.TriggerPrice), GroupedPrice(to.TriggerPrice))
		}
	}
	if from.Product != "" {
		s += " · " + from.Product
	}
	if from.Variety == deskbot.VarietyAMO {
		s += " · AMO"
	}
	return s
}

// howItTrades is an order's type with its price and trigger.
func howItTrades(o deskbot.Order) string {
	s := o.Kind()
	if k := o.Kind(); k == deskbot.OrderLimit || k == deskbot.OrderSL {
		s += " " + GroupedPrice(o.Price)
	}
	if k := o.Kind(); k == deskbot.OrderSL || k == deskbot.OrderSLM {
		s += " trigger " + GroupedPrice(o.TriggerPrice)
	}
	return s
}

// ModifyLines are a held modify_order's trading words: the change, and
// what the order is counted at as it becomes (its exposure), or nothing
// when the call was not read as a modification of the desk's order.
func ModifyLines(call deskbot.ToolCall) []string {
	m, ok := deskbot.ModifiedOrder(call)
	if !ok {
		return nil
	}
	lines := []string{"Modifies order " + m.ID + ": " + FormatChange(m.From, m.To)}
	if m.Filled > 0 {
		lines = append(lines, "Filled so far: "+GroupedQuantity(m.Filled)+"; if more fills before it runs, it does not run.")
	}
	lines = append(lines, "As it becomes: "+ExposureLine(call.Order))
	return lines
}
