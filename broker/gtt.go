package broker

// GTTs, for every broker: the order log keeps each desk's GTTs beside its
// orders (deskbot.GTTStore), recorded under the allowed call's tag before
// anything is sent, so one call places at most one GTT. A GTT only ever
// reduces its desk's position: checked against the desk's book and the
// market before it is held, again before it is sent (that check and the
// record one step for the desk, so two GTTs placed at once never together
// close more than the position), and, at the paper
// broker, once more when it fires (its order never closes more than the
// desk then holds). The paper broker fires its GTTs from its own prices
// in Sync; a fired leg's order is placed through PlaceOrder under a key of
// its own, an order of the desk's like any other, told to the desk.

import (
	"context"
	"errors"
	"math"
	"sync"

	"github.com/deskbot/deskbot"
)

// GTTTag is the tag a GTT is recorded under for the call key: the one an
// order of the same key would take, so a GTT's call is as once as an
// order's.
func GTTTag(key string) string { return Tag("gtt:" + key) }

// FiredKey is the call key of the order a GTT's leg places when it fires:
// one per GTT, so a fire read twice places one order.
func FiredKey(gttTag string) string { return "gtt-fired:" + gttTag }

// CheckGTT refuses, before anything is held or sent, a GTT desk may not
// place: not exactly what it means (deskbot.CheckGTT), a leg the broker
// would refuse (check), or one that could open or grow a position
// (deskbot.CheckGTTReduces, against the desk's book, its open orders and
// active GTTs now, and the market's last price).
func (l *OrderLog) CheckGTT(ctx context.Context, desk string, g deskbot.GTT, market deskbot.Market, check func(deskbot.Order) error) error {
	if err := deskbot.CheckGTT(g); err != nil {
		return err
	}
	for _, leg := range g.Legs() {
		if err := check(g.LegOrder(leg)); err != nil {
			return err
		}
	}
	book, err := l.Book(ctx, desk, nil)
	if err != nil {
		return err
	}
	last, ok, err := market.LastPrice(ctx, g.Symbol)
	if err != nil {
		return err
	}
	price := 0.0
	if ok {
		price = last.Value
	}
	gs, err := l.GTTs(ctx, desk)
	if err != nil {
		return err
	}
	orders, err := l.Orders(ctx, desk, deskbot.OrderDay(l.now()))
	if err != nil {
		return err
	}
	return deskbot.CheckGTTReduces(g, deskbot.Held(book, g.Symbol), deskbot.Covered(gs, g.Symbol, g.Side), deskbot.Resting(orders, g.Symbol, g.Side), price)
}

// StartCheckedGTT checks rec.GTT for its desk (CheckGTT) and records it
// (StartGTT) as one step for the desk: under the desk's lock, so two GTTs
// of a desk placed at once are each checked against the other's record
// (an active GTT covers the position from its record on, before it is
// sent) and never together close more than the position. A lock in this
// process is enough: only the leader runs the desks' calls and places. A
// GTT recorded under rec's tag already comes back with existed, unchecked.
func (l *OrderLog) StartCheckedGTT(ctx context.Context, rec deskbot.PlacedGTT, market deskbot.Market, check func(deskbot.Order) error) (deskbot.PlacedGTT, bool, error) {
	unlock := l.gttLocks.lock(rec.Desk)
	defer unlock()
	if have, err := l.FindGTT(ctx, rec.Desk, rec.Tag); err == nil {
		return have, true, nil
	}
	if err := l.CheckGTT(ctx, rec.Desk, rec.GTT, market, check); err != nil {
		return rec, false, err
	}
	return l.StartGTT(ctx, rec)
}

// StartGTT records g, a new GTT of its desk, before it is sent; a GTT
// recorded under its tag already comes back with existed. It checks
// nothing: a desk's GTT is recorded through StartCheckedGTT.
func (l *OrderLog) StartGTT(ctx context.Context, g deskbot.PlacedGTT) (deskbot.PlacedGTT, bool, error) {
	got, existed, err := l.store.StartGTT(ctx, g)
	return got, existed, storeErr(err)
}

// MoveGTT records g if the GTT is still as from was; otherwise it comes
// back as it stands, moved false.
func (l *OrderLog) MoveGTT(ctx context.Context, from, g deskbot.PlacedGTT) (deskbot.PlacedGTT, bool, error) {
	if g.Updated.IsZero() {
		g.Updated = l.now()
	}
	got, moved, err := l.store.MoveGTT(ctx, from, g)
	return got, moved, storeErr(err)
}

