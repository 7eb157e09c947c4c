package store

import (
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/redis/go-redis/v9"
)

// The order log (deskbot.OrderStore): the desks' orders as their brokers
// report them, each desk's book and trade journal, and the index of open
// orders, under the "broker:" keys (keys.go). Every change of an order is
// one script that also books its new fills; the book's arithmetic is Lua
// (book.lua) so that it happens in that same step.

var _ deskbot.OrderStore = (*Store)(nil)

var (
	//go:embed book.lua
	bookSrc string
	//go:embed order_record.lua
	orderRecordSrc string
	//go:embed book_flatten.lua
	bookFlattenSrc string
	//go:embed book_fold.lua
	bookFoldSrc string

	orderRecordScript = redis.NewScript(bookSrc + orderRecordSrc)
	bookFlattenScript = redis.NewScript(bookSrc + bookFlattenSrc)
	bookFoldScript    = redis.NewScript(bookSrc + bookFoldSrc)
)

// journalCap is how many fills each desk's trade journal keeps.
const journalCap = 1000

// orderLife is how long a day's orders are kept: a week and a day, so the
// last trading week's orders can still be read.
const orderLife = 8 * 24 * time.Hour

// RecordOrder applies c in one step (order_record.lua).
func (s *Store) RecordOrder(ctx context.Context, c deskbot.OrderChange) (deskbot.OrderRecorded, error) {
	po := c.Order
	if err := deskbot.ValidDeskName(po.Desk); err != nil {
		return deskbot.OrderRecorded{}, err
	}
	data, err := json.Marshal(po)
	if err != nil {
		return deskbot.OrderRecorded{}, fmt.Errorf("store: encode order: %w", err)
	}
	day := po.TradingDay()
	res, err := orderRecordScript.Run(ctx, s.rdb,
		[]string{s.dayOrdersKey(day, po.Desk), s.openOrdersKey(), s.bookKey(po.Desk), s.journalKey(po.Desk)},
		po.Tag, data, c.Version, c.From, luaNumber(po.Filled), luaNumber(po.AvgPrice), po.Order.Symbol, po.Order.Side,
		c.At.UnixMilli(), journalCap, boolArg(po.State.Final()), day+" "+po.Desk, boolArg(c.Told), int64(orderLife/time.Second),
		string(c.Send)).StringSlice()
	if err != nil {
		return deskbot.OrderRecorded{}, s.wrap(err)
	}
	switch {
	case len(res) == 3 && res[0] == "ok":
		gain, err := strconv.ParseFloat(res[1], 64)
		if err != nil {
			return deskbot.OrderRecorded{}, fmt.Errorf("store: record reply %q: %w", res, err)
		}
		return deskbot.OrderRecorded{Told: res[2], Realised: gain}, nil
	case len(res) == 2 && (res[0] == "exists" || res[0] == "moved"):
		var cur deskbot.PlacedOrder
		if res[1] != "" {
			if err := json.Unmarshal([]byte(res[1]), &cur); err != nil {
				return deskbot.OrderRecorded{}, fmt.Errorf("store: corrupt order %s: %w", po.Tag, err)
			}
		}
		return deskbot.OrderRecorded{Existing: &cur}, nil
	case len(res) == 1 && res[0] == "overflow":
		return deskbot.OrderRecorded{}, deskbot.Errorf(deskbot.EINVALID, "order for %s is too large: the position would overflow", po.Order.Symbol)
	}
	return deskbot.OrderRecorded{}, fmt.Errorf("store: unexpected record reply %q", res)
}

// OrderTold marks version of po told, and drops po from the open index
// when it is final, in one round trip.
func (s *Store) OrderTold(ctx context.Context, po deskbot.PlacedOrder, version string) error {
	if version == "" && !po.State.Final() {
		return nil
	}
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		if version != "" {
			p.HSet(ctx, s.dayOrdersKey(po.TradingDay(), po.Desk), po.Tag+"|t", version)
		}
		if po.State.Final() {
			p.HDel(ctx, s.openOrdersKey(), po.Tag)
		}
		return nil
	})
	return s.wrap(err)
}

