// Package broker owns trading for desks: the order log every broker keeps
// its desks' orders in (OrderLog: orders as their broker reports them, each
// desk's book built from its own orders' fills, every change told to the
// desk and the chat once), the paper broker (the embedded default
// deskbot.Broker) and the tools a desk's model trades through
// (get_positions, place_order, get_orders, cancel_order, flatten_desk),
// which work with any deskbot.Broker.
//
// Storage: the package keeps its books and orders through
// deskbot.OrderStore (package store: its keys, its scripts); it never
// talks to Redis itself. What it tells goes through deskbot.Teller.
//
// What runs is what was shown: place_order's arguments are checked, never
// normalised (CheckOrder), both before the gate holds a call
// (CheckArguments) and when it runs, so an approver is never asked about an
// order that would run as something other than it reads.
//
// Nothing twice: an order is placed under its call's key (deskbot.CallKey)
// and tagged with Tag(key); the log refuses a second order under one tag,
// so a call run again (a retry, a restart) answers with its first order.
//
// Orders live until their broker ends them: each is filed under the
// trading day it belongs to (the day it is placed; an after-market
// order's is the day it executes on), and a desk's orders (Orders, and so
// its position limit, cancel_order, a flatten, the risk rules' halts and
// square-off) are that day's and every one still open whatever its day.
// Only the broker ends an order: the paper broker's update loop when its
// day is over, Kite's order book at Kite.
//
// The last word before an order leaves: every broker puts each desk's
// order to its Admit (the desk's halt and square-off, risk.Admission)
// immediately before making it, after any wait for a rate-limit slot, so
// an order allowed before a halt and run after it is not placed. An order
// recorded but still waiting for its send can be withdrawn
// (OrderLog.Withdraw: a halt's cancel, cancel_order, a flatten) and is then
// never sent; once its send is marked (OrderLog.Sending) only the broker's
// orders can end it.
//
// Concurrency: every change to an order or a book is one atomic step of
// the order store: any number of goroutines or processes may trade on one
// desk, and sync its orders, at once and no update is lost, no fill booked
// twice. The same step appends each fill to the desk's capped trade
// journal (Trades), so the journal never disagrees with the book. A Book is
// one read, a consistent snapshot.
//
// Semantics of the paper broker: prices come from a market no desk
// controls (deskbot.Market; by default Walk, a seeded random walk from
// documented start prices, market.go; or Kite's last prices). A MARKET
// order fills at once, completely, at the market's price; a LIMIT order
// does when the market is at or better than its price, and otherwise
// rests open until the market comes to it (Sync, the leader's loop every
// two seconds), it is cancelled, or the India day ends (the paper broker
// takes no after-market order to the next open: an order's day is the day
// it was placed); SL and SL-M wait
// for the market to reach their trigger. Every fill is at the market's
// price, so no desk can fill at a price it chose away from the market.
// Buying adds, selling subtracts (a negative quantity is a short). Adding
// to a position moves its average price to the weighted average; reducing
// one realises (fill price - average) × closed quantity, sign-correct for
// shorts; crossing through zero closes the old side and opens the rest at
// the fill price. A Book reads each position's last price from the market
// now, so unrealised P&L moves with it; a flatten cancels the desk's open
// orders and closes at those prices. A quantity within 1e-9 of zero counts
// as flat.
//
// What desks read of the market (deskbot.MarketData, PriceStream): the
// paper broker's walk answers quotes, candles (Kite's intervals and span
// caps), instrument search, NFO option chains priced on the walk, and a
// tick per followed symbol each time the walk steps (walkdata.go,
// options.go), so every figure a desk reads is one it would trade at; a
// paper broker on another market reads that market's (Reading: Kite's,
// for BROKER=paper-kite; MarketOnly for a test's tape). Funds and holdings
// are the paper account's: its desks' books (Accounting).
//
// Money: amounts are float64. Each fill's realised P&L is rounded to paise
// (2 decimals) when it is booked, so the fills a person sees add up exactly
// to the book's total; reports round P&L to paise again to drop float noise.
// Quantities and average prices are kept unrounded.
package broker

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/deskbot/deskbot"
)