// GTTs is desk's GTTs, oldest first.
func (l *OrderLog) GTTs(ctx context.Context, desk string) ([]deskbot.PlacedGTT, error) {
	gs, err := l.store.DeskGTTs(ctx, desk)
	return gs, storeErr(err)
}

// ActiveGTTs is every desk's active GTTs.
func (l *OrderLog) ActiveGTTs(ctx context.Context) ([]deskbot.PlacedGTT, error) {
	gs, err := l.store.ActiveGTTs(ctx)
	return gs, storeErr(err)
}

// FindGTT is desk's GTT whose broker id, or tag, is id: another desk's is
// not found.
func (l *OrderLog) FindGTT(ctx context.Context, desk, id string) (deskbot.PlacedGTT, error) {
	gs, err := l.GTTs(ctx, desk)
	if err != nil {
		return deskbot.PlacedGTT{}, err
	}
	for _, g := range gs {
		if id != "" && (g.ID == id || g.Tag == id) {
			return g, nil
		}
	}
	return deskbot.PlacedGTT{}, deskbot.Errorf(deskbot.ENOTFOUND, "This desk has no GTT %s; get_orders lists its GTTs.", id)
}

// Tell tells po's desk of po as it stands, once per version: a fired
// GTT's order, which no call's answer tells.
func (l *OrderLog) Tell(ctx context.Context, po deskbot.PlacedOrder) error {
	return l.told(ctx, po, "")
}

// Closable is how much of g's order may still trade without opening or
// growing a position: the desk's position in g's symbol on the side g
// closes, less what its open orders on that side may still trade (they
// close it first), at most g's quantity.
func Closable(g deskbot.GTT, book deskbot.Book, orders []deskbot.PlacedOrder) float64 {
	held := deskbot.Held(book, g.Symbol)
	if g.Side == deskbot.Buy {
		held = -held
	}
	for _, po := range orders {
		if po.Open() && po.Order.Symbol == g.Symbol && po.Order.Side == g.Side {
			held -= po.Order.Quantity - po.Filled
		}
	}
	return math.Min(g.Quantity, math.Max(held, 0))
}

// deskLocks are locks by desk, in one process: the paper broker's
// serialise a desk's GTT fires with its flattens (a GTT that fires during
// a flatten reads the book the flatten left), the order log's a desk's
// GTT checks with their records (StartCheckedGTT).
type deskLocks struct {
	mu sync.Mutex
	m  map[string]*sync.Mutex
}

func (d *deskLocks) lock(desk string) func() {
	d.mu.Lock()
	if d.m == nil {
		d.m = map[string]*sync.Mutex{}
	}
	m := d.m[desk]
	if m == nil {
		m = &sync.Mutex{}
		d.m[desk] = m
	}
	d.mu.Unlock()
	m.Lock()
	return m.Unlock
}

// PlaceGTT records g for desk under the call key, after checking that it
// only reduces the desk's position; the paper broker watches it from then
// on (Sync). A key placed before returns that GTT as it stands.
func (p *Paper) PlaceGTT(ctx context.Context, desk, key string, g deskbot.GTT) (deskbot.PlacedGTT, error) {
	if err := deskbot.ValidDeskName(desk); err != nil {
		return deskbot.PlacedGTT{}, err
	}
	if key == "" {
		return deskbot.PlacedGTT{}, ErrNoKey
	}
	if g.Product == "" {
		return deskbot.PlacedGTT{}, deskbot.Errorf(deskbot.EINVALID, "a GTT needs its product: send one of MIS, NRML or CNC")
	}
	g.Symbol = deskbot.OneSpelling(g.Symbol)
	tag := GTTTag(key)
	if gs, err := p.orders.GTTs(ctx, desk); err != nil {
		return deskbot.PlacedGTT{}, err
	} else {
		for _, have := range gs {
			if have.Tag == tag {
				return have, nil
			}
		}
	}
	if err := p.admitted(ctx, desk, g.LegOrder(g.Stop)); err != nil {
		return deskbot.PlacedGTT{}, err
	}
	now := p.now()
	rec := deskbot.PlacedGTT{ID: paperID(tag), Tag: tag, Desk: desk, GTT: g, State: deskbot.GTTActive, At: now, Updated: now}
	got, _, err := p.orders.StartCheckedGTT(ctx, rec, p.market, p.Check)
	return got, err
}

// GTTs is the desk's GTTs, oldest first.
func (p *Paper) GTTs(ctx context.Context, desk string) ([]deskbot.PlacedGTT, error) {
	return p.orders.GTTs(ctx, desk)
}

