package kite

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	kiteconnect "github.com/zerodha/gokiteconnect/v4"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/exchange"
	"github.com/deskbot/deskbot/words"
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
	log       *slog.Logger

	list   atomic.Pointer[dayList]
	loadMu sync.Mutex // one load at a time

	mu     sync.Mutex
	prices map[string]price // a second's cache: Kite takes one quote call a second
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

// sessionEndedKey notes that Kite ended the session started at a time, so
// the group is told once and the session is not used again.
func sessionEndedKey(s deskbot.BrokerSession) string {
	return "kite:session-ended:" + strconv.FormatInt(s.At.UnixMilli(), 10)
}

var _ deskbot.Market = (*Day)(nil)

// NewDay returns the trading day on k under l's sessions, checking orders
// against cal and the instruments of exchanges. A nil log logs nothing.
func NewDay(k *Client, l *Login, cal *exchange.Calendar, exchanges []string, now deskbot.Now, log *slog.Logger) *Day {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d := &Day{kite: k, login: l, cal: cal, exchanges: exchanges, now: now, log: log, prices: map[string]price{}}
	l.onLogin = append(l.onLogin, d.loadAfterLogin)
	return d
}

// session is the day's session, made the client's; a session Kite ended is
// none.
func (d *Day) session(ctx context.Context) (deskbot.BrokerSession, error) {
	s, err := d.login.Session(ctx)
	if err != nil {
		return s, err
	}
	if _, err := d.login.notes.Note(ctx, sessionEndedKey(s)); err == nil {
		return s, deskbot.Errorf(deskbot.EUNAUTHORIZED, "Kite ended the day's session (%s logged in at %s IST): an approver must send /login.", s.By.Name, words.Time(s.At))
	} else if deskbot.ErrorCode(err) != deskbot.ENOTFOUND {
		return s, err
	}
	d.kite.SetAccessToken(s.AccessToken)
	return s, nil
}

// replaced reports whether a later login replaced s.
func (d *Day) replaced(ctx context.Context, s deskbot.BrokerSession) bool {
	cur, err := d.login.Session(ctx)
	return err == nil && !cur.At.Equal(s.At)
}

// ended records that Kite ended s and tells the group, once; not when a
// later login replaced s (Kite ends the old session at each login).
func (d *Day) ended(ctx context.Context, s deskbot.BrokerSession) {
	if d.replaced(ctx, s) {
		return
	}
	first, err := d.login.notes.PutNoteOnce(ctx, sessionEndedKey(s), "1", time.Until(s.Until)+time.Hour)
	if err != nil || !first {
		return
	}
	d.log.WarnContext(ctx, "kite: Kite ended the day's session", "by", s.By.Audited(), "account", s.UserID)
	text := "⚠️ Kite ended the session " + s.By.Name + " started at " + words.Time(s.At) + " IST: orders are refused until an approver sends /login."
	if err := d.login.events.Publish(ctx, deskbot.Event{Kind: deskbot.EventBroker, Time: d.now(), Text: text}); err != nil {
		d.log.WarnContext(ctx, "kite: could not tell the group the session ended", "err", err)
	}
}

// LastPrice is symbol's ("NSE:INFY") last price at Kite.
func (d *Day) LastPrice(ctx context.Context, symbol string) (float64, bool, error) {
	if ex, _ := deskbot.SplitSymbol(symbol); ex == "" {
		return 0, false, nil // Kite prices a symbol on an exchange only
	}
	now := d.now()
	d.mu.Lock()
	p, hit := d.prices[symbol]
	d.mu.Unlock()
	if hit && now.Sub(p.at) < priceLife {
		return p.value, p.ok, nil
	}
	s, err := d.session(ctx)
	if err != nil {
		return 0, false, err
	}
	got, err := d.kite.LTP(ctx, symbol)
	if IsSession(err) && d.replaced(ctx, s) {
		// A login replaced s while the read waited: Kite ended s because
		// of it, not the day's session. Read again under the new one.
		if s, err = d.session(ctx); err != nil {
			return 0, false, err
		}
		got, err = d.kite.LTP(ctx, symbol)
	}
	if IsSession(err) {
		d.ended(ctx, s)
		return 0, false, deskbot.Errorf(deskbot.EUNAUTHORIZED, "Kite ended the day's session: an approver must send /login.")
	}
	if err != nil {
		return 0, false, err
	}
	v, ok := got[symbol]
	d.mu.Lock()
	d.prices[symbol] = price{at: now, value: v, ok: ok}
	d.mu.Unlock()
	return v, ok, nil
}

// Check refuses an order the exchange would: see exchange.Market.Check. A
// paper order cannot wait for the open, so a closed market is a refusal.
func (d *Day) Check(o deskbot.Order) error {
	ex, ts := deskbot.SplitSymbol(o.Symbol)
	if ex == "" {
		return deskbot.Errorf(deskbot.EINVALID, "%s needs its exchange: trading on Kite, a symbol is written EXCHANGE:SYMBOL, e.g. NSE:%s or NFO:NIFTY24DECFUT", o.Symbol, o.Symbol)
	}
	m := exchange.Market{Calendar: d.cal, NoAMO: true}
	now := d.now()
	if l := d.list.Load(); l != nil && l.day == exchange.DateOf(now) {
		m.Instruments = l.list
	}
	// A limit price is checked against the tick; paper orders carry one.
	return m.Check(exchange.Order{Exchange: ex, Tradingsymbol: ts, Quantity: o.Quantity, Price: o.Price}, now)
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
	if l := d.list.Load(); l != nil && l.day == today && !force {
		// A list loaded under an earlier session (after midnight, under
		// the evening's) may be the previous day's: a new login, taken by
		// whichever instance, reloads it.
		if cur, err := d.login.Session(ctx); err != nil || cur.At.Equal(l.session) {
			return nil
		}
	}
	s, err := d.session(ctx)
	if err != nil {
		return err
	}
	var rows []kiteconnect.Instrument
	for _, ex := range d.exchanges {
		list, err := d.kite.Instruments(ctx, ex)
		if IsSession(err) {
			d.ended(ctx, s)
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
