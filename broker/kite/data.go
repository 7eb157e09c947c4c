package kite

import (
	"cmp"
	"context"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	kiteconnect "github.com/zerodha/gokiteconnect/v4"
	"github.com/zerodha/gokiteconnect/v4/models"
	kiteticker "github.com/zerodha/gokiteconnect/v4/ticker"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/exchange"
)

// Kite's market data, for desks and approvers (deskbot.MarketData): the
// day answers it (so BROKER=paper-kite reads it too), the real broker
// passes it on. Every request keeps Kite's pace at the client's limiters
// (quotes one a second, candles three a second); a request Kite could not
// answer in one (500 instruments a quote, a span past the interval's cap)
// is refused here with words for the model, never split into a burst.
// Live prices come from a ticker connection of their own in quote mode:
// with the order updates' connection that is two of Kite's three, and at
// most maxTickerTokens instruments on it.

// maxTickerTokens is how many instruments one ticker connection follows
// (Kite's cap).
const maxTickerTokens = 3000

// list is the day's instrument list, loaded if it is not the day's.
func (d *Day) dayInstruments(ctx context.Context) (*exchange.Instruments, error) {
	l := d.list.Load()
	if l == nil || l.day != exchange.DateOf(d.now()) {
		if err := d.Load(ctx); err != nil {
			return nil, err
		}
		if l = d.list.Load(); l == nil {
			return nil, deskbot.Errorf(deskbot.EUNAVAILABLE, "the day's instrument list is not loaded yet; try again later")
		}
	}
	return l.list, nil
}

// lookup is symbol in the day's list; EINVALID naming it when Kite does
// not list it today.
func (d *Day) lookup(ctx context.Context, symbol string) (exchange.Instrument, error) {
	list, err := d.dayInstruments(ctx)
	if err != nil {
		return exchange.Instrument{}, err
	}
	ex, ts := deskbot.InstrumentOf(symbol)
	in, ok := list.Lookup(ex, ts)
	if !ok {
		return exchange.Instrument{}, deskbot.Errorf(deskbot.EINVALID, "%s is not an instrument on %s today (an expired contract, or a misspelt symbol): search_instruments finds what is listed", symbol, ex)
	}
	return in, nil
}

// withSession runs fn under the day's session: a session a login replaced
// meanwhile is read again once; one Kite ended is reported to the login
// once and refused in its words.
func (d *Day) withSession(ctx context.Context, fn func() error) error {
	s, err := d.session(ctx)
	if err != nil {
		return err
	}
	err = fn()
	if IsSession(err) && d.login.replaced(ctx, s) {
		if s, err = d.session(ctx); err != nil {
			return err
		}
		err = fn()
	}
	if IsSession(err) {
		d.login.Ended(ctx, s)
		if _, err = d.login.Session(ctx); err == nil {
			err = ErrSession
		}
	}
	return err
}

