// Package broker owns trading for desks: the paper broker (the embedded
// default deskbot.Broker, positions kept in Redis per desk) and the tools a
// desk's model trades through (get_positions, place_order, flatten_desk),
// which work with any deskbot.Broker.
//
// Redis: the paper broker keeps its books in the service's Redis, under
// keys of its own (keys.go, the "broker:" namespace) that no other package
// reads or writes, and changes them only through its own Lua scripts
// (script.go). It talks to Redis through the narrow Redis interface below,
// which the service fills with the store's client: the one place where a
// package other than store talks to Redis directly, stated in both packages.
// It never touches the store's own keys.
//
// What runs is what was shown: place_order's arguments are checked, never
// normalised (CheckOrder), both before the gate holds a call
// (CheckArguments) and when it runs, so an approver is never asked about an
// order that would run as something other than it reads.
//
// Concurrency: every change to a desk's book (an order or a flatten) is one
// Lua script, so it is atomic in Redis: any number of goroutines or
// processes may trade on one desk at once and no update is lost. The same
// step appends each fill to the desk's capped trade journal (Trades), so the
// journal never disagrees with the book. A Book is one HGETALL, a consistent
// snapshot.
//
// Semantics of the paper broker: prices come from a market no desk
// controls (deskbot.Market; by default Walk, a seeded random walk from
// documented start prices, market.go). The price in an order is only a
// limit: a buy fills at once, completely, at the market's price if that is
// at or below its limit, a sell if it is at or above; otherwise nothing is
// placed and the order is refused (EINVALID) with words saying so, since
// the paper broker keeps no resting orders. So an order priced through
// the market is a market order, and no desk can fill at a price it chose
// away from the market. Buying adds, selling subtracts (a negative
// quantity is a short). Adding to a position moves its average price to
// the weighted average; reducing one realises (fill price - average) ×
// closed quantity, sign-correct for shorts; crossing through zero closes
// the old side and opens the rest at the fill price. A Book reads each
// position's last price from the market now, so unrealised P&L moves with
// it; a flatten closes at those prices. A quantity within 1e-9 of zero
// counts as flat, so fractional quantities that add up to nothing close
// the position.
//
// Money: amounts are float64. Each fill's realised P&L is rounded to paise
// (2 decimals) when it is booked, so the fills a person sees add up exactly
// to the book's total; reports round P&L to paise again to drop float noise.
// Quantities and average prices are kept unrounded.
package broker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/words"
	"github.com/redis/go-redis/v9"
)

// journalCap is how many fills each desk's trade journal keeps.
const journalCap = 1000

// Redis is what the paper broker needs of a Redis client: its own scripts,
// and two reads. Every go-redis client has it (redis.UniversalClient: the
// store's, in the service, a single server's, Sentinel's or a Cluster's).
type Redis interface {
	redis.Scripter
	HGetAll(ctx context.Context, key string) *redis.MapStringStringCmd
	LRange(ctx context.Context, key string, start, stop int64) *redis.StringSliceCmd
}

// Paper is the paper broker: fills at the market's price within the
// order's limit, positions in Redis.
type Paper struct {
	rdb    Redis
	key    func(parts ...string) string
	now    deskbot.Now
	market deskbot.Market
	check  func(deskbot.Order) error // the exchange's rules, when it trades on one
}

var (
	_ deskbot.Broker = (*Paper)(nil)
	_ deskbot.Market = (*Paper)(nil)
)

// NewPaper returns a paper broker keeping its books under key("broker", ...)
// in rdb (key is the store's Key, so the books share its prefix), trading
// at DefaultMarket's prices. now stamps the trade journal and moves the
// market.
func NewPaper(rdb Redis, key func(parts ...string) string, now deskbot.Now) *Paper {
	return NewPaperMarket(rdb, key, now, DefaultMarket(now))
}

// NewPaperMarket is NewPaper trading at market's prices.
func NewPaperMarket(rdb Redis, key func(parts ...string) string, now deskbot.Now, market deskbot.Market) *Paper {
	return &Paper{rdb: rdb, key: key, now: now, market: market}
}

// Checking returns p checking orders with check too (an exchange's rules:
// its instruments, lots, ticks and hours), before they are held and when
// they are placed.
func (p *Paper) Checking(check func(deskbot.Order) error) *Paper {
	q := *p
	q.check = check
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
	// Trading on no exchange, an exchange before the symbol would make
	// another instrument of the same stock, with its own price and its own
	// position (and position limit).
	if ex, ts := deskbot.SplitSymbol(o.Symbol); ex != "" {
		return deskbot.Errorf(deskbot.EINVALID, "%s names an exchange, but this paper broker trades on none: send the symbol alone, %s", o.Symbol, ts)
	}
	return nil
}

