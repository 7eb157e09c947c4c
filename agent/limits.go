package agent

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/argtext"
	"github.com/deskbot/deskbot/words"
)

// PendingRequests lists the requests whose calls may still run: the orders
// a desk has put forward that are not in its book yet.
type PendingRequests interface {
	OpenRequests(ctx context.Context) ([]*deskbot.Request, error)
	RunningRequests(ctx context.Context) ([]*deskbot.Request, error)
}

// Limits applies the desks' hard limits (deskbot.ToolPolicy) to place_order
// before the gate sees the call: a call over one is refused with
// words.LimitMessage, audited, and never becomes a request. The position
// a call would leave counts every order of the desk still open or running
// as filled, so splitting a large order into many small held ones does not
// get past the limit; the daily count is taken atomically in the store.
// An order that shrinks the desk's position is never refused for its
// position. When a limit cannot be checked (broker or Redis down) the call
// is not run.
//
// A desk's orders are checked one at a time, and the lock is held
// until the call is held or has run, so two calls of one desk at once (a
// Claude Code desk may make them) cannot both pass against the same book.
type Limits struct {
	Policies deskbot.Policies
	Broker   deskbot.Broker
	Requests PendingRequests
	Counter  deskbot.OrderCounter
	Audit    deskbot.Auditor
	Now      deskbot.Now
	Log      *slog.Logger // nil: nothing logged

	mu    sync.Mutex
	desks map[string]*sync.Mutex
}

// Check applies desk's limits to call. refusal is the model's text when
// the call must not run (a limit, or limits that could not be checked);
// release must be called once the call was held or run (nil when refused).
func (l *Limits) Check(ctx context.Context, desk string, call deskbot.ToolCall) (release func(), refusal string) {
	tp := l.Policies.For(desk, call.Name)
	if call.Name != deskbot.ToolPlaceOrder || !tp.Limited() {
		return func() {}, ""
	}
	lock := l.lock(desk)
	lock.Lock()
	why, err := l.over(ctx, desk, call, tp)
	if err != nil {
		lock.Unlock()
		return nil, fmt.Sprintf("%s was not run: the desk's hard limits could not be checked (%s). Tell the user and end this turn.", call.Name, deskbot.ErrorMessage(err))
	}
	if why == "" {
		return lock.Unlock, ""
	}
	lock.Unlock()
	now := l.now()
	entry := deskbot.AuditEntry{Action: "refuse", Desk: desk, Tool: call.Name, By: "desk " + desk, At: now,
		Detail: why + "; " + argtext.Canonical(call.Arguments)}
	if err := l.Audit.Audit(ctx, entry); err != nil && l.Log != nil {
		// Refused all the same: a limit never waits for the audit trail.
		l.Log.WarnContext(ctx, "could not audit a refusal by a hard limit", "desk", desk, "err", err)
	}
	return nil, words.LimitMessage(call.Name, why)
}

// over says which limit the order passes ("" for none), taking a slot of
// the day's count only when it passes the others.
func (l *Limits) over(ctx context.Context, desk string, call deskbot.ToolCall, tp deskbot.ToolPolicy) (string, error) {
	o, err := deskbot.ParseOrder(call.Arguments)
	if err != nil {
		return "its arguments are not an order whose size can be checked", nil
	}
	notional := o.Quantity * o.Price
	if tp.MaxOrderNotional > 0 && notional > tp.MaxOrderNotional {
		return fmt.Sprintf("its notional %s is above the desk's limit of %s for one order", words.Rupees(notional), words.Rupees(tp.MaxOrderNotional)), nil
	}
	if tp.MaxPositionNotional > 0 {
		before, err := l.position(ctx, desk, o.Symbol)
		if err != nil {
			return "", err
		}
		after := before + signed(o)
		if value := math.Abs(after) * o.Price; value > tp.MaxPositionNotional && math.Abs(after) > math.Abs(before) {
			return fmt.Sprintf("it would take the desk's %s position to %s (%s at this price, orders waiting for approval counted as filled), above the desk's position limit of %s",
				o.Symbol, words.Holding(after), words.Rupees(value), words.Rupees(tp.MaxPositionNotional)), nil
		}
	}
	if tp.MaxOrdersPerDay > 0 {
		day := l.now().In(deskbot.IST).Format("2006-01-02")
		if _, ok, err := l.Counter.CountOrder(ctx, desk, day, tp.MaxOrdersPerDay); err != nil {
			return "", err
		} else if !ok {
			return fmt.Sprintf("the desk has already put forward %d orders today (India time), its daily limit", tp.MaxOrdersPerDay), nil
		}
	}
	return "", nil
}

// position is the desk's quantity in symbol once every order it has put
// forward and not yet filled does fill.
func (l *Limits) position(ctx context.Context, desk, symbol string) (float64, error) {
	book, err := l.Broker.Book(ctx, desk)
	if err != nil {
		return 0, err
	}
	q := deskbot.PositionAfter(book, deskbot.Order{Symbol: symbol})
	for _, list := range []func(context.Context) ([]*deskbot.Request, error){l.Requests.OpenRequests, l.Requests.RunningRequests} {
		rs, err := list(ctx)
		if err != nil {
			return 0, err
		}
		for _, r := range rs {
			if r.Desk != desk || r.Content.ToolName != deskbot.ToolPlaceOrder {
				continue
			}
			if p, err := deskbot.ParseOrder(r.Content.Arguments); err == nil && p.Symbol == symbol {
				q += signed(p)
			}
		}
	}
	return q, nil
}

func signed(o deskbot.Order) float64 {
	if o.Side == deskbot.Sell {
		return -o.Quantity
	}
	return o.Quantity
}

func (l *Limits) lock(desk string) *sync.Mutex {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.desks == nil {
		l.desks = map[string]*sync.Mutex{}
	}
	m, ok := l.desks[desk]
	if !ok {
		m = &sync.Mutex{}
		l.desks[desk] = m
	}
	return m
}

func (l *Limits) now() time.Time {
	if l.Now == nil {
		return time.Now()
	}
	return l.Now()
}
