package broker

import (
	"cmp"
	"context"
	"hash/fnv"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/exchange"
)

// The walk's market data: quotes, candles, instruments, option chains
// and live prices, every figure made from the same walk the paper broker
// fills at (Walk.Price), so what a desk reads is what it would trade at.
// The paper market's sessions are NSE's hours, 09:15 to 15:30 India time
// on weekdays (no holidays); the walk itself moves at every minute, so
// outside them the last price moves on from the session's close.

// MarketSource is what a paper broker reads of its market for desks:
// everything of deskbot.MarketData but the account (funds and holdings
// are the paper account's own), and its live prices.
type MarketSource interface {
	Quotes(ctx context.Context, symbols []string) (map[string]deskbot.Quote, error)
	Candles(ctx context.Context, q deskbot.CandleQuery) ([]deskbot.Candle, error)
	SearchInstruments(ctx context.Context, q deskbot.InstrumentQuery) ([]deskbot.Instrument, error)
	OptionChain(ctx context.Context, underlying, expiry string, strikes int) (deskbot.OptionChain, error)
	deskbot.PriceStream
}

var _ MarketSource = (*Walk)(nil)

const (
	sessionOpen  = 9*time.Hour + 15*time.Minute
	sessionClose = 15*time.Hour + 30*time.Minute
	// MaxSearch is the most instruments one search answers.
	MaxSearch = 200
	// DefaultSearch is a search's answer without a limit.
	DefaultSearch = 20
	// MaxChainStrikes is the most strikes a chain shows each side of the
	// money.
	MaxChainStrikes = 50
	// DefaultChainStrikes is a chain's strikes each side without a count.
	DefaultChainStrikes = 10
)

// sessionOf is the session whose open is the latest at or before t
// (weekdays only): its open and close.
func sessionOf(t time.Time) (open, close time.Time) {
	t = t.In(deskbot.IST)
	d := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, deskbot.IST)
	if t.Before(d.Add(sessionOpen)) {
		d = d.AddDate(0, 0, -1)
	}
	for d.Weekday() == time.Saturday || d.Weekday() == time.Sunday {
		d = d.AddDate(0, 0, -1)
	}
	return d.Add(sessionOpen), d.Add(sessionClose)
}

// minuteVolume is how much symbol traded in the minute starting at t: a
// figure fixed by the seed like the price.
func (w *Walk) minuteVolume(symbol string, t time.Time) int64 {
	h := fnv.New64a()
	h.Write([]byte(symbol))
	x := splitmix(h.Sum64() ^ w.Seed ^ uint64(t.Unix()/60))
	base := int64(200)
	if _, ok := paperIndices[symbol]; ok {
		return 0 // an index does not trade
	}
	return base + int64(x%1800)
}

// quoteOf is symbol's quote at t: the day's session from its open to t
// (sampled every five minutes for its high and low), the previous
// session's close, the session's volume, and five levels each side a
// tick apart.
func (w *Walk) quoteOf(symbol string, in deskbot.Instrument, t time.Time) deskbot.Quote {
	last := w.Price(symbol, t)
	open, close := sessionOf(t)
	prevOpen, prevClose := sessionOf(open.Add(-time.Minute))
	_ = prevOpen
	q := deskbot.Quote{Symbol: deskbot.OneSpelling(symbol), Last: deskbot.Price{Value: last, At: t}}
	q.Close = w.Price(symbol, prevClose.Add(-time.Minute))
	q.Open = w.Price(symbol, open)
	q.High, q.Low = max(q.Open, last), min(q.Open, last)
	end := t
	if end.After(close) {
		end = close
	}
	for m := open; m.Before(end); m = m.Add(5 * time.Minute) {
		p := w.Price(symbol, m)
		q.High, q.Low = max(q.High, p), min(q.Low, p)
	}
	for m := open; m.Before(end); m = m.Add(time.Minute) {
		q.Volume += w.minuteVolume(symbol, m)
	}
	if q.Close > 0 {
		q.Change = deskbot.RoundPaise(last - q.Close)
		q.ChangePct = math.Round((last-q.Close)/q.Close*10000) / 100
	}
	if in.Type == deskbot.InstrumentFUT || in.Option() {
		q.OpenInterest = w.openInterest(symbol, open)
	}
	if _, index := paperIndices[symbol]; !index {
		tick := max(in.TickSize, 0.05)
		for i := 1; i <= 5; i++ {
			qty := 10 * (1 + int64(splitmix(uint64(t.Unix()/60)^uint64(i)^uint64(len(symbol)))%50))
			q.Bids = append(q.Bids, deskbot.Depth{Price: deskbot.RoundPaise(last - float64(i)*tick), Quantity: qty, Orders: 1 + int(qty%7)})
			q.Asks = append(q.Asks, deskbot.Depth{Price: deskbot.RoundPaise(last + float64(i)*tick), Quantity: qty + 10, Orders: 1 + int((qty+3)%7)})
		}
	}
	return q
}