// Quotes is Kite's quote of each of symbols, read in one request (at most
// maxQuoteKeys). A symbol Kite does not list today is EINVALID naming it.
func (d *Day) Quotes(ctx context.Context, symbols []string) (map[string]deskbot.Quote, error) {
	if len(symbols) > maxQuoteKeys {
		return nil, deskbot.Errorf(deskbot.EINVALID, "at most %d instruments can be quoted at once, not %d: ask for fewer", maxQuoteKeys, len(symbols))
	}
	keys := make([]string, 0, len(symbols))
	for _, s := range symbols {
		if _, err := d.lookup(ctx, s); err != nil {
			return nil, err
		}
		if k := quoteKey(s); !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	var got kiteconnect.Quote
	if err := d.withSession(ctx, func() (err error) { got, err = d.kite.Quote(ctx, keys...); return err }); err != nil {
		return nil, err
	}
	now := d.now()
	out := make(map[string]deskbot.Quote, len(symbols))
	for _, s := range symbols {
		kq, ok := got[quoteKey(s)]
		if !ok {
			return nil, deskbot.Errorf(deskbot.EINVALID, "Kite has no quote for %s just now", s)
		}
		out[s] = quoteOf(s, kq, now)
	}
	return out, nil
}

// quoteOf is Kite's quote as deskbot reads it. A last price of 0 (a
// contract not traded yet) is no price.
func quoteOf(symbol string, kq struct {
	InstrumentToken   int          `json:"instrument_token"`
	Timestamp         models.Time  `json:"timestamp"`
	LastPrice         float64      `json:"last_price"`
	LastQuantity      int          `json:"last_quantity"`
	LastTradeTime     models.Time  `json:"last_trade_time"`
	AveragePrice      float64      `json:"average_price"`
	Volume            int          `json:"volume"`
	BuyQuantity       int          `json:"buy_quantity"`
	SellQuantity      int          `json:"sell_quantity"`
	OHLC              models.OHLC  `json:"ohlc"`
	NetChange         float64      `json:"net_change"`
	OI                float64      `json:"oi"`
	OIDayHigh         float64      `json:"oi_day_high"`
	OIDayLow          float64      `json:"oi_day_low"`
	LowerCircuitLimit float64      `json:"lower_circuit_limit"`
	UpperCircuitLimit float64      `json:"upper_circuit_limit"`
	Depth             models.Depth `json:"depth"`
}, now time.Time) deskbot.Quote {
	q := deskbot.Quote{Symbol: deskbot.OneSpelling(symbol), Open: kq.OHLC.Open, High: kq.OHLC.High, Low: kq.OHLC.Low, Close: kq.OHLC.Close,
		Volume: int64(kq.Volume), OpenInterest: int64(kq.OI)}
	if kq.LastPrice > 0 {
		at := kq.Timestamp.Time
		if at.IsZero() {
			at = kq.LastTradeTime.Time
		}
		if at.IsZero() {
			at = now
		}
		q.Last = deskbot.Price{Value: kq.LastPrice, At: at}
		if q.Close > 0 {
			q.Change = deskbot.RoundPaise(kq.LastPrice - q.Close)
			q.ChangePct = math.Round((kq.LastPrice-q.Close)/q.Close*10000) / 100
		}
	}
	for _, b := range kq.Depth.Buy {
		if b.Price > 0 {
			q.Bids = append(q.Bids, deskbot.Depth{Price: b.Price, Quantity: int64(b.Quantity), Orders: int(b.Orders)})
		}
	}
	for _, a := range kq.Depth.Sell {
		if a.Price > 0 {
			q.Asks = append(q.Asks, deskbot.Depth{Price: a.Price, Quantity: int64(a.Quantity), Orders: int(a.Orders)})
		}
	}
	return q
}

// Candles is Kite's candles for q, oldest first: one request, within the
// interval's span cap (exchange.CheckCandles), for the instrument token
// the day's list gives the symbol.
func (d *Day) Candles(ctx context.Context, q deskbot.CandleQuery) ([]deskbot.Candle, error) {
	if err := exchange.CheckCandles(q); err != nil {
		return nil, err
	}
	in, err := d.lookup(ctx, q.Symbol)
	if err != nil {
		return nil, err
	}
	var got []kiteconnect.HistoricalData
	if err := d.withSession(ctx, func() (err error) { got, err = d.kite.Historical(ctx, in.Token, q.Interval, q.From, q.To); return err }); err != nil {
		return nil, err
	}
	out := make([]deskbot.Candle, 0, len(got))
	for _, c := range got {
		out = append(out, deskbot.Candle{At: c.Date.Time.In(deskbot.IST), Open: c.Open, High: c.High, Low: c.Low, Close: c.Close, Volume: int64(c.Volume), OpenInterest: int64(c.OI)})
	}
	return out, nil
}

// SearchInstruments searches the day's instrument list: Text in a symbol
// or an underlying's name, narrowed by exchange, type and underlying;
// the exact symbol first, then symbols starting with the text, then the
// rest, nearest expiry and lowest strike first among equals.
func (d *Day) SearchInstruments(ctx context.Context, q deskbot.InstrumentQuery) ([]deskbot.Instrument, error) {
	list, err := d.dayInstruments(ctx)
	if err != nil {
		return nil, err
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 20
	}
	limit = min(limit, 200)
	text := strings.ToUpper(strings.TrimSpace(q.Text))
	under := strings.ToUpper(strings.TrimSpace(q.Underlying))
	type hit struct {
		in   exchange.Instrument
		rank int
	}
	var hits []hit
	list.All(strings.ToUpper(q.Exchange), func(in exchange.Instrument) bool {
		typ := in.Type
		if typ == "" {
			typ = deskbot.InstrumentEQ
		}
		switch {
		case q.Type != "" && !strings.EqualFold(q.Type, typ),
			under != "" && (in.Name != under || in.Expiry.IsZero()),
			text != "" && !strings.Contains(in.Tradingsymbol, text) && !strings.Contains(in.Name, text):
			return true
		}
		r := 2
		switch {
		case text == "" || in.Tradingsymbol == text:
			r = 0
		case strings.HasPrefix(in.Tradingsymbol, text):
			r = 1
		}
		hits = append(hits, hit{in, r})
		return true
	})
	slices.SortStableFunc(hits, func(a, b hit) int {
		return cmp.Or(cmp.Compare(a.rank, b.rank), cmp.Compare(a.in.Expiry.String(), b.in.Expiry.String()), cmp.Compare(a.in.Strike, b.in.Strike))
	})
	sizes := d.Sizes
	if sizes == nil {
		sizes = deskbot.DefaultContractSizes()
	}
	var out []deskbot.Instrument
	for _, h := range hits {
		if len(out) == limit {
			break
		}
		if in, err := list.Sized(h.in, sizes); err == nil {
			out = append(out, in)
		}
	}
	return out, nil
}

// OptionChain is underlying's options of expiry ("" for the nearest) in
// the day's list (NFO, or BFO for BSE's indices), strikes each side of
// the underlying's price, priced by one quote request with the
// underlying (two when the expiry lists more than fit in one: the
// underlying's price first, then the strikes around it).
func (d *Day) OptionChain(ctx context.Context, underlying, expiry string, strikes int) (deskbot.OptionChain, error) {
	list, err := d.dayInstruments(ctx)
	if err != nil {
		return deskbot.OptionChain{}, err
	}
	if strikes <= 0 {
		strikes = 10
	}
	if strikes > 50 {
		return deskbot.OptionChain{}, deskbot.Errorf(deskbot.EINVALID, "a chain shows at most 50 strikes each side of the money, not %d: ask for fewer", strikes)
	}
	name := strings.ToUpper(strings.TrimSpace(underlying))
	today := exchange.DateOf(d.now())
	var opts []exchange.Instrument
	expiries := map[string]bool{}
	for _, ex := range []string{"NFO", "BFO"} {
		list.All(ex, func(in exchange.Instrument) bool {
			if in.Name == name && (in.Type == deskbot.InstrumentCE || in.Type == deskbot.InstrumentPE) && !in.Expiry.Before(today) {
				opts = append(opts, in)
				expiries[in.Expiry.String()] = true
			}
			return true
		})
	}
	if len(opts) == 0 {
		return deskbot.OptionChain{}, deskbot.Errorf(deskbot.EINVALID, "Kite lists no options on %q today: send the underlying's name as Kite writes it (NIFTY, BANKNIFTY, RELIANCE); search_instruments finds it", underlying)
	}
	listed := slices.Sorted(func(yield func(string) bool) {
		for e := range expiries {
			if !yield(e) {
				return
			}
		}
	})
	if expiry == "" {
		expiry = listed[0]
	} else if !expiries[expiry] {
		shown := listed[:min(len(listed), 6)]
		return deskbot.OptionChain{}, deskbot.Errorf(deskbot.EINVALID, "%s options do not expire on %q: send one of %s (YYYY-MM-DD), or leave expiry out for the nearest", name, expiry, strings.Join(shown, ", "))
	}
	opts = slices.DeleteFunc(opts, func(in exchange.Instrument) bool { return in.Expiry.String() != expiry })
	sizes := d.Sizes
	if sizes == nil {
		sizes = deskbot.DefaultContractSizes()
	}
	sized, err := list.Sized(opts[0], sizes)
	if err != nil {
		return deskbot.OptionChain{}, err
	}
	spot := sized.Underlying
	var strikeList []float64
	for _, in := range opts {
		if !slices.Contains(strikeList, in.Strike) {
			strikeList = append(strikeList, in.Strike)
		}
	}
	slices.Sort(strikeList)
	keys := []string{quoteKey(spot)}
	for _, in := range opts {
		keys = append(keys, in.Key())
	}
	var quotes kiteconnect.Quote
	if len(keys) > maxQuoteKeys {
		// The underlying first, then the strikes around it.
		if err := d.withSession(ctx, func() (err error) { quotes, err = d.kite.Quote(ctx, keys[0]); return err }); err != nil {
			return deskbot.OptionChain{}, err
		}
		keys = keys[:1]
		for _, k := range window(strikeList, quotes[quoteKey(spot)].LastPrice, strikes) {
			for _, in := range opts {
				if in.Strike == k {
					keys = append(keys, in.Key())
				}
			}
		}
	}
	var more kiteconnect.Quote
	if err := d.withSession(ctx, func() (err error) { more, err = d.kite.Quote(ctx, keys...); return err }); err != nil {
		return deskbot.OptionChain{}, err
	}
	now := d.now()
	uq := quoteOf(spot, more[quoteKey(spot)], now)
	ch := deskbot.OptionChain{Underlying: spot, UnderlyingPrice: uq.Last, Expiry: expiry}
	for _, k := range window(strikeList, uq.Last.Value, strikes) {
		st := deskbot.ChainStrike{Strike: k}
		for _, in := range opts {
			if in.Strike != k {
				continue
			}
			kq, ok := more[in.Key()]
			if !ok {
				continue
			}
			q := quoteOf(in.Key(), kq, now)
			side := &deskbot.ChainSide{Symbol: deskbot.SymbolOf(in.Exchange, in.Tradingsymbol), Last: q.Last, OpenInterest: q.OpenInterest, Volume: q.Volume}
			if in.Type == deskbot.InstrumentCE {
				st.Call = side
			} else {
				st.Put = side
			}
		}
		ch.Strikes = append(ch.Strikes, st)
	}
	return ch, nil
}

// window is the strikes (sorted) nearest price: the one at the money and
// n each side of it, lowest first.
func window(strikes []float64, price float64, n int) []float64 {
	if len(strikes) == 0 {
		return nil
	}
	atm := 0
	for i, k := range strikes {
		if math.Abs(k-price) < math.Abs(strikes[atm]-price) {
			atm = i
		}
	}
	return strikes[max(0, atm-n):min(len(strikes), atm+n+1)]
}

// Funds is the account's margins at Kite by segment: what is available
// (net) and what is used.
func (b *Broker) Funds(ctx context.Context) ([]deskbot.SegmentFunds, error) {
	var m kiteconnect.AllMargins
	if err := b.day.withSession(ctx, func() (err error) { m, err = b.kite.UserMargins(ctx); return err }); err != nil {
		return nil, err
	}
	return []deskbot.SegmentFunds{
		{Segment: "equity", Available: m.Equity.Net, Used: m.Equity.Used.Debits},
		{Segment: "commodity", Available: m.Commodity.Net, Used: m.Commodity.Used.Debits},
	}, nil
}

// Holdings is the account's delivery holdings at Kite.
func (b *Broker) Holdings(ctx context.Context) ([]deskbot.Holding, error) {
	var hs kiteconnect.Holdings
	if err := b.day.withSession(ctx, func() (err error) { hs, err = b.kite.Holdings(ctx); return err }); err != nil {
		return nil, err
	}
	out := make([]deskbot.Holding, 0, len(hs))
	for _, h := range hs {
		out = append(out, deskbot.Holding{Symbol: deskbot.SymbolOf(h.Exchange, h.Tradingsymbol), Quantity: int64(h.Quantity + h.T1Quantity), AvgPrice: h.AveragePrice, LastPrice: h.LastPrice})
	}
	return out, nil
}

// StreamPrices follows symbols on a ticker connection of its own in quote
// mode and calls fn with each tick's last price, until ctx ends or the
// connection does (the error says why; the hub polls meanwhile). At most
// maxTickerTokens symbols are followed; a symbol Kite does not list today
// is left out.
func (d *Day) StreamPrices(ctx context.Context, symbols <-chan []string, fn func(deskbot.Tick)) error {
	s, err := d.session(ctx)
	if err != nil {
		return err
	}
	u, err := CheckTickerURL(d.TickerURL)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	tk := kiteticker.New(d.kite.apiKey, s.AccessToken)
	tk.SetRootURL(*u)
	tk.SetAutoReconnect(true)
	tk.SetReconnectMaxRetries(0)
	connected := make(chan struct{}, 1)
	var bySymbol atomic.Pointer[map[uint32]string]
	empty := map[uint32]string{}
	bySymbol.Store(&empty)
	tk.OnConnect(func() {
		select {
		case connected <- struct{}{}:
		default:
		}
	})
	var why atomic.Value
	tk.OnError(func(err error) { why.Store(scrub(err.Error(), append(d.kite.secrets(), s.AccessToken)...)) })
	tk.OnTick(func(t models.Tick) {
		sym, ok := (*bySymbol.Load())[t.InstrumentToken]
		if !ok || !(t.LastPrice > 0) {
			return
		}
		at := t.Timestamp.Time
		if at.IsZero() {
			at = d.now()
		}
		fn(deskbot.Tick{Symbol: sym, Price: deskbot.Price{Value: t.LastPrice, At: at}})
	})
	served := make(chan struct{})
	go func() { defer close(served); tk.ServeWithContext(ctx) }()
	var subscribed []uint32
	var want map[uint32]string
	live := false
	apply := func() error {
		if !live || want == nil {
			return nil
		}
		var add, drop []uint32
		for t := range want {
			if !slices.Contains(subscribed, t) {
				add = append(add, t)
			}
		}
		for _, t := range subscribed {
			if _, ok := want[t]; !ok {
				drop = append(drop, t)
			}
		}
		if err := tk.Unsubscribe(drop); err != nil {
			return err
		}
		if err := tk.Subscribe(add); err != nil {
			return err
		}
		if err := tk.SetMode(kiteticker.ModeQuote, add); err != nil {
			return err
		}
		subscribed = subscribed[:0]
		for t := range want {
			subscribed = append(subscribed, t)
		}
		return nil
	}
	for {
		select {
		case <-ctx.Done():
			<-served
			return ctx.Err()
		case <-served:
			msg, _ := why.Load().(string)
			if msg == "" {
				msg = "the connection closed"
			}
			return deskbot.Errorf(deskbot.EUNAVAILABLE, "Kite's ticker stopped: %s", msg)
		case <-connected:
			live, subscribed = true, nil
			if err := apply(); err != nil {
				return deskbot.Errorf(deskbot.EUNAVAILABLE, "Kite's ticker did not take the subscription: %v", err)
			}
		case set, ok := <-symbols:
			if !ok {
				symbols = nil
				continue
			}
			next := map[uint32]string{}
			for _, sym := range set {
				if len(next) == maxTickerTokens {
					d.log.WarnContext(ctx, "kite: the ticker follows at most this many instruments; the rest are polled", "max", maxTickerTokens, "asked", len(set))
					break
				}
				if in, err := d.lookup(ctx, sym); err == nil {
					next[in.Token] = sym
				}
			}
			want = next
			bySymbol.Store(&next)
			if err := apply(); err != nil {
				return deskbot.Errorf(deskbot.EUNAVAILABLE, "Kite's ticker did not take the subscription: %v", err)
			}
		}
	}
}

// Quotes is Kite's quotes (Day.Quotes).
func (b *Broker) Quotes(ctx context.Context, symbols []string) (map[string]deskbot.Quote, error) {
	return b.day.Quotes(ctx, symbols)
}

// Candles is Kite's candles (Day.Candles).
func (b *Broker) Candles(ctx context.Context, q deskbot.CandleQuery) ([]deskbot.Candle, error) {
	return b.day.Candles(ctx, q)
}

// SearchInstruments searches the day's list (Day.SearchInstruments).
func (b *Broker) SearchInstruments(ctx context.Context, q deskbot.InstrumentQuery) ([]deskbot.Instrument, error) {
	return b.day.SearchInstruments(ctx, q)
}

// OptionChain is Kite's chain (Day.OptionChain).
func (b *Broker) OptionChain(ctx context.Context, underlying, expiry string, strikes int) (deskbot.OptionChain, error) {
	return b.day.OptionChain(ctx, underlying, expiry, strikes)
}

// StreamPrices is Kite's ticker (Day.StreamPrices).
func (b *Broker) StreamPrices(ctx context.Context, symbols <-chan []string, fn func(deskbot.Tick)) error {
	return b.day.StreamPrices(ctx, symbols, fn)
}