// Paper is the paper broker: orders fill at the market's price, books in
// the order log (OrderLog).
type Paper struct {
	orders *OrderLog
	now    deskbot.Now
	market deskbot.Market
	data   MarketSource              // what desks read of the market (Reading)
	desks  []string                  // the paper account's desks (Accounting)
	check  func(deskbot.Order) error // the exchange's rules, when it trades on one
	admit  Admit                     // the last check before an order is made; nil admits all
	locks  *deskLocks                // a desk's GTT fires and flattens, one at a time
}

var (
	_ deskbot.Broker = (*Paper)(nil)
	_ deskbot.Market = (*Paper)(nil)
)

// NewPaper returns a paper broker keeping its orders and books in store,
// trading at DefaultMarket's prices. now stamps the trade journal and moves the
// market.
// Its market data (quotes, candles, chains, live prices) is the same
// walk's.
func NewPaper(store deskbot.OrderStore, now deskbot.Now) *Paper {
	w := DefaultMarket(now)
	return NewPaperMarket(store, now, w).Reading(w)
}

// NewPaperMarket is NewPaper trading at market's prices, its market data
// what market alone can say (MarketOnly) unless Reading says otherwise.
func NewPaperMarket(store deskbot.OrderStore, now deskbot.Now, market deskbot.Market) *Paper {
	return &Paper{orders: NewOrderLog(store, now, nil, nil), now: now, market: market, data: MarketOnly{Market: market}, locks: &deskLocks{}}
}

// Checking returns p checking orders with check too (an exchange's rules:
// its instruments, lots, ticks and hours), before they are held and when
// they are placed.
func (p *Paper) Checking(check func(deskbot.Order) error) *Paper {
	q := *p
	q.check = check
	return &q
}

// Admitting returns p putting each order to admit (Admit) just before it
// is made. The service's paper broker is always built with it.
func (p *Paper) Admitting(admit Admit) *Paper {
	q := *p
	q.admit = admit
	return &q
}

// Telling returns p telling its desks, and the chat, through tell when a
// resting order fills or the day's end cancels it (Sync). The service's
// paper broker is always built with it.
func (p *Paper) Telling(tell deskbot.Teller, log *slog.Logger) *Paper {
	q := *p
	l := *p.orders
	l.tell = tell
	if log != nil {
		l.log = log
	}
	q.orders = &l
	return &q
}

// Check refuses an order that breaks CheckOrder's rules or the exchange's.
func (p *Paper) Check(o deskbot.Order) error {
	if err := deskbot.CheckOrder(o); err != nil {
		return err
	}
	if p.check != nil {
		return p.check(o)
	}
	// Its prices are NSE's (a bare symbol, deskbot.SymbolOf) and its own
	// NFO options'; another exchange's symbol would be an instrument it
	// cannot price.
	if _, ok := parseOption(o.Symbol); ok {
		return nil
	}
	if ex, ts := deskbot.SplitSymbol(o.Symbol); ex != "" {
		return deskbot.Errorf(deskbot.EINVALID, "%s is on %s, but this paper broker trades NSE's symbols only: send an NSE symbol, e.g. %s or NSE:%s", o.Symbol, ex, ts, ts)
	}
	return nil
}

// LastPrices is the market's prices for symbols.
func (p *Paper) LastPrices(ctx context.Context, symbols []string) (map[string]float64, error) {
	return p.market.LastPrices(ctx, symbols)
}

// LastPrice is the market's price for symbol: the price the paper broker
// fills at now.
func (p *Paper) LastPrice(ctx context.Context, symbol string) (deskbot.Price, bool, error) {
	return p.market.LastPrice(ctx, symbol)
}