// openInterest is a derivative's open contracts for the session opening
// at open.
func (w *Walk) openInterest(symbol string, open time.Time) int64 {
	h := fnv.New64a()
	h.Write([]byte(symbol))
	return 1000 * (50 + int64(splitmix(h.Sum64()^w.Seed^uint64(open.Unix()))%5000))
}

// Quotes is each symbol's quote now, from the walk. A symbol the paper
// market does not list is EINVALID naming it.
func (w *Walk) Quotes(ctx context.Context, symbols []string) (map[string]deskbot.Quote, error) {
	t := w.now()
	out := make(map[string]deskbot.Quote, len(symbols))
	for _, s := range symbols {
		in, err := w.dataInstrument(ctx, s)
		if err != nil {
			return nil, err
		}
		out[s] = w.quoteOf(walkSymbol(s), in, t)
	}
	return out, nil
}

// walkSymbol is the symbol the walk prices s under: its one spelling.
func walkSymbol(s string) string { return deskbot.OneSpelling(s) }

// dataInstrument is what the paper market says s is, its indices
// included (priced, never traded).
func (w *Walk) dataInstrument(ctx context.Context, s string) (deskbot.Instrument, error) {
	for _, idx := range paperIndices {
		if deskbot.OneSpelling(s) == idx {
			return deskbot.Instrument{Symbol: idx, ContractSize: 1, TickSize: 0.05}, nil
		}
	}
	// The one symbol rule, as an order's: nothing a desk spells oddly is
	// priced as if it were listed.
	if deskbot.CheckOrder(deskbot.Order{Symbol: s, Side: deskbot.Buy, Quantity: 1, Type: deskbot.OrderMarket}) != nil {
		return deskbot.Instrument{}, deskbot.Errorf(deskbot.EINVALID, "%s is not a symbol the paper market lists: send one as the exchange writes it (search_instruments finds them)", strconv.QuoteToASCII(s))
	}
	return w.Instrument(ctx, s)
}

// Candles is q's candles from the walk, oldest first: the paper market's
// sessions only (09:15 to 15:30 on weekdays), none after now. A candle's
// open is the price before its first minute, its close the price of its
// last, its high and low those of its minutes (sampled at most 26 times);
// a day's candle is its session. The span caps are Kite's.
func (w *Walk) Candles(ctx context.Context, q deskbot.CandleQuery) ([]deskbot.Candle, error) {
	if err := exchange.CheckCandles(q); err != nil {
		return nil, err
	}
	in, err := w.dataInstrument(ctx, q.Symbol)
	if err != nil {
		return nil, err
	}
	sym := walkSymbol(q.Symbol)
	now := w.now()
	to := q.To
	if to.After(now) {
		to = now
	}
	step := exchange.IntervalLength(q.Interval)
	var out []deskbot.Candle
	from := q.From.In(deskbot.IST)
	for d := time.Date(from.Year(), from.Month(), from.Day(), 0, 0, 0, 0, deskbot.IST); !d.After(to); d = d.AddDate(0, 0, 1) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if d.Weekday() == time.Saturday || d.Weekday() == time.Sunday {
			continue
		}
		open, close := d.Add(sessionOpen), d.Add(sessionClose)
		if q.Interval == deskbot.IntervalDay {
			if d.Before(time.Date(from.Year(), from.Month(), from.Day(), 0, 0, 0, 0, deskbot.IST)) || open.After(to) {
				continue
			}
			out = append(out, w.candle(sym, in, d, open, earliest(close, to.Add(time.Minute).Truncate(time.Minute))))
			continue
		}
		for s := open; s.Before(close); s = s.Add(step) {
			if s.Before(q.From) || s.After(to) {
				continue
			}
			e := earliest(s.Add(step), close, to.Add(time.Minute).Truncate(time.Minute))
			out = append(out, w.candle(sym, in, s, s, e))
		}
	}
	return out, nil
}