// LastPrices is the market's prices for symbols.
func (p *Paper) LastPrices(ctx context.Context, symbols []string) (map[string]float64, error) {
	return p.market.LastPrices(ctx, symbols)
}

// LastPrice is the market's price for symbol: the price the paper broker
// fills at now.
func (p *Paper) LastPrice(ctx context.Context, symbol string) (float64, bool, error) {
	return p.market.LastPrice(ctx, symbol)
}

// PlaceOrder fills o at once at the market's price if that is within o's
// limit (o.Price: the most a buy pays, the least a sell takes). An invalid
// order, or one the market is beyond, is an EINVALID error and changes
// nothing.
func (p *Paper) PlaceOrder(ctx context.Context, desk, key string, o deskbot.Order) (deskbot.PlacedOrder, error) {
	f, err := p.fill(ctx, desk, o)
	if err != nil {
		return deskbot.PlacedOrder{}, err
	}
	now := p.now()
	return deskbot.PlacedOrder{Desk: desk, Order: o, State: deskbot.OrderComplete, Filled: f.Quantity, AvgPrice: f.Price, At: now, Updated: now}, nil
}

// Orders is the desk's orders of the day.
func (p *Paper) Orders(ctx context.Context, desk string) ([]deskbot.PlacedOrder, error) {
	return nil, nil
}

// CancelOrder cancels one of the desk's open orders.
func (p *Paper) CancelOrder(ctx context.Context, desk, id string) (deskbot.PlacedOrder, error) {
	return deskbot.PlacedOrder{}, deskbot.Errorf(deskbot.ENOTFOUND, "no open order %s", id)
}

// Margin: the paper broker keeps no margins.
func (p *Paper) Margin(ctx context.Context, o deskbot.Order) (deskbot.OrderMargin, bool, error) {
	return deskbot.OrderMargin{}, false, nil
}

func (p *Paper) fill(ctx context.Context, desk string, o deskbot.Order) (deskbot.Fill, error) {
	if err := deskbot.ValidDeskName(desk); err != nil {
		return deskbot.Fill{}, err
	}
	if err := p.Check(o); err != nil {
		return deskbot.Fill{}, err
	}
	market, ok, err := p.market.LastPrice(ctx, o.Symbol)
	if err != nil {
		return deskbot.Fill{}, err
	}
	if !ok {
		return deskbot.Fill{}, deskbot.Errorf(deskbot.EINVALID, "%s has no market price just now, so the order was not placed", o.Symbol)
	}
	if msg := beyondLimit(o, market); msg != "" {
		return deskbot.Fill{}, deskbot.Errorf(deskbot.EINVALID, "%s", msg)
	}
	o.Price = market
	res, err := placeScript.Run(ctx, p.rdb, []string{p.bookKey(desk), p.journalKey(desk)},
		o.Symbol, o.Side, fmtExact(o.Quantity), fmtExact(o.Price), p.now().UnixMilli(), journalCap).StringSlice()
	if err != nil {
		return deskbot.Fill{}, wrapRedis(err)
	}
	if len(res) != 2 || res[0] != "ok" {
		if len(res) > 0 && res[0] == "overflow" {
			return deskbot.Fill{}, deskbot.Errorf(deskbot.EINVALID,
				"order for %s is too large: the position would overflow", o.Symbol)
		}
		return deskbot.Fill{}, fmt.Errorf("paper broker: unexpected script reply %q", res)
	}
	gain, err := strconv.ParseFloat(res[1], 64)
	if err != nil {
		return deskbot.Fill{}, fmt.Errorf("paper broker: bad realised amount %q: %w", res[1], err)
	}
	return deskbot.Fill{Order: o, RealisedPnL: deskbot.RoundPaise(gain)}, nil
}

// Flatten closes every open position at the market's price.
func (p *Paper) Flatten(ctx context.Context, desk, key string) (deskbot.FlattenReport, error) {
	if err := deskbot.ValidDeskName(desk); err != nil {
		return deskbot.FlattenReport{}, err
	}
	all, err := p.rdb.HGetAll(ctx, p.bookKey(desk)).Result()
	if err != nil {
		return deskbot.FlattenReport{}, wrapRedis(err)
	}
	// The script closes at these prices; a symbol it finds that was not
	// here yet (bought meanwhile) closes at its last fill, moments old.
	args := []any{p.now().UnixMilli(), journalCap}
	prices, err := p.market.LastPrices(ctx, slices.Collect(maps.Keys(all)))
	if err != nil {
		return deskbot.FlattenReport{}, err
	}
	for sym, price := range prices {
		args = append(args, sym, fmtExact(price))
	}
	res, err := flattenScript.Run(ctx, p.rdb, []string{p.bookKey(desk), p.journalKey(desk)}, args...).StringSlice()
	if err != nil {
		return deskbot.FlattenReport{}, wrapRedis(err)
	}
	var r deskbot.FlattenReport
	if len(res)%5 != 0 {
		return r, fmt.Errorf("paper broker: unexpected flatten reply %q", res)
	}
	for i := 0; i < len(res); i += 5 {
		nums, err := parseFloats(res[i+2 : i+5])
		if err != nil {
			return r, fmt.Errorf("paper broker: flatten reply: %w", err)
		}
		f := deskbot.Fill{
			Order:       deskbot.Order{Symbol: res[i], Side: res[i+1], Quantity: nums[0], Price: nums[1]},
			RealisedPnL: deskbot.RoundPaise(nums[2]),
		}
		r.Closed = append(r.Closed, f)
		r.RealisedPnL += nums[2]
	}
	slices.SortFunc(r.Closed, func(a, b deskbot.Fill) int { return strings.Compare(a.Symbol, b.Symbol) })
	r.RealisedPnL = deskbot.RoundPaise(r.RealisedPnL)
	return r, nil
}