// Instrument is what the paper broker's market says symbol is.
func (p *Paper) Instrument(ctx context.Context, symbol string) (deskbot.Instrument, error) {
	return p.market.Instrument(ctx, symbol)
}

// PlaceOrder places o for the call key: it fills at once, in full, at the
// market's price when the market allows (a MARKET order always; a LIMIT
// order when the market is at or better than its price; a stop-loss once
// the market reaches its trigger), else it rests open until the market
// allows (Sync) or it is cancelled, or the India day ends. A key placed
// before returns that order as it stands, and places nothing. An invalid
// order is an EINVALID error and changes nothing.
func (p *Paper) PlaceOrder(ctx context.Context, desk, key string, o deskbot.Order) (deskbot.PlacedOrder, error) {
	if err := deskbot.ValidDeskName(desk); err != nil {
		return deskbot.PlacedOrder{}, err
	}
	if key == "" {
		return deskbot.PlacedOrder{}, ErrNoKey
	}
	if err := p.Check(o); err != nil {
		return deskbot.PlacedOrder{}, err
	}
	market, ok, err := p.market.LastPrice(ctx, o.Symbol)
	if err != nil {
		return deskbot.PlacedOrder{}, err
	}
	if !ok || !(market.Value > 0) {
		// Never a fill at ₹0: a market without a price has nothing to
		// fill at.
		return deskbot.PlacedOrder{}, deskbot.Errorf(deskbot.EINVALID, "%s has no market price just now, so the order was not placed", o.Symbol)
	}
	now := p.now()
	tag := Tag(key)
	if err := p.admitted(ctx, desk, o); err != nil {
		// A call that placed its order before answers with it.
		if rec, ferr := p.orders.Order(ctx, desk, deskbot.OrderDay(now), tag); ferr == nil {
			return rec, nil
		}
		return deskbot.PlacedOrder{}, err
	}
	po := deskbot.PlacedOrder{ID: paperID(tag), Tag: tag, Desk: desk, Order: o, State: deskbot.OrderOpen, At: now, Updated: now}
	if fills(o, market.Value) {
		po.State, po.Filled, po.AvgPrice = deskbot.OrderComplete, o.Quantity, market.Value
	}
	rec, existed, err := p.orders.Start(ctx, po)
	if err != nil || existed || !rec.Open() {
		return rec, err
	}
	// A halt that landed between the check and the record read the desk's
	// orders before this one was there: checked again, a resting order of
	// a desk halted meanwhile is cancelled, not left to fill after it.
	if aerr := p.admitted(ctx, desk, o); aerr != nil {
		c, cerr := p.cancel(ctx, rec, "cancelled before it could fill: "+deskbot.ErrorMessage(aerr))
		if cerr == nil {
			return c, aerr
		}
	}
	return rec, nil
}

// admitted puts o to the paper broker's Admit, if any.
func (p *Paper) admitted(ctx context.Context, desk string, o deskbot.Order) error {
	if p.admit == nil {
		return nil
	}
	return p.admit(ctx, desk, o, func(ctx context.Context) (deskbot.Book, error) { return p.orders.Book(ctx, desk, nil) })
}

// fills reports whether o trades now with the market at market: a MARKET
// order always; a LIMIT order at or better than its price; SL and SL-M
// once the market reaches the trigger (a buy's at or above it, a sell's at
// or below), SL then only within its limit.
func fills(o deskbot.Order, market float64) bool {
	buy := o.Side == deskbot.Buy
	within := buy && market <= o.Price || !buy && market >= o.Price
	triggered := buy && market >= o.TriggerPrice || !buy && market <= o.TriggerPrice
	switch o.Kind() {
	case deskbot.OrderMarket:
		return true
	case deskbot.OrderLimit:
		return within
	case deskbot.OrderSL:
		return triggered && within
	case deskbot.OrderSLM:
		return triggered
	}
	return false
}

