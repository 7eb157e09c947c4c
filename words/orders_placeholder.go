package words

import (
	"fmt"

	"github.com/deskbot/deskbot"
)

// OrderUpdate is what a desk is told when its order changes state.
func OrderUpdate(po deskbot.PlacedOrder) string {
	return fmt.Sprintf("Order %s (%s): %s, filled %s @ %s. %s", po.ID, FormatOrder(po.Order), po.State, Quantity(po.Filled), Price(po.AvgPrice), po.Reason)
}

// OrderEvent is what the chat is told of a desk's fill or rejection.
func OrderEvent(po deskbot.PlacedOrder) string { return po.Desk + ": " + OrderUpdate(po) }

// PlacedLine is one order on one line.
func PlacedLine(po deskbot.PlacedOrder) string { return OrderUpdate(po) }
