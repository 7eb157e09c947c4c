package risk

import (
	"context"
	"math"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/words"
)

// Broker is the broker as the desks' tools place orders through it: after
// a desk's square-off, until the next trading day, an order that would
// open, grow or flip a position is refused when it is placed, not only
// when it is asked for. The limits refuse such an order when the desk
// asks (agent.Limits), but an order held for approval before the
// square-off and allowed after it reaches the broker without asking
// again, and would carry a position overnight.
type Broker struct {
	deskbot.Broker
	Rules map[string]deskbot.RiskRules // by desk; a desk without rules is left out
	Now   deskbot.Now
}

var _ deskbot.Broker = Broker{}

// PlaceOrder places o unless the desk's square-off refuses it.
func (b Broker) PlaceOrder(ctx context.Context, desk, key string, o deskbot.Order) (deskbot.PlacedOrder, error) {
	rules := b.Rules[desk]
	if rules.SquaredOff(b.Now()) {
		book, err := b.Broker.Book(ctx, desk)
		if err != nil {
			return deskbot.PlacedOrder{}, err
		}
		before := deskbot.PositionAfter(book, deskbot.Order{Symbol: o.Symbol})
		if after := deskbot.PositionAfter(book, o); math.Abs(after) > math.Abs(before) || after*before < 0 {
			return deskbot.PlacedOrder{}, deskbot.Errorf(deskbot.EINVALID, "the order was not placed: %s", words.SquareOffReason(rules.SquareOffAt))
		}
	}
	return b.Broker.PlaceOrder(ctx, desk, key, o)
}