// Sync moves the paper broker's resting orders: those the market now
// allows fill at its price, and those of an India day gone by are
// cancelled, their desks told. It is the paper broker's update loop, run
// by the leader every few seconds; it returns how many orders moved. It
// fires the GTTs whose triggers the market reached first (fireGTTs): their
// orders are then among those it moves.
func (p *Paper) Sync(ctx context.Context) (int, error) {
	if _, err := p.fireGTTs(ctx); err != nil {
		return 0, err
	}
	open, err := p.orders.Open(ctx)
	if err != nil || len(open) == 0 {
		return 0, err
	}
	syms := make([]string, 0, len(open))
	for _, po := range open {
		syms = append(syms, po.Order.Symbol)
	}
	prices, err := p.market.LastPrices(ctx, slices.Compact(slices.Sorted(slices.Values(syms))))
	if err != nil {
		return 0, err
	}
	now := p.now()
	today := deskbot.OrderDay(now)
	n := 0
	for _, po := range open {
		from := Version(po)
		price, ok := prices[po.Order.Symbol]
		switch {
		case po.TradingDay() < today:
			po.State, po.Reason = deskbot.OrderCancelled, "the day ended with it unfilled"
		case ok && fills(po.Order, price):
			po.State, po.Filled, po.AvgPrice = deskbot.OrderComplete, po.Order.Quantity, price
		default:
			continue
		}
		po.Updated = now
		if _, moved, err := p.orders.Move(ctx, from, po, false); err != nil {
			return n, err
		} else if moved {
			n++
		}
	}
	return n, nil
}

// SyncEvery is how often the leader's update loop looks at resting orders.
const SyncEvery = 2 * time.Second

// Run is the paper broker's update loop, for the leader: Sync every
// SyncEvery until ctx ends. A failed Sync (Redis down) is logged and
// tried again at the next tick, never in a tighter loop.
func (p *Paper) Run(ctx context.Context) {
	t := time.NewTicker(SyncEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := p.Sync(ctx); err != nil && ctx.Err() == nil {
			p.orders.log.WarnContext(ctx, "paper broker: resting orders not moved this time", "err", err)
		}
	}
}

// Orders is the desk's orders of the India day, and those still open
// from an earlier one (until Sync ends them), oldest first.
func (p *Paper) Orders(ctx context.Context, desk string) ([]deskbot.PlacedOrder, error) {
	return p.orders.Orders(ctx, desk, deskbot.OrderDay(p.now()))
}

// CancelOrder cancels one of the desk's open orders, whatever day it was
// placed (id is its order id).
func (p *Paper) CancelOrder(ctx context.Context, desk, id string) (deskbot.PlacedOrder, error) {
	po, err := p.orders.Find(ctx, desk, deskbot.OrderDay(p.now()), id)
	if err != nil {
		return po, err
	}
	return p.cancel(ctx, po, "cancelled by the desk")
}

func (p *Paper) cancel(ctx context.Context, po deskbot.PlacedOrder, why string) (deskbot.PlacedOrder, error) {
	if !po.Open() {
		return po, deskbot.Errorf(deskbot.ECONFLICT, "Order %s is %s already; only an open order can be cancelled.", po.ID, po.State)
	}
	from := Version(po)
	po.State, po.Reason, po.Updated = deskbot.OrderCancelled, why, p.now()
	rec, moved, err := p.orders.Move(ctx, from, po, true)
	if err != nil {
		return po, err
	}
	if !moved {
		return rec, deskbot.Errorf(deskbot.ECONFLICT, "Order %s is %s now; only an open order can be cancelled.", rec.ID, rec.State)
	}
	return rec, nil
}

// Unowned: the paper broker's account holds only its desks' positions.
func (p *Paper) Unowned(ctx context.Context) ([]deskbot.Position, error) { return nil, nil }

// Margin: the paper broker keeps no margins.
func (p *Paper) Margin(ctx context.Context, o deskbot.Order) (deskbot.OrderMargin, bool, error) {
	return deskbot.OrderMargin{}, false, nil
}