// Book returns the desk's open positions, sorted by symbol, and the P&L it
// has realised to date (closed positions included).
func (p *Paper) Book(ctx context.Context, desk string) (deskbot.Book, error) {
	if err := deskbot.ValidDeskName(desk); err != nil {
		return deskbot.Book{}, err
	}
	all, err := p.rdb.HGetAll(ctx, p.bookKey(desk)).Result()
	if err != nil {
		return deskbot.Book{}, wrapRedis(err)
	}
	var b deskbot.Book
	for sym, v := range all {
		pos, err := parsePosition(sym, v)
		if err != nil {
			return deskbot.Book{}, err
		}
		b.RealisedPnL += pos.RealisedPnL
		if pos.Quantity != 0 {
			pos.RealisedPnL = deskbot.RoundPaise(pos.RealisedPnL)
			b.Positions = append(b.Positions, pos)
		}
	}
	// Every open position at one moment, in one read.
	syms := make([]string, len(b.Positions))
	for i, pos := range b.Positions {
		syms[i] = pos.Symbol
	}
	if len(syms) > 0 {
		prices, err := p.market.LastPrices(ctx, syms)
		if err != nil {
			return deskbot.Book{}, err
		}
		for i := range b.Positions {
			if price, ok := prices[b.Positions[i].Symbol]; ok {
				b.Positions[i].LastPrice = price
			}
		}
	}
	slices.SortFunc(b.Positions, func(a, b deskbot.Position) int { return strings.Compare(a.Symbol, b.Symbol) })
	b.RealisedPnL = deskbot.RoundPaise(b.RealisedPnL)
	return b, nil
}

// beyondLimit says why o does not fill at the market's price ("" when it
// does): the paper broker keeps no resting orders, so the desk is told
// where the market is and that nothing was placed.
func beyondLimit(o deskbot.Order, market float64) string {
	switch {
	case o.Side == deskbot.Buy && market > o.Price:
		return fmt.Sprintf("Not filled: %s trades at %s, above your buy limit of %s, so nothing was placed (the price you give is the most a buy pays; orders do not rest). To buy now, give a price at or above the market.",
			o.Symbol, "₹"+words.GroupedPrice(market), "₹"+words.GroupedPrice(o.Price))
	case o.Side == deskbot.Sell && market < o.Price:
		return fmt.Sprintf("Not filled: %s trades at %s, below your sell limit of %s, so nothing was placed (the price you give is the least a sell takes; orders do not rest). To sell now, give a price at or below the market.",
			o.Symbol, "₹"+words.GroupedPrice(market), "₹"+words.GroupedPrice(o.Price))
	}
	return ""
}

// parsePosition reads the stored form "quantity avg last realised".
func parsePosition(sym, v string) (deskbot.Position, error) {
	nums, err := parseFloats(strings.Fields(v))
	if err != nil || len(nums) != 4 {
		return deskbot.Position{}, fmt.Errorf("paper broker: corrupt position %s=%q", sym, v)
	}
	return deskbot.Position{Symbol: sym, Quantity: nums[0], AvgPrice: nums[1], LastPrice: nums[2], RealisedPnL: nums[3]}, nil
}

func parseFloats(ss []string) ([]float64, error) {
	out := make([]float64, len(ss))
	for i, s := range ss {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, err
		}
		out[i] = f
	}
	return out, nil
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

// wrapRedis keeps the cause for logs while giving people and models a code
// and a message without addresses: a connection failure is EUNAVAILABLE, an
// error reply from Redis (a bug here) stays internal.
func wrapRedis(err error) error {
	var re redis.Error
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("paper broker: %w", err)
	}
	if errors.As(err, &re) && !errors.Is(err, redis.ErrPoolTimeout) {
		return fmt.Errorf("paper broker: %w", err)
	}
	return fmt.Errorf("%w: %w", errUnavailable, err)
}
