package risk

import (
	"context"
	"math"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/words"
)

// Admission is the rules' last word on a desk's order, which every broker
// asks immediately before it makes one (broker.Admit: Admit is set on the
// broker where the service builds it): the one place on the desks' own
// path where the rules stop an order, however the order came to run.
//
// A halted desk's order is refused: a call allowed before the halt that
// runs after it (at Kite it may wait minutes for its rate-limit slot in a
// burst) must not send what the halt stopped. After a desk's square-off,
// until the next trading day, an order that would open, grow or flip a
// position is refused: the limits refuse such an order when the desk asks
// (gate.HardLimits), but one held for approval before the square-off and
// allowed after it reaches the broker without asking again, and would
// carry a position overnight.
type Admission struct {
	Desks interface {
		DeskStatus(ctx context.Context, desk string) (deskbot.DeskStatus, error)
	}
	Rules map[string]deskbot.RiskRules // by desk; a desk without rules has no square-off
	Now   deskbot.Now
}

// Admit refuses desk's order o if the desk is halted, or if after its
// square-off o would open, grow or flip a position of its book. A desk
// whose state cannot be read is refused too: the order waits for no one,
// and an order not sent can be asked for again.
func (a Admission) Admit(ctx context.Context, desk string, o deskbot.Order, book func(context.Context) (deskbot.Book, error)) error {
	st, err := a.Desks.DeskStatus(ctx, desk)
	if err != nil {
		return err
	}
	if st.Halt != nil {
		return deskbot.Errorf(deskbot.ECONFLICT, "%s", words.HaltedOrderMessage(deskbot.ToolPlaceOrder))
	}
	rules := a.Rules[desk]
	if !rules.SquaredOff(a.Now()) {
		return nil
	}
	b, err := book(ctx)
	if err != nil {
		return err
	}
	before := deskbot.PositionAfter(b, deskbot.Order{Symbol: o.Symbol})
	if after := deskbot.PositionAfter(b, o); math.Abs(after) > math.Abs(before) || after*before < 0 {
		return deskbot.Errorf(deskbot.EINVALID, "the order was not placed: %s", words.SquareOffReason(rules.SquareOffAt))
	}
	return nil
}