// Flatten deletes the desk's active GTTs and cancels its open orders,
// then closes every open position at the market's price. A GTT of the
// desk's fires before or after it, never in between (deskLocks), and one
// that fires after it finds nothing to close.
func (p *Paper) Flatten(ctx context.Context, desk, key string) (deskbot.FlattenReport, error) {
	var r deskbot.FlattenReport
	unlock := p.locks.lock(desk)
	defer unlock()
	deleted, err := p.deleteGTTs(ctx, desk, "deleted by a flatten")
	r.DeletedGTTs = deleted
	if err != nil {
		return r, err
	}
	orders, err := p.Orders(ctx, desk)
	if err != nil {
		return r, err
	}
	for _, po := range orders {
		if !po.Open() {
			continue
		}
		c, err := p.cancel(ctx, po, "cancelled by a flatten")
		if deskbot.ErrorCode(err) == deskbot.ECONFLICT {
			continue // it filled meanwhile: the close below counts it
		} else if err != nil {
			return r, err
		}
		r.Cancelled = append(r.Cancelled, c)
	}
	closed, pnl, err := p.close(ctx, desk)
	r.Closed, r.RealisedPnL = closed, pnl
	return r, err
}

// close closes every open position of desk at the market's price.
func (p *Paper) close(ctx context.Context, desk string) ([]deskbot.Fill, float64, error) {
	book, err := p.orders.store.BookPositions(ctx, desk)
	if err != nil {
		return nil, 0, storeErr(err)
	}
	// The store closes at these prices; a symbol it finds that was not
	// here yet (bought meanwhile) closes at its last fill, moments old.
	syms := make([]string, len(book))
	for i, pos := range book {
		syms[i] = pos.Symbol
	}
	prices, err := p.market.LastPrices(ctx, syms)
	if err != nil {
		return nil, 0, err
	}
	closed, err := p.orders.store.FlattenBook(ctx, desk, p.now(), prices)
	if err != nil {
		return nil, 0, storeErr(err)
	}
	var pnl float64
	for i := range closed {
		pnl += closed[i].RealisedPnL
		closed[i].RealisedPnL = deskbot.RoundPaise(closed[i].RealisedPnL)
	}
	slices.SortFunc(closed, func(a, b deskbot.Fill) int { return strings.Compare(a.Symbol, b.Symbol) })
	return closed, deskbot.RoundPaise(pnl), nil
}

// Book returns the desk's open positions, sorted by symbol, and the P&L it
// has realised to date (closed positions included).
func (p *Paper) Book(ctx context.Context, desk string) (deskbot.Book, error) {
	return p.orders.Book(ctx, desk, p.market)
}

// Trades returns up to the last limit fills of the desk, oldest first. The
// journal keeps the last 1000; it is written in the same atomic step as the
// book, so it never disagrees with it.
func (p *Paper) Trades(ctx context.Context, desk string, limit int) ([]deskbot.Trade, error) {
	return p.orders.Trades(ctx, desk, limit, p.market)
}

// fmtExact renders f so that Lua's tonumber, in Redis and in the embedded
// Redis alike, reads back the same float64: shortest exact digits, with
// a decimal point before any exponent ("1.0e+22", not "1e+22").
func fmtExact(f float64) string {
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if strings.Contains(s, "e") && !strings.Contains(s, ".") {
		s = strings.Replace(s, "e", ".0e", 1)
	}
	return s
}

var errUnavailable = deskbot.Errorf(deskbot.EUNAVAILABLE, "The paper broker's store (Redis) is unavailable.")

// storeErr (nil for nil) keeps the store's error for logs while giving
// people and models the broker's words when the store is unavailable;
// every other error is the store's as it is.
func storeErr(err error) error {
	if deskbot.ErrorCode(err) == deskbot.EUNAVAILABLE {
		return fmt.Errorf("%w: %w", errUnavailable, err)
	}
	return err
}
