package gate

import (
	"context"
	"fmt"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/argtext"
	"github.com/deskbot/deskbot/words"
)

// checkGTT refuses, before anyone is asked, a place_gtt of desk that could
// open or grow a position (deskbot.CheckGTTReduces against the desk's
// book, open orders and GTTs, and the market now), or of a desk its risk rules halted: audited, never
// a request. The broker checks again when it places the GTT, and the
// allow runs only while the desk holds what the approver was shown
// (deskbot.GTTShownState).
func (l *HardLimits) checkGTT(ctx context.Context, desk string, call deskbot.ToolCall) (release func(), refusal string) {
	lock := l.lock(desk)
	lock.Lock()
	why, err := l.gttRefusal(ctx, desk, call)
	lock.Unlock()
	if err != nil {
		return nil, fmt.Sprintf("%s was not run: whether it only closes the desk's position could not be checked (%s). Tell the user and end this turn.", call.Name, deskbot.ErrorMessage(err))
	}
	if why == "" {
		return func() {}, ""
	}
	entry := deskbot.AuditEntry{Action: "refuse", Desk: desk, Tool: call.Name, By: "desk " + desk, At: l.now(),
		Detail: why + "; " + argtext.Canonical(call.Arguments)}
	if err := l.Audit.Audit(ctx, entry); err != nil && l.Log != nil {
		l.Log.WarnContext(ctx, "could not audit a refusal of a GTT", "desk", desk, "err", err)
	}
	return nil, words.LimitMessage(call.Name, why)
}

func (l *HardLimits) gttRefusal(ctx context.Context, desk string, call deskbot.ToolCall) (string, error) {
	g, err := deskbot.ParseGTT(call.Arguments)
	if err != nil {
		return deskbot.ErrorMessage(err), nil
	}
	if _, ruled := l.Risk[desk]; ruled {
		st, err := l.Desks.DeskStatus(ctx, desk)
		if err != nil {
			return "", err
		}
		if st.Halt != nil {
			return "the desk is halted by its risk rules", nil
		}
	}
	if l.Broker == nil {
		return "", deskbot.Errorf(deskbot.EUNAVAILABLE, "no broker")
	}
	book, err := l.Broker.Book(ctx, desk)
	if err != nil {
		return "", err
	}
	last, ok, err := l.Broker.LastPrice(ctx, g.Symbol)
	if err != nil {
		return "", err
	}
	price := 0.0
	if ok {
		price = last.Value
	}
	gs, err := l.Broker.GTTs(ctx, desk)
	if err != nil {
		return "", err
	}
	orders, err := l.Broker.Orders(ctx, desk)
	if err != nil {
		return "", err
	}
	if err := deskbot.CheckGTTReduces(g, deskbot.Held(book, g.Symbol), deskbot.Covered(gs, g.Symbol, g.Side), deskbot.Resting(orders, g.Symbol, g.Side), price); err != nil {
		return deskbot.ErrorMessage(err), nil
	}
	return "", nil
}