// candle is sym's candle stamped at, over the minutes from s to e.
func (w *Walk) candle(sym string, in deskbot.Instrument, at, s, e time.Time) deskbot.Candle {
	c := deskbot.Candle{At: at, Open: w.Price(sym, s.Add(-time.Minute))}
	c.Close = w.Price(sym, e.Add(-time.Minute))
	c.High, c.Low = max(c.Open, c.Close), min(c.Open, c.Close)
	n := int(e.Sub(s) / time.Minute)
	every := max(1, n/25)
	for i := 0; i < n; i += every {
		p := w.Price(sym, s.Add(time.Duration(i)*time.Minute))
		c.High, c.Low = max(c.High, p), min(c.Low, p)
	}
	for m := s; m.Before(e); m = m.Add(time.Minute) {
		c.Volume += w.minuteVolume(sym, m)
	}
	if in.Type == deskbot.InstrumentFUT || in.Option() {
		c.OpenInterest = w.openInterest(sym, at)
	}
	return c
}

// SearchInstruments lists what the paper market lists matching q: its
// shares and futures, and an underlying's options (the strikes around
// its price now, of every listed expiry).
func (w *Walk) SearchInstruments(ctx context.Context, q deskbot.InstrumentQuery) ([]deskbot.Instrument, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultSearch
	}
	limit = min(limit, MaxSearch)
	var all []deskbot.Instrument
	for _, s := range slices.Sorted(mapsKeys(w.start())) {
		if _, index := indexName(s); index {
			continue
		}
		if in, err := w.Instrument(ctx, s); err == nil {
			all = append(all, in)
		}
	}
	if q.Underlying != "" {
		name := strings.ToUpper(q.Underlying)
		if n, ok := indexName(name); ok {
			name = n
		}
		spot := underlyingOf(name)
		if _, ok := w.start()[spot]; !ok {
			return nil, deskbot.Errorf(deskbot.EINVALID, "the paper market lists no derivatives of %q: search without underlying to see what it lists", q.Underlying)
		}
		var ders []deskbot.Instrument
		for _, in := range all {
			if in.Type == deskbot.InstrumentFUT && strings.HasPrefix(in.Symbol, name) {
				ders = append(ders, in)
			}
		}
		price := w.Price(spot, w.now())
		step := strikeStep(name, price)
		atm := math.Round(price/step) * step
		for _, e := range expiriesAt(w.now()) {
			for i := -5; i <= 5; i++ {
				for _, typ := range []string{deskbot.InstrumentCE, deskbot.InstrumentPE} {
					o := paperOption{name: name, expiry: e, strike: atm + float64(i)*step, typ: typ}
					if in, err := PaperInstrument(o.symbol()); err == nil {
						ders = append(ders, in)
					}
				}
			}
		}
		all = ders
	}
	text := strings.ToUpper(strings.TrimSpace(q.Text))
	var out []deskbot.Instrument
	for _, in := range all {
		ex, _ := deskbot.InstrumentOf(in.Symbol)
		switch {
		case q.Exchange != "" && !strings.EqualFold(q.Exchange, ex),
			q.Type != "" && !strings.EqualFold(q.Type, in.Type),
			text != "" && !strings.Contains(in.Symbol, text):
			continue
		}
		out = append(out, in)
	}
	// Best match first: the exact symbol, then those starting with the
	// text, then the rest, each in the list's order.
	slices.SortStableFunc(out, func(a, b deskbot.Instrument) int { return cmp.Compare(rank(a, text), rank(b, text)) })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

func rank(in deskbot.Instrument, text string) int {
	_, ts := deskbot.InstrumentOf(in.Symbol)
	switch {
	case text == "":
		return 0
	case ts == text:
		return 0
	case strings.HasPrefix(ts, text):
		return 1
	}
	return 2
}

// indexName is the name options of the index s are written with, when s
// is one of the paper market's indices (its walk symbol or that name).
func indexName(s string) (string, bool) {
	for name, idx := range paperIndices {
		if s == idx || s == name {
			return name, true
		}
	}
	return "", false
}

func (w *Walk) start() map[string]float64 {
	if w.Start == nil {
		return StartPrices
	}
	return w.Start
}