// LoggedOrder is the order recorded under tag for desk on day.
func (s *Store) LoggedOrder(ctx context.Context, desk, day, tag string) (deskbot.PlacedOrder, error) {
	data, err := s.rdb.HGet(ctx, s.dayOrdersKey(day, desk), tag).Result()
	if err == redis.Nil {
		return deskbot.PlacedOrder{}, deskbot.Errorf(deskbot.ENOTFOUND, "This desk has no order %s today.", tag)
	} else if err != nil {
		return deskbot.PlacedOrder{}, s.wrap(err)
	}
	return decodePlacedOrder(tag, data)
}

func decodePlacedOrder(tag, data string) (deskbot.PlacedOrder, error) {
	var po deskbot.PlacedOrder
	if err := json.Unmarshal([]byte(data), &po); err != nil {
		return po, fmt.Errorf("store: corrupt order %s: %w", tag, err)
	}
	return po, nil
}

// DeskOrders is desk's orders of the trading day day (an India date), and
// every order of the desk still open whatever day it belongs to (an
// after-market order placed last evening, one of a day gone by that its
// broker has not ended yet), oldest first: an order stays in view until
// its broker ends it.
func (s *Store) DeskOrders(ctx context.Context, desk, day string) ([]deskbot.PlacedOrder, error) {
	if err := deskbot.ValidDeskName(desk); err != nil {
		return nil, err
	}
	all, err := s.rdb.HGetAll(ctx, s.dayOrdersKey(day, desk)).Result()
	if err != nil {
		return nil, s.wrap(err)
	}
	idx, err := s.rdb.HGetAll(ctx, s.openOrdersKey()).Result()
	if err != nil {
		return nil, s.wrap(err)
	}
	var out []deskbot.PlacedOrder
	for tag, data := range all {
		if strings.Contains(tag, "|") {
			continue
		}
		po, err := decodePlacedOrder(tag, data)
		if err != nil {
			return nil, err
		}
		out = append(out, po)
	}
	for tag, where := range idx {
		d, dk, ok := strings.Cut(where, " ")
		if !ok || dk != desk || d == day {
			continue
		}
		po, err := s.LoggedOrder(ctx, desk, d, tag)
		if deskbot.ErrorCode(err) == deskbot.ENOTFOUND {
			continue // expired with its day's orders (OpenOrders drops it)
		} else if err != nil {
			return nil, err
		}
		if po.Open() {
			out = append(out, po)
		}
	}
	slices.SortFunc(out, func(a, b deskbot.PlacedOrder) int {
		return cmp.Or(a.At.Compare(b.At), strings.Compare(a.Tag, b.Tag))
	})
	return out, nil
}

// OpenOrders is every order in the open index, oldest first, with the
// version its desk was last told of; one whose day's orders expired
// leaves the index here (nothing can move it any more).
func (s *Store) OpenOrders(ctx context.Context) ([]deskbot.ToldOrder, error) {
	idx, err := s.rdb.HGetAll(ctx, s.openOrdersKey()).Result()
	if err != nil {
		return nil, s.wrap(err)
	}
	var out []deskbot.ToldOrder
	for tag, where := range idx {
		day, desk, ok := strings.Cut(where, " ")
		if !ok {
			continue
		}
		po, err := s.LoggedOrder(ctx, desk, day, tag)
		if deskbot.ErrorCode(err) == deskbot.ENOTFOUND {
			s.rdb.HDel(ctx, s.openOrdersKey(), tag)
			continue
		} else if err != nil {
			return nil, err
		}
		o := deskbot.ToldOrder{Order: po}
		if po.State.Final() {
			o.Told, err = s.rdb.HGet(ctx, s.dayOrdersKey(day, desk), tag+"|t").Result()
			if err != nil && err != redis.Nil {
				return nil, s.wrap(err)
			}
		}
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b deskbot.ToldOrder) int { return a.Order.At.Compare(b.Order.At) })
	return out, nil
}

// HasOpenOrders reports whether any desk's order is still open.
func (s *Store) HasOpenOrders(ctx context.Context) (bool, error) {
	n, err := s.rdb.HLen(ctx, s.openOrdersKey()).Result()
	return n > 0, s.wrap(err)
}