// CancelGTT deletes one of the desk's active GTTs.
func (p *Paper) CancelGTT(ctx context.Context, desk, id string) (deskbot.PlacedGTT, error) {
	g, err := p.orders.FindGTT(ctx, desk, id)
	if err != nil {
		return g, err
	}
	return p.deleteGTT(ctx, g, "deleted by the desk")
}

func (p *Paper) deleteGTT(ctx context.Context, g deskbot.PlacedGTT, why string) (deskbot.PlacedGTT, error) {
	if g.State != deskbot.GTTActive {
		return g, deskbot.Errorf(deskbot.ECONFLICT, "GTT %s is %s already; only an active GTT can be deleted.", g.ID, g.State)
	}
	to := g
	to.State, to.Reason, to.Updated = deskbot.GTTDeleted, why, p.now()
	got, moved, err := p.orders.MoveGTT(ctx, g, to)
	if err != nil {
		return g, err
	}
	if !moved {
		return got, deskbot.Errorf(deskbot.ECONFLICT, "GTT %s is %s now; only an active GTT can be deleted.", got.ID, got.State)
	}
	return got, nil
}

// deleteGTTs deletes the desk's active GTTs, for a flatten.
func (p *Paper) deleteGTTs(ctx context.Context, desk, why string) ([]deskbot.PlacedGTT, error) {
	gs, err := p.orders.GTTs(ctx, desk)
	if err != nil {
		return nil, err
	}
	var out []deskbot.PlacedGTT
	for _, g := range gs {
		if g.State != deskbot.GTTActive {
			continue
		}
		d, err := p.deleteGTT(ctx, g, why)
		if deskbot.ErrorCode(err) == deskbot.ECONFLICT {
			continue // it fired meanwhile: its order is cancelled or closed below
		} else if err != nil {
			return out, err
		}
		out = append(out, d)
	}
	return out, nil
}

// fireGTTs fires every active GTT whose trigger the market reached: the
// GTT moves to triggered (a delete that raced it finds it moved), then its
// leg's LIMIT order is placed for no more than the desk still holds on
// the side it closes. A GTT whose position is gone meanwhile places
// nothing and ends rejected with why. It returns how many fired.
func (p *Paper) fireGTTs(ctx context.Context) (int, error) {
	active, err := p.orders.ActiveGTTs(ctx)
	if err != nil || len(active) == 0 {
		return 0, err
	}
	n := 0
	for _, g := range active {
		last, ok, err := p.market.LastPrice(ctx, g.GTT.Symbol)
		if err != nil {
			return n, err
		}
		if !ok {
			continue
		}
		leg, crossed := g.GTT.Crossed(last.Value)
		if !crossed {
			continue
		}
		fired, err := p.fire(ctx, g, leg)
		if err != nil {
			return n, err
		}
		if fired {
			n++
		}
	}
	return n, nil
}

func (p *Paper) fire(ctx context.Context, g deskbot.PlacedGTT, leg deskbot.GTTLeg) (bool, error) {
	unlock := p.locks.lock(g.Desk)
	defer unlock()
	book, err := p.orders.Book(ctx, g.Desk, nil)
	if err != nil {
		return false, err
	}
	orders, err := p.Orders(ctx, g.Desk)
	if err != nil {
		return false, err
	}
	o := g.GTT.LegOrder(leg)
	o.Quantity = Closable(g.GTT, book, orders)
	key := FiredKey(g.Tag)
	to := g
	to.Updated = p.now()
	if o.Quantity <= 0 {
		to.State, to.Reason = deskbot.GTTRejected, "the position it closed is gone, so its order was not placed"
	} else {
		to.State, to.Fired = deskbot.GTTTriggered, Tag(key)
	}
	if _, moved, err := p.orders.MoveGTT(ctx, g, to); err != nil || !moved {
		return false, err
	}
	if to.State != deskbot.GTTTriggered {
		return true, nil
	}
	po, err := p.PlaceOrder(ctx, g.Desk, key, o)
	if err != nil {
		if deskbot.ErrorCode(err) == deskbot.EINVALID || deskbot.ErrorCode(err) == deskbot.ECONFLICT {
			// Refused (a halt's admission): the GTT ends with why.
			rej := to
			rej.State, rej.Reason, rej.Updated = deskbot.GTTRejected, deskbot.ErrorMessage(err), p.now()
			_, _, merr := p.orders.MoveGTT(ctx, to, rej)
			return true, merr
		}
		// Not known to be placed (the store failed): the GTT goes back to
		// active, and the next Sync fires it again under the same key,
		// which places at most one order.
		_, _, merr := p.orders.MoveGTT(ctx, to, g)
		return false, errors.Join(err, merr)
	}
	return true, p.orders.Tell(ctx, po)
}
