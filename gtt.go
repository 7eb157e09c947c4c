package deskbot

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A GTT ("good till triggered") order is a stop kept at the broker: one
// trigger (a stop-loss) or two, one cancelling the other (a stop-loss and
// a target), each leg a LIMIT order the broker places once the market
// reaches its trigger. It lives at the broker, so it protects a desk's
// position while deskbot is down. A desk's GTT may only reduce the
// position the desk holds (CheckGTTReduces): never open one, never grow
// one, never turn a long into a short.

// GTT is place_gtt's reading: both legs trade Side (sell closes a long,
// buy covers a short), Quantity units of Symbol in Product.
type GTT struct {
	Symbol   string  `json:"symbol"`
	Side     string  `json:"side"`
	Quantity float64 `json:"quantity"`
	Product  string  `json:"product,omitempty"` // "": the desk's (ForDesk)
	Stop     GTTLeg  `json:"stop_loss"`
	// Target is the second leg of a two-leg (OCO) GTT; nil for a single
	// stop-loss.
	Target *GTTLeg `json:"target,omitempty"`
}

// GTTLeg is one leg: once the market reaches Trigger, a LIMIT order at
// Price is placed.
type GTTLeg struct {
	Trigger float64 `json:"trigger"`
	Price   float64 `json:"price"`
}

// Legs are g's legs, the stop-loss first.
func (g GTT) Legs() []GTTLeg {
	if g.Target == nil {
		return []GTTLeg{g.Stop}
	}
	return []GTTLeg{g.Stop, *g.Target}
}

// LegOrder is the LIMIT order leg places when it fires.
func (g GTT) LegOrder(leg GTTLeg) Order {
	return Order{Symbol: g.Symbol, Side: g.Side, Quantity: g.Quantity, Price: leg.Price, Type: OrderLimit, Product: g.Product}
}

// ForDesk is g with the desk's default product where g names none.
func (g GTT) ForDesk(product string) GTT {
	if g.Product == "" {
		g.Product = product
	}
	return g
}

// Crossed reports which leg, if any, the market's price last has reached:
// a stop-loss that sells (a long's) fires at or below its trigger, its
// target at or above; a buying stop (a short's) the other way round.
func (g GTT) Crossed(last float64) (GTTLeg, bool) {
	if !positive(last) {
		return GTTLeg{}, false
	}
	below := func(trigger float64) bool { return last <= trigger }
	above := func(trigger float64) bool { return last >= trigger }
	stop, target := below, above
	if g.Side == Buy {
		stop, target = above, below
	}
	if stop(g.Stop.Trigger) {
		return g.Stop, true
	}
	if g.Target != nil && target(g.Target.Trigger) {
		return *g.Target, true
	}
	return GTTLeg{}, false
}

// GTTState is where a GTT is at its broker.
type GTTState string

const (
	GTTActive    GTTState = "active"    // waiting for the market to reach a trigger
	GTTTriggered GTTState = "triggered" // fired: its leg's order was placed (Fired names it)
	GTTDeleted   GTTState = "deleted"   // cancelled before it fired
	GTTExpired   GTTState = "expired"   // the broker's year, or the contract, ran out
	GTTRejected  GTTState = "rejected"  // fired, but its order was refused (Reason)
	GTTDisabled  GTTState = "disabled"  // the broker stopped it (Reason)
)

// PlacedGTT is a desk's GTT as its broker last reported it.
type PlacedGTT struct {
	ID   string `json:"id,omitempty"` // the broker's trigger id; "" until the broker answered
	Tag  string `json:"tag"`          // unique to the allowed call that placed it
	Desk string `json:"desk"`
	GTT  GTT    `json:"gtt"`
	// State is GTTActive while waiting; Fired is the tag of the order its
	// leg placed, an order of the desk's like any other (Orders).
	State  GTTState  `json:"state"`
	Fired  string    `json:"fired,omitempty"`
	Reason string    `json:"reason,omitempty"`
	At     time.Time `json:"at"`
	// Updated is the last change; a GTT placed at the broker from its
	// pending record carries the broker's id from then on.
	Updated time.Time `json:"updated"`
}

