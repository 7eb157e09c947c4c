package gate

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/argtext"
	"github.com/deskbot/deskbot/sizing"
	"github.com/deskbot/deskbot/words"
)

// PendingRequests lists the requests whose calls may still run: the orders
// a desk has put forward that are not in its book yet.
type PendingRequests interface {
	OpenRequests(ctx context.Context) ([]*deskbot.Request, error)
	RunningRequests(ctx context.Context) ([]*deskbot.Request, error)
}

// HardLimits applies the desks' hard limits (deskbot.ToolPolicy) to
// place_order, for the gate (Config.Limits): a desk's call over one is
// refused by Ask with words.LimitMessage, audited, and never becomes a
// request.
//
// Size: every limit counts the order's exposure as it was read and sized
// where the call entered (package sizing, deskbot.Exposure): by its
// contract size, a sold option at its underlying's price, one unit at the
// market's price or the order's own (its limit, or a stop's trigger) when
// that is higher, never below the market: a desk cannot make a position
// small by calling it cheap, nor by naming no price (MARKET, SL-M). An
// order that needs a price the market does not have was refused there.
//
// The position a call would leave counts, as filled, the desk's orders
// still open or running on the call's side, those resting at the broker
// and its active GTTs (a buy counts the waiting buys, a sell the waiting
// sells), so
// splitting a large order into many
// small held ones does not get past the limit. Waiting orders on the
// other side are not counted: one that reduces the position may still be
// denied or lapse, so it never makes room for one that grows it. An order
// that shrinks the position is never refused for it. The daily count is
// taken atomically in the store.
//
// Four eyes over the day: each order that passes is added, at the same
// valuation, to the desk's running total for the India day (kept in the
// store), before the call is held; the gate reads that total so that
// orders past two_approvers_above together need as many approvers as one
// order past it would (deskbot.Policies.Required). When a limit
// cannot be checked (broker or Redis down) the call is not run.
//
// Risk rules: an order of a desk a risk rule halted is refused (a turn
// under way when the halt came), and after the desk's square-off, until
// the next trading day, so is an order that would open or grow a
// position (package risk applies the rest of the rules). Both read the
// desk's state and book only for desks that have rules.
//
// A desk's orders are checked one at a time, and the lock is held
// until the call is held or has run, so two calls of one desk at once (a
// Claude Code desk may make them) cannot both pass against the same book.
type HardLimits struct {
	Policies deskbot.Policies
	Risk     map[string]deskbot.RiskRules // by desk; a desk without rules is left out
	Desks    interface {
		DeskStatus(ctx context.Context, desk string) (deskbot.DeskStatus, error)
	}
	Broker deskbot.Broker
	// Sizer sizes an approver's change of a held order (Size), as the
	// desk's orders are sized where they enter.
	Sizer    *sizing.Sizer
	Requests PendingRequests
	Counter  deskbot.OrderCounter
	Audit    deskbot.Auditor
	Now      deskbot.Now
	Log      *slog.Logger // nil: nothing logged

	mu    sync.Mutex
	desks map[string]*sync.Mutex
}

var _ Limits = (*HardLimits)(nil)

