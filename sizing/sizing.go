// Package sizing owns the one reading of an order: where a desk's call
// enters (the executor), place_order's arguments are parsed once
// (deskbot.ParseOrder), checked once by the broker (instrument, lot, tick,
// hours), and sized once against the market: the instrument it trades
// (contract size, type, strike, underlying), the market's last price read
// once, and its exposure (deskbot.Exposure). The call then carries the
// result (deskbot.ToolCall.Order) to the hard limits, the gate's four eyes
// and grants, the store and the chat; none of them parses the arguments or
// reads the market again for it.
//
// What is refused here, before anyone is asked, with words for the model:
// an instrument whose contract size is not known (never counted as 1); an
// order that needs the market's price (every order but a LIMIT buy, which
// its own price bounds) when the market has no usable one (a last price of
// 0 or less, or one older than PRICE_MAX_AGE while the market is open); a
// sold option whose underlying has no usable price; and a stop whose
// trigger the market has already crossed (Kite refuses those).
//
// Concurrency: a Sizer holds no state of its own and is safe for
// concurrent use; what it reads is the market's and the broker's.
package sizing

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/words"
)

// Sizer reads orders once.
type Sizer struct {
	// Market is what orders are sized against: the broker's
	// (deskbot.Broker is one).
	Market deskbot.Market
	// Check refuses an order the broker would (deskbot.Broker.Check:
	// instrument, lot, tick, hours); nil: deskbot.CheckOrder's rules only.
	Check func(deskbot.Order) error
	// MaxAge is PRICE_MAX_AGE: how old a last price may be while the market
	// is open; 0 takes deskbot.DefaultPriceMaxAge.
	MaxAge time.Duration
	// Open reports whether the market is open at t (the calendar's):
	// outside it the last price is the close, however old. nil: always
	// open, so every price must be fresh.
	Open func(t time.Time) bool
	Now  deskbot.Now // nil: time.Now
	// Orders are the desks' orders as the broker keeps them
	// (deskbot.Broker is one): a modify_order is read from the desk's own
	// order it changes. nil: every modify_order is refused.
	Orders interface {
		Orders(ctx context.Context, desk string) ([]deskbot.PlacedOrder, error)
	}
}

// Read is desk's call as read once: for place_order, with its order
// parsed, checked and sized (deskbot.ToolCall.Order); for modify_order,
// the desk's own open order it changes (SizedOrder.From) and the order it
// becomes, checked and sized as a new order would be; any other call as it
// is. An
// EINVALID error's message is what the model is told: the order was not
// placed and nobody was asked. Any other error means the order could not
// be checked (the broker or the market did not answer).
func (s *Sizer) Read(ctx context.Context, desk string, call deskbot.ToolCall) (deskbot.ToolCall, error) {
	var from *deskbot.PlacedOrder
	var o deskbot.Order
	switch call.Name {
	case deskbot.ToolPlaceOrder:
		var err error
		if o, err = deskbot.ParseOrder(call.Arguments); err != nil {
			return call, err
		}
	case deskbot.ToolModifyOrder:
		po, to, err := s.modified(ctx, desk, call)
		if err != nil {
			return call, err
		}
		from, o = &po, to
	default:
		return call, nil
	}
	check := s.Check
	if check == nil {
		check = deskbot.CheckOrder
	}
	if err := check(o); err != nil {
		return call, err
	}
	sized, err := s.Size(ctx, o)
	if err != nil {
		return call, err
	}
	sized.From = from
	call.Order = sized
	return call, nil
}

// modified reads a modify_order of desk: the desk's own open order it
// names (found among the desk's orders only: another desk's, one placed by
// hand or a made-up id is not there) and the order it becomes, which the
// caller checks and sizes as a new order. Every refusal is EINVALID:
// nobody is asked, nothing changes.
func (s *Sizer) modified(ctx context.Context, desk string, call deskbot.ToolCall) (deskbot.PlacedOrder, deskbot.Order, error) {
	c, err := deskbot.ParseOrderChanges(call.Arguments)
	if err != nil {
		return deskbot.PlacedOrder{}, deskbot.Order{}, err
	}
	if s.Orders == nil {
		return deskbot.PlacedOrder{}, deskbot.Order{}, deskbot.Errorf(deskbot.EINVALID, "%s was not run: this service cannot read the desk's orders. Nobody was asked.", deskbot.ToolModifyOrder)
	}
	orders, err := s.Orders.Orders(ctx, desk)
	if err != nil {
		return deskbot.PlacedOrder{}, deskbot.Order{}, err
	}
	i := slices.IndexFunc(orders, func(po deskbot.PlacedOrder) bool { return po.ID == c.ID && po.Desk == desk })
	if i < 0 {
		return deskbot.PlacedOrder{}, deskbot.Order{}, deskbot.Errorf(deskbot.EINVALID, "%s was not run: this desk has no order %s today (get_orders lists its orders). Nobody was asked.", deskbot.ToolModifyOrder, strconv.QuoteToASCII(c.ID))
	}
	po := orders[i]
	to, err := c.Apply(po)
	if err != nil {
		return po, to, deskbot.Errorf(deskbot.EINVALID, "%s was not run: %s. Nobody was asked.", deskbot.ToolModifyOrder, deskbot.ErrorMessage(err))
	}
	return po, to, nil
}

