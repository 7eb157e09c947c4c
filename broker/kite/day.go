package kite

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	kiteconnect "github.com/zerodha/gokiteconnect/v4"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/exchange"
)

// Day is the trading day at Kite for paper trading on its live prices
// (BROKER=paper-kite): the market's prices (a deskbot.Market, from Kite's
// last prices under the day's session), and the checks an order passes
// before anyone is asked (the exchange's calendar, the day's instrument
// list: the instrument exists, whole lots, a price on the tick, the market
// open).
//
// The session is read from Redis (Login.Session) before each call, so a
// login taken by any instance is used at once. When Kite answers that the
// session has ended, the group is told once (per session) and every price,
// and so every order, is refused with words saying an approver must log
// in; nothing retries in a loop.
//
// The instrument list (only the fields a check needs, exchange.FromKite) is
// loaded for the exchanges in use when a session starts and whenever the
// list is not the day's (Run looks every minute), and swapped in whole: a
// check reads one list, never half of two.
type Day struct {
	kite      *Client
	login     *Login
	cal       *exchange.Calendar
	exchanges []string
	now       deskbot.Now
	// Sizes are the contract sizes of the exchanges that count in
	// contracts (DESKS_FILE's over the defaults); set before use, nil:
	// deskbot.DefaultContractSizes.
	Sizes deskbot.ContractSizes
	// TickerURL is Kite's websocket the live prices are read from
	// (KITE_TICKER_URL, StreamPrices); "" is wss://ws.kite.trade.
	TickerURL string
	log       *slog.Logger

	list   atomic.Pointer[dayList]
	loadMu sync.Mutex // one load at a time

	mu     sync.Mutex
	prices map[string]price     // a second's cache: Kite takes one quote call a second
	asked  map[string]time.Time // when each symbol was last asked for
}

type dayList struct {
	day     exchange.Date
	list    *exchange.Instruments
	session time.Time // when the session it was loaded under began
}

type price struct {
	at    time.Time
	value float64
	ok    bool
}

// priceLife is how long a price read from Kite is used again: Kite allows
// one quote call a second, and a book of several positions reads several.
const priceLife = time.Second

// priceWatch is how long a symbol asked for is priced with every other
// one; maxQuoteKeys caps one quote call (Kite takes 500 instruments).
const (
	priceWatch   = 5 * time.Minute
	maxQuoteKeys = 500
)

var _ deskbot.Market = (*Day)(nil)

// NewDay returns the trading day on k under l's sessions, checking orders
// against cal and the instruments of exchanges. A nil log logs nothing.
func NewDay(k *Client, l *Login, cal *exchange.Calendar, exchanges []string, now deskbot.Now, log *slog.Logger) *Day {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d := &Day{kite: k, login: l, cal: cal, exchanges: exchanges, now: now, log: log, prices: map[string]price{}, asked: map[string]time.Time{}}
	l.onLogin = append(l.onLogin, d.loadAfterLogin)
	return d
}

// session is the day's session, made the client's.
func (d *Day) session(ctx context.Context) (deskbot.BrokerSession, error) {
	s, err := d.login.Session(ctx)
	if err != nil {
		return s, err
	}
	d.kite.SetAccessToken(s.AccessToken)
	return s, nil
}

// LastPrice is symbol's ("NSE:INFY") last price at Kite, as of when it
// was read from Kite (a second's cache at most).
func (d *Day) LastPrice(ctx context.Context, symbol string) (deskbot.Price, bool, error) {
	got, err := d.LastPrices(ctx, []string{symbol})
	if err != nil {
		return deskbot.Price{}, false, err
	}
	v, ok := got[symbol]
	d.mu.Lock()
	at := d.prices[quoteKey(symbol)].at
	d.mu.Unlock()
	return deskbot.Price{Value: v, At: at}, ok, nil
}

// Instrument is what the day's instrument list says symbol is, sized by
// the contract sizes Sizes (deskbot.DefaultContractSizes when nil).
func (d *Day) Instrument(ctx context.Context, symbol string) (deskbot.Instrument, error) {
	ex, ts := deskbot.InstrumentOf(symbol)
	l := d.list.Load()
	if l == nil || l.day != exchange.DateOf(d.now()) {
		if err := d.Load(ctx); err != nil {
			return deskbot.Instrument{}, err
		}
		if l = d.list.Load(); l == nil {
			return deskbot.Instrument{}, deskbot.Errorf(deskbot.EUNAVAILABLE, "the day's instrument list is not loaded yet, so no order can be sized; try again later")
		}
	}
	inst, ok := l.list.Lookup(ex, ts)
	if !ok {
		return deskbot.Instrument{}, deskbot.Errorf(deskbot.EINVALID, "%s is not an instrument on %s today; check the symbol and exchange", symbol, ex)
	}
	sizes := d.Sizes
	if sizes == nil {
		sizes = deskbot.DefaultContractSizes()
	}
	return l.list.Sized(inst, sizes)
}