// BookPositions is desk's book, by symbol, closed positions included.
func (s *Store) BookPositions(ctx context.Context, desk string) ([]deskbot.Position, error) {
	if err := deskbot.ValidDeskName(desk); err != nil {
		return nil, err
	}
	all, err := s.rdb.HGetAll(ctx, s.bookKey(desk)).Result()
	if err != nil {
		return nil, s.wrap(err)
	}
	out := make([]deskbot.Position, 0, len(all))
	for sym, v := range all {
		nums, err := parseFloats(strings.Fields(v))
		if err != nil || len(nums) != 4 {
			return nil, fmt.Errorf("store: corrupt position %s=%q", sym, v)
		}
		out = append(out, deskbot.Position{Symbol: sym, Quantity: nums[0], AvgPrice: nums[1], LastPrice: nums[2], RealisedPnL: nums[3]})
	}
	slices.SortFunc(out, func(a, b deskbot.Position) int { return strings.Compare(a.Symbol, b.Symbol) })
	return out, nil
}

// TradeJournal is desk's last limit fills, oldest first.
func (s *Store) TradeJournal(ctx context.Context, desk string, limit int) ([]deskbot.Trade, error) {
	if err := deskbot.ValidDeskName(desk); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, nil
	}
	lines, err := s.rdb.LRange(ctx, s.journalKey(desk), int64(-limit), -1).Result()
	if err != nil {
		return nil, s.wrap(err)
	}
	out := make([]deskbot.Trade, 0, len(lines))
	for _, ln := range lines {
		t, err := parseTrade(ln)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// parseTrade reads a journal line: "millis side quantity price realised
// symbol".
func parseTrade(ln string) (deskbot.Trade, error) {
	f := strings.Fields(ln)
	if len(f) != 6 {
		return deskbot.Trade{}, fmt.Errorf("store: corrupt journal entry %q", ln)
	}
	ms, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return deskbot.Trade{}, fmt.Errorf("store: corrupt journal entry %q", ln)
	}
	nums, err := parseFloats(f[2:5])
	if err != nil {
		return deskbot.Trade{}, fmt.Errorf("store: corrupt journal entry %q", ln)
	}
	return deskbot.Trade{
		Fill: deskbot.Fill{Order: deskbot.Order{Symbol: f[5], Side: f[1], Quantity: nums[0], Price: nums[1]}, RealisedPnL: deskbot.RoundPaise(nums[2])},
		At:   time.UnixMilli(ms),
	}, nil
}

// FlattenBook closes every open position of desk at prices in one step
// (book_flatten.lua).
func (s *Store) FlattenBook(ctx context.Context, desk string, at time.Time, prices map[string]float64) ([]deskbot.Fill, error) {
	if err := deskbot.ValidDeskName(desk); err != nil {
		return nil, err
	}
	args := make([]any, 0, 2+2*len(prices))
	args = append(args, at.UnixMilli(), journalCap)
	for sym, price := range prices {
		args = append(args, sym, luaNumber(price))
	}
	res, err := bookFlattenScript.Run(ctx, s.rdb, []string{s.bookKey(desk), s.journalKey(desk)}, args...).StringSlice()
	if err != nil {
		return nil, s.wrap(err)
	}
	if len(res)%5 != 0 {
		return nil, fmt.Errorf("store: unexpected flatten reply %q", res)
	}
	var closed []deskbot.Fill
	for i := 0; i < len(res); i += 5 {
		nums, err := parseFloats(res[i+2 : i+5])
		if err != nil {
			return nil, fmt.Errorf("store: flatten reply: %w", err)
		}
		closed = append(closed, deskbot.Fill{
			Order:       deskbot.Order{Symbol: res[i], Side: res[i+1], Quantity: nums[0], Price: nums[1]},
			RealisedPnL: nums[2],
		})
	}
	return closed, nil
}

// FoldBook folds desk's book in one step (book_fold.lua).
func (s *Store) FoldBook(ctx context.Context, desk string) (int, error) {
	if err := deskbot.ValidDeskName(desk); err != nil {
		return 0, err
	}
	n, err := bookFoldScript.Run(ctx, s.rdb, []string{s.bookKey(desk)}).Int()
	return n, s.wrap(err)
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

// luaNumber renders f so that Lua's tonumber, in Redis and in the embedded
// Redis alike, reads back the same float64: shortest exact digits, with a
// decimal point before any exponent ("1.0e+22", not "1e+22").
func luaNumber(f float64) string {
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if strings.Contains(s, "e") && !strings.Contains(s, ".") {
		s = strings.Replace(s, "e", ".0e", 1)
	}
	return s
}