// Size sizes o, an order already parsed and checked (an approver's change
// of a held order is sized again with it).
func (s *Sizer) Size(ctx context.Context, o deskbot.Order) (*deskbot.SizedOrder, error) {
	in, err := s.Market.Instrument(ctx, o.Symbol)
	if err != nil {
		return nil, err
	}
	now := s.now()
	open := s.Open == nil || s.Open(now)
	maxAge := s.MaxAge
	if maxAge <= 0 {
		maxAge = deskbot.DefaultPriceMaxAge
	}
	kind := o.Kind()
	bounded := kind == deskbot.OrderLimit && o.Side == deskbot.Buy
	last, known, err := s.Market.LastPrice(ctx, o.Symbol)
	if err != nil && !bounded {
		return nil, err
	}
	// A LIMIT buy is bounded by its own price: the market's, unread, is
	// not needed to size it.
	usable := err == nil && known && last.Usable(now, maxAge, open)
	if !usable && !bounded {
		return nil, deskbot.Errorf(deskbot.EINVALID, "%s was not placed: %s, and this %s %s order is counted at the market's price, so it cannot be sized. Nobody was asked. Send a LIMIT buy, whose price bounds it, or try again once %s trades.",
			deskbot.ToolPlaceOrder, noPrice(o.Symbol, last, known, now), kind, o.Side, o.Symbol)
	}
	if usable && (kind == deskbot.OrderSL || kind == deskbot.OrderSLM) {
		// Kite refuses a stop the market has already passed: a buy stop
		// triggers at or above its trigger, a sell stop at or below.
		if o.Side == deskbot.Buy && o.TriggerPrice <= last.Value || o.Side == deskbot.Sell && o.TriggerPrice >= last.Value {
			return nil, deskbot.Errorf(deskbot.EINVALID, "%s was not placed: the trigger_price %s of this %s %s is already crossed by the market's last price %s (a buy stop's trigger must be above it, a sell stop's below), so it would trade at once or be refused. Nobody was asked.",
				deskbot.ToolPlaceOrder, words.GroupedPrice(o.TriggerPrice), o.Side, kind, words.GroupedPrice(last.Value))
		}
	}
	sized := &deskbot.SizedOrder{Order: o, Instrument: in, Price: max(o.Price, o.TriggerPrice)}
	if usable {
		sized.Market = last
		sized.Price = max(sized.Price, last.Value)
	}
	if in.Option() && o.Side == deskbot.Sell {
		if sized.Underlying, err = s.underlying(ctx, in, now, maxAge, open); err != nil {
			return nil, err
		}
	}
	sized.Exposure = sized.ExposureOf(o.Side, o.Quantity)
	return sized, nil
}

// underlying is the usable last price of a sold option's underlying.
func (s *Sizer) underlying(ctx context.Context, in deskbot.Instrument, now time.Time, maxAge time.Duration, open bool) (float64, error) {
	if in.Underlying == "" {
		return 0, deskbot.Errorf(deskbot.EINVALID, "%s was not placed: the underlying of %s is not known, so what selling it puts at risk cannot be counted. Nobody was asked.", deskbot.ToolPlaceOrder, in.Symbol)
	}
	p, known, err := s.Market.LastPrice(ctx, in.Underlying)
	if err != nil {
		return 0, err
	}
	if !known || !p.Usable(now, maxAge, open) {
		return 0, deskbot.Errorf(deskbot.EINVALID, "%s was not placed: %s, and a sold option is counted at its underlying's price, so it cannot be sized. Nobody was asked.",
			deskbot.ToolPlaceOrder, noPrice(in.Underlying, p, known, now))
	}
	return p.Value, nil
}

// noPrice says why symbol has no usable price.
func noPrice(symbol string, p deskbot.Price, known bool, now time.Time) string {
	switch {
	case !known || !(p.Value > 0):
		// A market reports no price of 0 or less: Kite's 0 is a contract
		// listed but not traded.
		return "the market has no last price for " + symbol
	default:
		return fmt.Sprintf("the market's last price for %s is %s old", symbol, now.Sub(p.At).Round(time.Second))
	}
}

func (s *Sizer) now() time.Time {
	if s.Now == nil {
		return time.Now()
	}
	return s.Now()
}