// GTTStore keeps the desks' GTTs (package store implements it). The GTT
// is recorded under its tag before it is sent, first caller wins, so one
// allowed call places at most one GTT whatever fails; every change is a
// compare-and-set on the state it moves from, so a fire and a delete that
// race cannot both win.
type GTTStore interface {
	// StartGTT records g (State GTTActive, ID "") unless a GTT of its tag
	// is recorded for its desk: then that one comes back with existed.
	StartGTT(ctx context.Context, g PlacedGTT) (got PlacedGTT, existed bool, err error)
	// MoveGTT records g if the desk's GTT of g.Tag is still as from was
	// (its State and ID); otherwise the GTT as it stands comes back with
	// moved false.
	MoveGTT(ctx context.Context, from, g PlacedGTT) (got PlacedGTT, moved bool, err error)
	// DeskGTTs is desk's GTTs, oldest first: every active one and the
	// final ones of the last days the store keeps.
	DeskGTTs(ctx context.Context, desk string) ([]PlacedGTT, error)
	// ActiveGTTs is every desk's active GTTs: what a paper broker watches
	// the market for.
	ActiveGTTs(ctx context.Context) ([]PlacedGTT, error)
}

// gttArgs are place_gtt's arguments; the first five are required.
var gttArgs = []string{"symbol", "side", "quantity", "stop_trigger", "stop_price", "target_trigger", "target_price", "product"}

// ParseGTT reads place_gtt's arguments exactly as given and checks what
// needs no market (CheckGTT): a stop-loss leg always, a target leg when
// both its trigger and price are given; its symbol in its one spelling.
func ParseGTT(args json.RawMessage) (GTT, error) {
	var g GTT
	fields, err := ArgumentFields(ToolPlaceGTT, args)
	if err != nil {
		return g, err
	}
	for k := range fields {
		if !slices.Contains(gttArgs, k) {
			return g, Errorf(EINVALID, "place_gtt has no argument %q; it takes %s", k, strings.Join(gttArgs, ", "))
		}
	}
	var missing []string
	for _, k := range gttArgs[:5] {
		if _, ok := fields[k]; !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return g, Errorf(EINVALID, "place_gtt needs symbol, side, quantity, stop_trigger and stop_price; missing: %s", strings.Join(missing, ", "))
	}
	_, tt := fields["target_trigger"]
	_, tp := fields["target_price"]
	if tt != tp {
		return g, Errorf(EINVALID, "a target needs both target_trigger and target_price; give both, or neither for a single stop-loss")
	}
	var target GTTLeg
	for _, f := range []struct {
		k    string
		dst  any
		want string
	}{
		{"symbol", &g.Symbol, `a string, e.g. "NSE:INFY"`},
		{"side", &g.Side, `"buy" or "sell"`},
		{"quantity", &g.Quantity, "a whole number, e.g. 10"},
		{"stop_trigger", &g.Stop.Trigger, "a number, e.g. 1450"},
		{"stop_price", &g.Stop.Price, "a number, e.g. 1445"},
		{"target_trigger", &target.Trigger, "a number, e.g. 1600"},
		{"target_price", &target.Price, "a number, e.g. 1595"},
		{"product", &g.Product, `one of "MIS", "NRML", "CNC"`},
	} {
		if _, ok := fields[f.k]; !ok {
			continue
		}
		if err := field(fields, f.k, f.dst, f.want); err != nil {
			return g, err
		}
		if n := significantDigits(fields[f.k]); f.k != "symbol" && f.k != "side" && f.k != "product" && n > maxDigits {
			return g, Errorf(EINVALID, "%s has %d significant digits; at most %d are kept exactly, so send it rounded", f.k, n, maxDigits)
		}
	}
	if tt {
		g.Target = &target
	}
	if positive(g.Quantity) && g.Quantity != math.Trunc(g.Quantity) {
		return g, Errorf(EINVALID, "quantity must be a whole number of units, not %v", g.Quantity)
	}
	if err := CheckGTT(g); err != nil {
		return g, err
	}
	g.Symbol = OneSpelling(g.Symbol)
	return g, nil
}

// CheckGTT refuses a GTT that is not exactly what it means, before any
// market or book is read: each leg's order must pass CheckOrder (symbol,
// side, quantity, a limit above ₹0), each trigger above ₹0, and the stop
// and the target on opposite sides: a selling GTT (a long's) stops below
// its target, a buying one (a short's) above it.
func CheckGTT(g GTT) error {
	for _, leg := range g.Legs() {
		if err := CheckOrder(g.LegOrder(leg)); err != nil {
			return err
		}
		if !positive(leg.Trigger) {
			return Errorf(EINVALID, "a GTT's triggers must be prices greater than 0, not %v", leg.Trigger)
		}
	}
	if g.Target == nil {
		return nil
	}
	if g.Side == Sell && g.Target.Trigger <= g.Stop.Trigger {
		return Errorf(EINVALID, "a selling GTT closes a long: its target_trigger (%v) must be above its stop_trigger (%v)", g.Target.Trigger, g.Stop.Trigger)
	}
	if g.Side == Buy && g.Target.Trigger >= g.Stop.Trigger {
		return Errorf(EINVALID, "a buying GTT covers a short: its target_trigger (%v) must be below its stop_trigger (%v)", g.Target.Trigger, g.Stop.Trigger)
	}
	return nil
}