// Check applies desk's limits to call. refusal is the model's text when
// the call must not run (a limit, or limits that could not be checked);
// release must be called once the call was held or run (nil when refused).
func (l *HardLimits) Check(ctx context.Context, desk string, call deskbot.ToolCall) (release func(), refusal string) {
	if call.Name == deskbot.ToolPlaceGTT {
		return l.checkGTT(ctx, desk, call)
	}
	tp := l.Policies.For(desk, call.Name)
	rules, ruled := l.Risk[desk]
	if !deskbot.OrderTool(call.Name) || !tp.Limited() && tp.TwoApproversAbove <= 0 && !ruled {
		return func() {}, ""
	}
	lock := l.lock(desk)
	lock.Lock()
	if ruled {
		if st, err := l.Desks.DeskStatus(ctx, desk); err != nil {
			lock.Unlock()
			return nil, fmt.Sprintf("%s was not run: the desk's risk rules could not be checked (%s). Tell the user and end this turn.", call.Name, deskbot.ErrorMessage(err))
		} else if st.Halt != nil {
			lock.Unlock()
			return nil, words.HaltedOrderMessage(call.Name)
		}
	}
	why, err := l.over(ctx, desk, call, tp, rules, true)
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

// Recheck applies desk's hard limits and risk rules to call, an
// approver's change of a held order (Limits), as if the desk had asked
// for it, under the desk's lock: why is the limit it passes ("" for none).
// The order was counted when the desk put it forward, so it is not counted
// again (the day's count and notional stay). The desk's orders waiting for
// approval count as filled, the changed one among them as the desk asked
// it: a change is refused rather than let through on a smaller position.
func (l *HardLimits) Recheck(ctx context.Context, desk string, call deskbot.ToolCall) (string, error) {
	tp := l.Policies.For(desk, call.Name)
	rules, ruled := l.Risk[desk]
	if call.Name != deskbot.ToolPlaceOrder || !tp.Limited() && !ruled {
		return "", nil
	}
	lock := l.lock(desk)
	lock.Lock()
	defer lock.Unlock()
	if ruled {
		st, err := l.Desks.DeskStatus(ctx, desk)
		if err != nil {
			return "", err
		}
		if st.Halt != nil {
			return "the desk is halted by its risk rules", nil
		}
	}
	return l.over(ctx, desk, call, tp, rules, false)
}

// over says which limit the order passes ("" for none), taking a slot of
// the day's count and adding to the day's exposure only when it passes
// the others. The order is the one read and sized where the call entered
// (call.Order): nothing here parses it or reads the market again.
func (l *HardLimits) over(ctx context.Context, desk string, call deskbot.ToolCall, tp deskbot.ToolPolicy, rules deskbot.RiskRules, count bool) (string, error) {
	s := call.Order
	if s == nil {
		return "it was not read as an order whose size can be checked", nil
	}
	o := s.Order
	if call.Name == deskbot.ToolModifyOrder {
		if s.From == nil {
			return "it was not read as a modification of an order of the desk", nil
		}
		// What the order adds as it becomes: what is left of it unfilled.
		o.Quantity = math.Max(o.Quantity-s.From.Filled, 0)
	}
	squaredOff := rules.SquaredOff(l.now())
	var book deskbot.Book
	if tp.MaxPositionNotional > 0 || squaredOff {
		var err error
		if book, err = l.Broker.Book(ctx, desk); err != nil {
			return "", err
		}
	}
	if squaredOff {
		before, now, err := l.position(ctx, desk, book, call)
		if err != nil {
			return "", err
		}
		if after := before + signed(o); math.Abs(after) > math.Abs(now) || after*now < 0 {
			return words.SquareOffReason(rules.SquareOffAt), nil
		}
	}
	exposure := s.Exposure
	if math.IsInf(exposure, 0) || math.IsNaN(exposure) {
		return "its notional at the market's price is too large to check", nil
	}
	if tp.MaxOrderNotional > 0 && exposure > tp.MaxOrderNotional {
		of := ""
		if s.Price != o.Price || s.Instrument.ContractSize != 1 || s.Underlying > 0 {
			of = " " + words.SizedAt(s)
		}
		return fmt.Sprintf("its notional %s%s is above the desk's limit of %s for one order", words.Rupees(exposure), of, words.Rupees(tp.MaxOrderNotional)), nil
	}
	if tp.MaxPositionNotional > 0 {
		before, now, err := l.position(ctx, desk, book, call)
		if err != nil {
			return "", err
		}
		after := before + signed(o)
		side := deskbot.Buy
		if after < 0 {
			side = deskbot.Sell
		}
		if value := s.ExposureOf(side, after); value > tp.MaxPositionNotional && math.Abs(after) > math.Abs(now) {
			return fmt.Sprintf("it would take the desk's %s position to %s (%s %s, orders waiting for approval on the same side counted as filled), above the desk's position limit of %s",
				deskbot.Security(o.Symbol), words.Holding(after), words.Rupees(value), words.SizedAt(s), words.Rupees(tp.MaxPositionNotional)), nil
		}
	}
	if !count {
		return "", nil
	}
	day := deskbot.OrderDay(l.now())
	// A modification puts no new order forward (the order it changes was
	// counted when it was), but adds the order as it becomes to the day's
	// exposure whole: counted twice rather than let a desk grow small
	// orders past two_approvers_above one approver at a time.
	if tp.MaxOrdersPerDay > 0 && call.Name != deskbot.ToolModifyOrder {
		if _, ok, err := l.Counter.CountOrder(ctx, desk, day, tp.MaxOrdersPerDay); err != nil {
			return "", err
		} else if !ok {
			return fmt.Sprintf("the desk has already put forward %d orders today (India time), its daily limit", tp.MaxOrdersPerDay), nil
		}
	}
	if tp.TwoApproversAbove > 0 {
		if _, err := l.Counter.AddDayNotional(ctx, desk, day, exposure); err != nil {
			return "", err
		}
	}
	return "", nil
}

// Size sizes o, an approver's change of a held order, as the desk's own
// order was sized where it entered (Limits).
func (l *HardLimits) Size(ctx context.Context, o deskbot.Order) (*deskbot.SizedOrder, error) {
	return l.Sizer.Size(ctx, o)
}

// position is the desk's quantity in o's security once every order it has
// put forward on o's side and not yet filled does fill: the most the
// position can grow that way before o. The same shares on NSE and BSE are
// one security (deskbot.Security): a position split across the two
// exchanges counts whole. Its orders resting at the broker count with
// what is left of them unfilled (pending ones too: they may exist), and
// so do its active GTTs on o's side, since the market may fill them all at
// once; one placed by a request still
// running is then counted twice for a moment, never less than once.
//
// For a modify_order, before leaves out the order it changes (the call
// adds it back as it becomes), and now is the position with it as it
// stands: a modification that leaves the position no larger than now is
// never refused for it. For a place_order now is before.
func (l *HardLimits) position(ctx context.Context, desk string, book deskbot.Book, call deskbot.ToolCall) (before, now float64, err error) {
	o := call.Order.Order
	var changed string
	if call.Name == deskbot.ToolModifyOrder && call.Order.From != nil {
		changed = call.Order.From.ID
	}
	sec := deskbot.Security(o.Symbol)
	var q float64
	for _, p := range book.Positions {
		if deskbot.Security(p.Symbol) == sec {
			q += p.Quantity
		}
	}
	placed, err := l.Broker.Orders(ctx, desk)
	if err != nil {
		return 0, 0, err
	}
	var mine float64 // the changed order as it stands, left unfilled
	for _, po := range placed {
		if po.Open() && deskbot.Security(po.Order.Symbol) == sec && po.Order.Side == o.Side {
			left := po.Order
			left.Quantity = math.Max(po.Order.Quantity-po.Filled, 0)
			if changed != "" && po.ID == changed {
				mine = signed(left)
				continue
			}
			q += signed(left)
		}
	}
	// Its active GTTs on the side wait at the broker as its orders do,
	// and the broker fires them whatever else trades.
	gtts, err := l.Broker.GTTs(ctx, desk)
	if err != nil {
		return 0, 0, err
	}
	for _, g := range gtts {
		if g.State == deskbot.GTTActive && deskbot.Security(g.GTT.Symbol) == sec && g.GTT.Side == o.Side {
			q += signed(g.GTT.LegOrder(g.GTT.Stop))
		}
	}
	for _, list := range []func(context.Context) ([]*deskbot.Request, error){l.Requests.OpenRequests, l.Requests.RunningRequests} {
		rs, err := list(ctx)
		if err != nil {
			return 0, 0, err
		}
		for _, r := range rs {
			if r.Desk != desk {
				continue
			}
			if m, ok := deskbot.ModifiedOrder(r.Call()); ok && m.ID != changed && deskbot.Security(m.To.Symbol) == sec && m.To.Side == o.Side {
				// Another modification waiting: what it would add to its
				// order, as filled.
				grow := m.To
				grow.Quantity = math.Max(m.To.Quantity-m.From.Quantity, 0)
				q += signed(grow)
				continue
			}
			if r.Content.ToolName != deskbot.ToolPlaceOrder {
				continue
			}
			// The order as it was read when held; one held before orders
			// were kept read is read from its arguments.
			p, ok := heldOrder(r)
			if ok && deskbot.Security(p.Symbol) == sec && p.Side == o.Side {
				q += signed(p)
			}
		}
	}
	return q, q + mine, nil
}

// heldOrder is the order r holds, as it was read when it was held.
func heldOrder(r *deskbot.Request) (deskbot.Order, bool) {
	if r.Content.Order != nil {
		return r.Content.Order.Order, true
	}
	o, err := deskbot.ParseOrder(r.Content.Arguments)
	return o, err == nil
}

func signed(o deskbot.Order) float64 {
	if o.Side == deskbot.Sell {
		return -o.Quantity
	}
	return o.Quantity
}

func (l *HardLimits) lock(desk string) *sync.Mutex {
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

func (l *HardLimits) now() time.Time {
	if l.Now == nil {
		return time.Now()
	}
	return l.Now()
}
