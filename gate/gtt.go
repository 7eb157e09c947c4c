package gate

import (
	"context"
	"fmt"
	"math"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/argtext"
	"github.com/deskbot/deskbot/words"
)

// checkGTT refuses, before anyone is asked, a place_gtt of desk that could
// open or grow a position (deskbot.CheckGTTReduces against the desk's
// book, open orders and GTTs, and the market now), or of a desk its risk
// rules halted: audited, never a request. The desk's place_gtt calls
// waiting for approval or running count as GTTs already placed (each may
// be allowed, and each places one), so two held side by side can never
// together close more than the position; the desk's lock is held until
// the call is held or has run (release), so two of its calls at once
// cannot both pass against the same requests. The broker checks again
// when it places the GTT, and the allow runs only while the desk holds
// what the approver was shown (deskbot.GTTShownState).
func (l *HardLimits) checkGTT(ctx context.Context, desk string, call deskbot.ToolCall) (release func(), refusal string) {
	lock := l.lock(desk)
	lock.Lock()
	why, err := l.gttRefusal(ctx, desk, call)
	if err == nil && why == "" {
		return lock.Unlock, ""
	}
	lock.Unlock()
	if err != nil {
		return nil, fmt.Sprintf("%s was not run: whether it only closes the desk's position could not be checked (%s). Tell the user and end this turn.", call.Name, deskbot.ErrorMessage(err))
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
	// The calls waiting or running are read before the broker's GTTs: one
	// that places its GTT and ends between the two reads is then counted
	// in both (for a moment, too much), never in neither.
	waiting, err := l.waitingGTTs(ctx, desk, g)
	if err != nil {
		return "", err
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
	held, covered, resting := deskbot.Held(book, g.Symbol), deskbot.Covered(gs, g.Symbol, g.Side), deskbot.Resting(orders, g.Symbol, g.Side)
	if err := deskbot.CheckGTTReduces(g, held, covered, resting, price); err != nil {
		return deskbot.ErrorMessage(err), nil
	}
	if waiting > 0 && deskbot.CheckGTTReduces(g, held, covered+waiting, resting, price) != nil {
		return fmt.Sprintf("quantity %s with the %s this desk's other place_gtt calls on %s, waiting for approval or running, would close is more than the %s it holds that its active GTTs and open orders do not close already: each may be allowed, and each GTT may fire, so together they may only close the position; wait until they are decided, or place a smaller GTT",
			words.Quantity(g.Quantity), words.Quantity(waiting), g.Symbol, words.Quantity(math.Max(math.Abs(held)-covered-resting, 0))), nil
	}
	return "", nil
}

// waitingGTTs is what desk's place_gtt calls waiting for approval or
// running would close of g's symbol on g's side: as much as placed GTTs
// do, since each allowed places one. One running may be placed already
// and then counts twice for a moment, never less than once.
func (l *HardLimits) waitingGTTs(ctx context.Context, desk string, g deskbot.GTT) (float64, error) {
	q := 0.0
	for _, list := range []func(context.Context) ([]*deskbot.Request, error){l.Requests.OpenRequests, l.Requests.RunningRequests} {
		rs, err := list(ctx)
		if err != nil {
			return 0, err
		}
		for _, r := range rs {
			if r.Desk != desk || r.Content.ToolName != deskbot.ToolPlaceGTT {
				continue
			}
			w, err := deskbot.ParseGTT(r.Call().Arguments)
			if err == nil && w.Symbol == g.Symbol && w.Side == g.Side {
				q += w.Quantity
			}
		}
	}
	return q, nil
}