// LastPrices is the last price at Kite of each of symbols (a bare symbol
// is NSE's, deskbot.InstrumentOf). Kite takes one quote call a second, so
// what is not in the second's cache is read in one call with every symbol
// asked for in the last priceWatch too (the other desks' books, the risk
// rules' round): they are priced together, not a second apart.
func (d *Day) LastPrices(ctx context.Context, symbols []string) (map[string]float64, error) {
	now := d.now()
	out := make(map[string]float64, len(symbols))
	var keys []string
	wanted := make(map[string][]string, len(symbols)) // Kite's "EXCHANGE:TRADINGSYMBOL": the spellings asked for
	d.mu.Lock()
	for _, sym := range symbols {
		k := quoteKey(sym)
		wanted[k] = append(wanted[k], sym)
		d.asked[k] = now
		if p, hit := d.prices[k]; hit && now.Sub(p.at) < priceLife {
			if p.ok {
				out[sym] = p.value
			}
			continue
		}
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		d.mu.Unlock()
		return out, nil
	}
	missing := len(keys)
	for k, at := range d.asked {
		switch {
		case now.Sub(at) >= priceWatch:
			delete(d.asked, k)
		case len(keys) < maxQuoteKeys && !slices.Contains(keys[:missing], k):
			keys = append(keys, k)
		}
	}
	d.mu.Unlock()

	s, err := d.session(ctx)
	if err != nil {
		return nil, err
	}
	for chunk := range slices.Chunk(keys, maxQuoteKeys) {
		got, err := d.kite.LTP(ctx, chunk...)
		if IsSession(err) && d.login.replaced(ctx, s) {
			// A login replaced s while the read waited: Kite ended s
			// because of it, not the day's session. Read again under
			// the new one.
			if s, err = d.session(ctx); err != nil {
				return nil, err
			}
			got, err = d.kite.LTP(ctx, chunk...)
		}
		if IsSession(err) {
			d.login.Ended(ctx, s)
			_, err = d.login.Session(ctx) // its words say whose session ended and what to do
			if err == nil {
				err = ErrSession // a login replaced it meanwhile: the next read uses it
			}
			return nil, err
		}
		if err != nil {
			return nil, err
		}
		d.mu.Lock()
		for _, k := range chunk {
			v, ok := got[k]
			// Kite reports 0 for a contract that is listed but has not
			// traded: no price, never one of ₹0.
			d.prices[k] = price{at: now, value: v, ok: ok && v > 0}
		}
		d.mu.Unlock()
		for _, k := range chunk {
			if v, ok := got[k]; ok && v > 0 {
				for _, sym := range wanted[k] {
					out[sym] = v
				}
			}
		}
	}
	return out, nil
}

// quoteKey is symbol as Kite's quote calls name an instrument,
// "EXCHANGE:TRADINGSYMBOL", a bare symbol on NSE.
func quoteKey(symbol string) string {
	ex, ts := deskbot.InstrumentOf(symbol)
	return ex + ":" + ts
}

// Check refuses an order the exchange would: see exchange.Market.Check. A
// paper order cannot wait for the open, so a closed market is a refusal.
func (d *Day) Check(o deskbot.Order) error { return d.check(o, true) }

// CheckAtKite is Check for an order placed at Kite: outside market hours
// an after-market order (variety amo) is taken when Kite takes those.
func (d *Day) CheckAtKite(o deskbot.Order) error { return d.check(o, false) }

func (d *Day) check(o deskbot.Order, paper bool) error {
	ex, ts := deskbot.InstrumentOf(o.Symbol)
	m := exchange.Market{Calendar: d.cal, NoAMO: paper}
	now := d.now()
	if l := d.list.Load(); l != nil && l.day == exchange.DateOf(now) {
		m.Instruments = l.list
	}
	// A limit price is checked against the tick; paper orders carry one.
	return m.Check(exchange.Order{Exchange: ex, Tradingsymbol: ts, Quantity: o.Quantity, Price: o.Price, TriggerPrice: o.TriggerPrice, AMO: !paper && o.Variety == deskbot.VarietyAMO}, now)
}

// Load reads the day's instrument lists of the exchanges in use and swaps
// them in.
func (d *Day) Load(ctx context.Context) error { return d.load(ctx, false) }

// load is Load; force reads the lists even when one was loaded today: a
// list loaded after midnight under the evening's session is the previous
// day's (Kite builds the day's list in the morning), so a login reloads.
func (d *Day) load(ctx context.Context, force bool) error {
	d.loadMu.Lock()
	defer d.loadMu.Unlock()
	today := exchange.DateOf(d.now())
	s, err := d.session(ctx)
	if l := d.list.Load(); l != nil && l.day == today && !force {
		// A list loaded under an earlier session (after midnight, under
		// the evening's) may be the previous day's: a new login, taken by
		// whichever instance, reloads it.
		if err != nil || s.At.Equal(l.session) {
			return nil
		}
	}
	if err != nil {
		return err
	}
	var rows []kiteconnect.Instrument
	for _, ex := range d.exchanges {
		list, err := d.kite.Instruments(ctx, ex)
		if IsSession(err) {
			d.login.Ended(ctx, s)
		}
		if err != nil {
			return err
		}
		rows = append(rows, list...)
	}
	list := exchange.FromKite(rows)
	d.list.Store(&dayList{day: today, list: list, session: s.At})
	d.log.InfoContext(ctx, "kite: the day's instrument list is loaded", "exchanges", d.exchanges, "instruments", list.Len())
	return nil
}

// loadAfterLogin loads the list once a login kept a session, on its own
// context: the callback's request has answered by then.
func (d *Day) loadAfterLogin() {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := d.load(ctx, true); err != nil {
			d.log.WarnContext(ctx, "kite: could not load the day's instrument list after a login", "err", err)
		}
	}()
}

// Run loads the day's list when it is not loaded and a session is on,
// every minute until ctx ends. Without a session it waits for a login.
func (d *Day) Run(ctx context.Context) {
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		if err := d.Load(ctx); err != nil && ctx.Err() == nil && deskbot.ErrorCode(err) != deskbot.ENOTFOUND && deskbot.ErrorCode(err) != deskbot.EUNAUTHORIZED {
			d.log.WarnContext(ctx, "kite: could not load the day's instrument list; will try again", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