// CheckGTTReduces refuses a GTT that could open or grow a position: the
// desk must hold held units of its symbol (its book; negative is short),
// and every leg must close at most that: a sell of a long, a buy of a
// short, Quantity no more than the position less covered, what the desk's
// active GTTs on the symbol already close (each may fire), and less
// resting, what its open orders on the GTT's side may still trade (each
// may fill, and the broker fires a GTT whatever rests). last is the
// market's price (0: none): the stop must be on the losing side of it and
// the target on the winning side, or the GTT would fire at once.
func CheckGTTReduces(g GTT, held, covered, resting, last float64) error {
	held = math.Round(held*1e8) / 1e8
	switch {
	case held == 0:
		return Errorf(EINVALID, "this desk holds no %s: a GTT may only close a position the desk holds", g.Symbol)
	case held > 0 && g.Side != Sell:
		return Errorf(EINVALID, "this desk is long %s %s: a GTT that closes it sells; a buy would grow the position", strconv.FormatFloat(held, 'f', -1, 64), g.Symbol)
	case held < 0 && g.Side != Buy:
		return Errorf(EINVALID, "this desk is short %s %s: a GTT that covers it buys; a sell would grow the position", strconv.FormatFloat(-held, 'f', -1, 64), g.Symbol)
	case g.Quantity > math.Abs(held):
		return Errorf(EINVALID, "quantity %s is more than the %s %s this desk holds: a GTT may only close the position, never open the other side", strconv.FormatFloat(g.Quantity, 'f', -1, 64), strconv.FormatFloat(math.Abs(held), 'f', -1, 64), g.Symbol)
	case g.Quantity+covered > math.Abs(held)+1e-9:
		return Errorf(EINVALID, "quantity %s with the %s this desk's active GTTs on %s already close is more than the %s it holds: each GTT may fire, so together they may only close the position; delete one with cancel_gtt first", strconv.FormatFloat(g.Quantity, 'f', -1, 64), strconv.FormatFloat(covered, 'f', -1, 64), g.Symbol, strconv.FormatFloat(math.Abs(held), 'f', -1, 64))
	}
	if g.Quantity+covered+resting > math.Abs(held)+1e-9 {
		return Errorf(EINVALID, "quantity %s with the %s this desk's open orders on %s may still %s is more than the %s it holds that its active GTTs do not close already: each order may fill and the GTT still fire, so together they may only close the position; place a smaller GTT, or cancel an order with cancel_order first", strconv.FormatFloat(g.Quantity, 'f', -1, 64), strconv.FormatFloat(resting, 'f', -1, 64), g.Symbol, g.Side, strconv.FormatFloat(math.Abs(held)-covered, 'f', -1, 64))
	}
	if !positive(last) {
		return Errorf(EINVALID, "no last price for %s just now, so the triggers cannot be checked against the market; try again shortly", g.Symbol)
	}
	if _, fires := g.Crossed(last); fires {
		return Errorf(EINVALID, "a trigger is already reached at the last price %v: the stop must be beyond the market on the losing side and the target on the winning side", last)
	}
	return nil
}

// GTTShownState is the part of a desk's book a held place_gtt's shown
// effect depends on: the quantity held in its symbol. An allow runs it only
// while that is what the approver was shown.
func GTTShownState(g GTT, b Book) string {
	return "holding " + g.Symbol + " " + strconv.FormatFloat(Held(b, g.Symbol), 'f', -1, 64)
}

// Covered is what gs, a desk's GTTs, close of symbol on side while
// active: the quantity their legs may still sell (or buy).
func Covered(gs []PlacedGTT, symbol, side string) float64 {
	q := 0.0
	for _, g := range gs {
		if g.State == GTTActive && g.GTT.Symbol == symbol && g.GTT.Side == side {
			q += g.GTT.Quantity
		}
	}
	return q
}

// Resting is what orders, a desk's, may still trade of symbol on side
// while open: the unfilled part of each.
func Resting(orders []PlacedOrder, symbol, side string) float64 {
	q := 0.0
	for _, po := range orders {
		if po.Open() && OneSpelling(po.Order.Symbol) == symbol && po.Order.Side == side {
			q += math.Max(po.Order.Quantity-po.Filled, 0)
		}
	}
	return q
}

// Held is the desk's net quantity of symbol in b.
func Held(b Book, symbol string) float64 {
	q := 0.0
	for _, p := range b.Positions {
		if p.Symbol == symbol {
			q += p.Quantity
		}
	}
	return math.Round(q*1e8) / 1e8
}