func mapsKeys(m map[string]float64) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// OptionChain is underlying's options of expiry ("" for the nearest) at
// strikes around its price now, strikes each side of the money (0: 10;
// at most 50), priced on the walk.
func (w *Walk) OptionChain(ctx context.Context, underlying, expiry string, strikes int) (deskbot.OptionChain, error) {
	name := strings.ToUpper(strings.TrimSpace(underlying))
	if n, ok := indexName(name); ok {
		name = n
	}
	spot := underlyingOf(name)
	if _, ok := w.start()[spot]; !ok || strings.HasSuffix(name, "FUT") {
		return deskbot.OptionChain{}, deskbot.Errorf(deskbot.EINVALID, "the paper market lists no options on %q: send NIFTY, BANKNIFTY or a share it lists (search_instruments)", underlying)
	}
	if strikes <= 0 {
		strikes = DefaultChainStrikes
	}
	if strikes > MaxChainStrikes {
		return deskbot.OptionChain{}, deskbot.Errorf(deskbot.EINVALID, "a chain shows at most %d strikes each side of the money, not %d: ask for fewer", MaxChainStrikes, strikes)
	}
	now := w.now()
	exps := expiriesAt(now)
	e := exps[0]
	if expiry != "" {
		found := false
		var listed []string
		for _, x := range exps {
			listed = append(listed, x.Format("2006-01-02"))
			if x.Format("2006-01-02") == expiry {
				e, found = x, true
			}
		}
		if !found {
			return deskbot.OptionChain{}, deskbot.Errorf(deskbot.EINVALID, "%s options do not expire on %q: send one of %s (YYYY-MM-DD), or leave expiry out for the nearest", name, expiry, strings.Join(listed, ", "))
		}
	}
	price := w.Price(spot, now)
	step := strikeStep(name, price)
	atm := math.Round(price/step) * step
	ch := deskbot.OptionChain{Underlying: spot, UnderlyingPrice: deskbot.Price{Value: price, At: now}, Expiry: e.Format("2006-01-02")}
	open, _ := sessionOf(now)
	for i := -strikes; i <= strikes; i++ {
		k := atm + float64(i)*step
		if !(k > 0) {
			continue
		}
		st := deskbot.ChainStrike{Strike: k}
		for _, typ := range []string{deskbot.InstrumentCE, deskbot.InstrumentPE} {
			o := paperOption{name: name, expiry: e, strike: k, typ: typ}
			sym := o.symbol()
			side := &deskbot.ChainSide{Symbol: sym, Last: deskbot.Price{Value: w.Price(sym, now), At: now}, OpenInterest: w.openInterest(sym, open)}
			for m := open; m.Before(now) && m.Before(open.Add(sessionClose-sessionOpen)); m = m.Add(15 * time.Minute) {
				side.Volume += 15 * w.minuteVolume(sym, m)
			}
			if typ == deskbot.InstrumentCE {
				st.Call = side
			} else {
				st.Put = side
			}
		}
		ch.Strikes = append(ch.Strikes, st)
	}
	return ch, nil
}

// DefaultStreamPoll is how often the walk's stream looks at the clock for
// its next step.
const DefaultStreamPoll = time.Second

// StreamPrices calls fn with each followed symbol's price each time the
// walk steps (a minute of the clock the walk reads, Now), and with a new
// symbol's price as soon as it is followed. A symbol the paper market
// does not list is never priced. It ends, with ctx's error, when ctx does.
func (w *Walk) StreamPrices(ctx context.Context, symbols <-chan []string, fn func(deskbot.Tick)) error {
	poll := w.Poll
	if poll <= 0 {
		poll = DefaultStreamPoll
	}
	tk := time.NewTicker(poll)
	defer tk.Stop()
	var follow []string
	step := w.now().Unix() / 60
	emit := func(syms []string) {
		t := w.now()
		for _, s := range syms {
			fn(deskbot.Tick{Symbol: s, Price: deskbot.Price{Value: w.Price(walkSymbol(s), t), At: t}})
		}
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case set, ok := <-symbols:
			if !ok {
				symbols = nil
				continue
			}
			var fresh []string
			next := make([]string, 0, len(set))
			for _, s := range slices.Compact(slices.Sorted(slices.Values(set))) {
				if _, err := w.dataInstrument(ctx, s); err != nil {
					continue
				}
				next = append(next, s)
				if !slices.Contains(follow, s) {
					fresh = append(fresh, s)
				}
			}
			follow = next
			emit(fresh)
		case <-tk.C:
			if n := w.now().Unix() / 60; n != step {
				step = n
				emit(follow)
			}
		}
	}
}

func earliest(t time.Time, more ...time.Time) time.Time {
	for _, u := range more {
		if u.Before(t) {
			t = u
		}
	}
	return t
}
