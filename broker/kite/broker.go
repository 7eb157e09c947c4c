package kite

// The real broker, BROKER=kite: see the package's doc.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	kiteconnect "github.com/zerodha/gokiteconnect/v4"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/retry"
	"github.com/deskbot/deskbot/words"
)

// BrokerConfig is what NewBroker builds the real broker from.
type BrokerConfig struct {
	Kite  *Client
	Login *Login // the day's session: orders are refused in its words until someone logs in
	Day   *Day   // prices and the exchange's checks
	// Orders is the order log, built as broker.NewOrderLog is for the
	// paper broker: the service's order store, the clock, the Teller that
	// tells desks and the chat, the log.
	Orders *broker.OrderLog
	// Desks are the service's desks: what the account holds beyond their
	// books belongs to no desk (Unowned).
	Desks []string
	Now   deskbot.Now
	Log   *slog.Logger
	// TickerURL is Kite's websocket for order updates (KITE_TICKER_URL);
	// "" is wss://ws.kite.trade.
	TickerURL string
	// Settle is how long a pending order must be absent from Kite's day's
	// orders, counted from its last send (recorded just before it, once
	// the send has its rate-limit slot), before it is taken for never
	// placed; 0 is a minute. An HTTP exchange lasts at most the client's
	// timeout (10 s), so whatever was sent has landed by then. An order
	// still waiting for its slot in this process is never taken for one.
	Settle time.Duration
	// Every is how often Run reads Kite's day's orders while any order is
	// open; 0 is 2 s (Kite allows 10 such calls a second).
	Every time.Duration
	// Admit is the last check on a desk's order, made just before each
	// send once it has its rate-limit slot (broker.Admit); nil admits all.
	// The service sets it (the desk's halt and square-off).
	Admit broker.Admit
	// AlgoID (KITE_ALGO_ID) is the exchange's algo id every order and
	// modification carries; DeskAlgoIDs overrides it per desk (a desk's
	// algo_id in DESKS_FILE). Both come from the configuration only:
	// nothing a desk sends can set or change them. "" sends none.
	AlgoID      string
	DeskAlgoIDs map[string]string
	// Sent counts the account's orders of the day across instances
	// (Kite's 5,000 a day); nil counts nothing. OrdersPerDay is that cap;
	// 0 is Kite's 5,000.
	Sent         deskbot.AccountOrders
	OrdersPerDay int
}

// Broker is the real broker. Build it with NewBroker.
type Broker struct {
	kite    *Client
	login   *Login
	day     *Day
	orders  *broker.OrderLog
	desks   []string
	now     deskbot.Now
	log     *slog.Logger
	ticker  url.URL
	settle  time.Duration
	every   time.Duration
	admit   broker.Admit
	algoID  string
	algoIDs map[string]string
	sent    deskbot.AccountOrders
	perDay  int
	// marginWait bounds Margin: an answer later than that is no answer.
	marginWait time.Duration
	// wake makes Run read Kite's orders at once (an update heard).
	wake chan struct{}

	mu         sync.Mutex
	warnedAt   time.Time // the session whose refusal Sync logged last
	tickerLive bool
	// deletions holds, by GTT tag, when an over-closing GTT whose
	// deletion Kite refused for the server's address is asked again
	// (overCloses): every gttDeleteEvery.
	deletions retry.Schedule[string]
}

var (
	_ deskbot.Broker = (*Broker)(nil)
	_ deskbot.Market = (*Broker)(nil)
)

const (
	// defaultOrdersPerDay is Kite's cap of orders a day per account.
	defaultOrdersPerDay  = 5000
	defaultPendingSettle = time.Minute
	defaultEvery         = 2 * time.Second
	marginWait           = 2 * time.Second
	tickerDefault        = "wss://ws.kite.trade"
)

// CheckTickerURL checks KITE_TICKER_URL: wss, or ws on a loopback host (a
// fake or a proxy on the same machine), since the ticker sends the
// session's access token in its query.
func CheckTickerURL(raw string) (*url.URL, error) {
	if raw == "" {
		raw = tickerDefault
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || (u.Scheme != "wss" && (u.Scheme != "ws" || !loopback(u.Hostname()))) {
		return nil, deskbot.Errorf(deskbot.EINVALID, "KITE_TICKER_URL: must be a wss URL (default %s), or ws on a loopback host", tickerDefault)
	}
	return u, nil
}

// NewBroker returns the real broker. It makes no call; Run starts its
// updates.
func NewBroker(cfg BrokerConfig) (*Broker, error) {
	if cfg.Kite == nil || cfg.Login == nil || cfg.Day == nil || cfg.Orders == nil {
		return nil, errors.New("kite: NewBroker needs the client, the login, the day and the order log")
	}
	u, err := CheckTickerURL(cfg.TickerURL)
	if err != nil {
		return nil, err
	}
	b := &Broker{kite: cfg.Kite, login: cfg.Login, day: cfg.Day, orders: cfg.Orders, desks: cfg.Desks, now: cfg.Now, log: cfg.Log,
		ticker: *u, settle: cfg.Settle, every: cfg.Every, admit: cfg.Admit, marginWait: marginWait, wake: make(chan struct{}, 1),
		algoID: cfg.AlgoID, algoIDs: maps.Clone(cfg.DeskAlgoIDs), sent: cfg.Sent, perDay: cfg.OrdersPerDay,
		deletions: retry.Schedule[string]{Backoff: retry.Backoff{Min: gttDeleteEvery, Max: gttDeleteEvery}}}
	if b.perDay <= 0 {
		b.perDay = defaultOrdersPerDay
	}
	if cfg.Day.TickerURL == "" {
		// The live prices' ticker is Kite's, like the updates'.
		cfg.Day.TickerURL = cfg.TickerURL
	}
	if b.now == nil {
		b.now = time.Now
	}
	if b.log == nil {
		b.log = slog.New(slog.DiscardHandler)
	}
	if b.settle <= 0 {
		b.settle = defaultPendingSettle
	}
	if b.every <= 0 {
		b.every = defaultEvery
	}
	return b, nil
}

// algoIDOf is the exchange's algo id desk's orders and modifications
// carry at Kite: its algo_id in DESKS_FILE, else KITE_ALGO_ID, else ""
// (none sent). The one place it is chosen: placing and modifying both ask
// here, and only the configuration sets it.
func (b *Broker) algoIDOf(desk string) string {
	if id, ok := b.algoIDs[desk]; ok && id != "" {
		return id
	}
	return b.algoID
}

// session is the day's session, made the client's; without one, the
// login's words say who must do what.
func (b *Broker) session(ctx context.Context) (deskbot.BrokerSession, error) {
	s, err := b.login.Session(ctx)
	if deskbot.ErrorCode(err) == deskbot.ENOTFOUND {
		// Nobody logged in: for a caller of the broker that is not a
		// missing order but a refusal, in the login's words.
		return s, deskbot.Errorf(deskbot.EUNAUTHORIZED, "%s", deskbot.ErrorMessage(err))
	} else if err != nil {
		return s, err
	}
	b.kite.SetAccessToken(s.AccessToken)
	return s, nil
}

// sessionEnded records that Kite refused s and returns the words every
// caller is refused with until a new login.
func (b *Broker) sessionEnded(ctx context.Context, s deskbot.BrokerSession) error {
	b.login.Ended(ctx, s)
	if _, err := b.session(ctx); err != nil {
		return err
	}
	return ErrSession // a login replaced s meanwhile: the next call uses it
}

// LastPrice is symbol's last price at Kite.
func (b *Broker) LastPrice(ctx context.Context, symbol string) (deskbot.Price, bool, error) {
	return b.day.LastPrice(ctx, symbol)
}

// Instrument is what the day's instrument list says symbol is.
func (b *Broker) Instrument(ctx context.Context, symbol string) (deskbot.Instrument, error) {
	return b.day.Instrument(ctx, symbol)
}

// LastPrices is the last price at Kite of each of symbols.
func (b *Broker) LastPrices(ctx context.Context, symbols []string) (map[string]float64, error) {
	return b.day.LastPrices(ctx, symbols)
}

// Check refuses an order Kite or the exchange would: CheckOrder's rules,
// then the day's instrument list and the market's hours (after-market
// orders where Kite takes them).
func (b *Broker) Check(o deskbot.Order) error {
	if err := deskbot.CheckOrder(o); err != nil {
		return err
	}
	return b.day.CheckAtKite(o)
}

// PlaceOrder places o at Kite for the call key: at most one order however
// often it is asked. The order is recorded pending before it is sent and
// then as Kite reports it; asking again returns the record as it stands
// (resolving it from Kite's orders while it is pending) and sends nothing.
func (b *Broker) PlaceOrder(ctx context.Context, desk, key string, o deskbot.Order) (deskbot.PlacedOrder, error) {
	return b.place(ctx, desk, key, o, b.admit)
}

// place is PlaceOrder, each send put to admit first (nil: none).
func (b *Broker) place(ctx context.Context, desk, key string, o deskbot.Order, admit broker.Admit) (deskbot.PlacedOrder, error) {
	if err := deskbot.ValidDeskName(desk); err != nil {
		return deskbot.PlacedOrder{}, err
	}
	if key == "" {
		return deskbot.PlacedOrder{}, broker.ErrNoKey
	}
	if err := b.Check(o); err != nil {
		return deskbot.PlacedOrder{}, err
	}
	// Recorded in its one spelling, as the books and Unowned compare it,
	// whoever built the order.
	o.Symbol = deskbot.OneSpelling(o.Symbol)
	if o.Product == "" {
		return deskbot.PlacedOrder{}, deskbot.Errorf(deskbot.EINVALID, "product is required at Kite: send one of MIS, NRML or CNC")
	}
	params, variety, err := orderParams(o)
	if err != nil {
		return deskbot.PlacedOrder{}, err
	}
	params.AlgoID = b.algoIDOf(desk)
	s, err := b.session(ctx)
	if err != nil {
		return deskbot.PlacedOrder{}, err
	}
	now := b.now()
	po := deskbot.PlacedOrder{Tag: broker.Tag(key), Desk: desk, Order: o, State: deskbot.OrderPending, At: now, Updated: now, Day: b.amoDay(o, now), AlgoID: params.AlgoID}
	rec, existed, err := b.orders.Start(ctx, po)
	if err != nil {
		return deskbot.PlacedOrder{}, err
	}
	if existed {
		if rec.State != deskbot.OrderPending {
			return rec, nil
		}
		// A Place of the tag under way in this process finishes first;
		// the record then says what it learnt.
		if unlock, err := b.kite.lockTag(ctx, rec.Tag); err == nil {
			unlock()
			if cur, err := b.orders.Order(ctx, desk, rec.TradingDay(), rec.Tag); err == nil {
				rec = cur
			}
		}
		if rec.State != deskbot.OrderPending {
			return rec, nil
		}
		return b.resolve(ctx, rec)
	}
	// An order waits for its rate-limit slot as long as its caller does
	// (a burst of allowed orders goes out at Kite's pace, none dropped);
	// each send is recorded just before it goes (sending), so a read of
	// Kite's orders in any process counts the settling time from the send,
	// and no process takes an order for never placed while it may still
	// land. Each send is first put to admit: a halt, or the square-off,
	// that came while the order waited for its slot refuses it there, and
	// a halt that withdrew it meanwhile (OrderLog.Withdraw) finds the mark
	// refused, so nothing is sent.
	var refused error
	var withdrawn *deskbot.PlacedOrder
	sending := func(ctx context.Context) error {
		if admit != nil {
			if refused = admit(ctx, desk, o, func(ctx context.Context) (deskbot.Book, error) { return b.orders.Book(ctx, desk, nil) }); refused != nil {
				return refused
			}
		}
		if refused = b.countSent(ctx, rec); refused != nil {
			return refused
		}
		cur := rec
		cur.Updated = b.now()
		got, moved, err := b.orders.Sending(ctx, broker.Version(rec), cur)
		if err != nil {
			return err
		}
		if !moved {
			if got.State.Final() {
				withdrawn = &got
			}
			return fmt.Errorf("kite: order %s moved to %s before it was sent", rec.Tag, got.State)
		}
		rec = cur // what Kite's answer moves on from
		return nil
	}
	id, err := b.kite.placeNew(ctx, rec.Tag, params, variety, sending)
	switch {
	case err == nil:
	case IsNotSent(err) && refused != nil:
		// Nothing was sent, and nothing will be: the desk is told why.
		return b.notPlaced(ctx, rec, deskbot.ErrorMessage(refused), refused)
	case IsNotSent(err) && withdrawn != nil:
		return *withdrawn, deskbot.Errorf(deskbot.ECONFLICT, "the order (%s) was not sent: %s", words.FormatOrder(rec.Order), withdrawn.Reason)
	case IsUnknown(err):
		b.log.WarnContext(ctx, "kite: an order's outcome is not known yet", "desk", desk, "tag", rec.Tag, "err", scrub(err.Error(), b.kite.secrets()...))
		return rec, unknownOutcome(rec)
	case IsNotSent(err) && ctx.Err() == nil:
		// Its record could not be marked (Redis down): nothing was sent,
		// and a read of Kite's orders a settling time on says so.
		b.log.WarnContext(ctx, "kite: an order was not sent: its sending could not be recorded", "desk", desk, "tag", rec.Tag, "err", err)
		return rec, deskbot.Errorf(deskbot.EUNAVAILABLE, "the order (%s) was not sent to Kite: its sending could not be recorded first; the desk will be told it was not placed. Place it again once that is fixed.", words.FormatOrder(rec.Order))
	case IsNotSent(err):
		return b.notPlaced(ctx, rec, "its placing was stopped before it was sent", fmt.Errorf("kite: place: %w", ctx.Err()))
	case IsSession(err):
		return b.notPlaced(ctx, rec, "the Kite session had ended", b.sessionEnded(ctx, s))
	case IsSourceIP(err):
		// Kite refused it before making anything: not placed, told, and
		// never sent again (only a change at the console mends it).
		b.sourceRefused(ctx)
		return b.notPlaced(ctx, rec, "Kite refused orders from this server's address (not in the Kite app's IP whitelist)", sourceNotPlaced(rec.Order))
	default:
		// Kite's refusal of the order itself: nothing was made.
		return b.notPlaced(ctx, rec, strings.TrimPrefix(deskbot.ErrorMessage(err), "Kite refused the order: "), err)
	}
	got := rec
	got.ID = id
	h, err := b.kite.OrderHistory(ctx, id)
	if err != nil || len(h) == 0 {
		// The order is made; its state comes with the next read of the
		// day's orders. Its id is kept now, so no cancel waits for it.
		b.log.WarnContext(ctx, "kite: could not read a placed order back", "desk", desk, "id", id, "err", err)
		if _, _, err := b.orders.Move(ctx, broker.Version(rec), got, true); err != nil {
			return got, err
		}
		return got, nil
	}
	got = fromKite(rec, h[len(h)-1])
	return b.move(ctx, rec, got, true)
}

// unknownOutcome is the answer to a placement whose answer was lost and
// could not yet be learnt: the desk is told its outcome when Sync reads it.
func unknownOutcome(po deskbot.PlacedOrder) error {
	return deskbot.Errorf(deskbot.EUNAVAILABLE, "Kite's answer to the order (%s) was lost, so whether it was placed is not known yet; the desk will be told as soon as Kite's order book shows it. Do not place it again.", words.FormatOrder(po.Order))
}

// notPlaced records a pending order as never placed, told by the caller's
// answer (err, in Kite's or the login's words).
func (b *Broker) notPlaced(ctx context.Context, rec deskbot.PlacedOrder, why string, err error) (deskbot.PlacedOrder, error) {
	po := rec
	po.State, po.Reason, po.Updated = deskbot.OrderNotPlaced, why, b.now()
	if _, _, merr := b.orders.Move(ctx, broker.Version(rec), po, true); merr != nil {
		return po, merr
	}
	return po, err
}

// resolve settles a pending order from Kite's day's orders, as Sync does:
// found by its tag it takes Kite's state; absent a settling time after it
// was recorded, it was never placed; absent sooner, it is still unknown.
func (b *Broker) resolve(ctx context.Context, rec deskbot.PlacedOrder) (deskbot.PlacedOrder, error) {
	s, err := b.session(ctx)
	if err != nil {
		return rec, err
	}
	orders, err := b.kite.Orders(ctx)
	if IsSession(err) {
		return rec, b.sessionEnded(ctx, s)
	} else if err != nil {
		return rec, unknownOutcome(rec)
	}
	got, ok := b.settled(rec, byTag(orders))
	if !ok {
		return rec, unknownOutcome(rec)
	}
	return b.move(ctx, rec, got, false)
}

// move records got for the order read as from, unless it moved meanwhile
// (the ticker, another process's read): then the order as it stands is
// the answer. answered says the caller's answer tells the desk; a fill or
// a rejection is told anyway, so the chat sees every one.
func (b *Broker) move(ctx context.Context, from, got deskbot.PlacedOrder, answered bool) (deskbot.PlacedOrder, error) {
	rec, _, err := b.advance(ctx, from, got, answered)
	return rec, err
}

// Orders is the desk's orders of the India day, and every one still open
// at Kite whatever day it was placed (an after-market order of last
// evening), oldest first, as last read from Kite.
func (b *Broker) Orders(ctx context.Context, desk string) ([]deskbot.PlacedOrder, error) {
	return b.orders.Orders(ctx, desk, deskbot.OrderDay(b.now()))
}

// CancelOrder cancels one of the desk's own open orders (Orders): an id
// the desk's orders do not hold (another desk's, one placed by hand, a
// made-up one) is ENOTFOUND and nothing is sent.
func (b *Broker) CancelOrder(ctx context.Context, desk, id string) (deskbot.PlacedOrder, error) {
	po, err := b.orders.Find(ctx, desk, deskbot.OrderDay(b.now()), id)
	if err != nil {
		return po, err
	}
	return b.cancel(ctx, po)
}

func (b *Broker) cancel(ctx context.Context, po deskbot.PlacedOrder) (deskbot.PlacedOrder, error) {
	if !po.Open() {
		return po, deskbot.Errorf(deskbot.ECONFLICT, "Order %s is %s already; only an open order can be cancelled.", orderName(po), po.State)
	}
	if po.ID == "" {
		// Still waiting for its send (a rate-limit slot): withdrawn, it
		// is never sent. One whose send may have left is Kite's to confirm.
		if rec, ok, err := b.orders.Withdraw(ctx, po, "cancelled before it was sent"); err != nil || ok {
			return rec, err
		}
		return po, deskbot.Errorf(deskbot.ECONFLICT, "Order %s is not confirmed by Kite yet, so it cannot be cancelled; the desk will be told when it is.", orderName(po))
	}
	s, err := b.session(ctx)
	if err != nil {
		return po, err
	}
	cerr := b.kite.Cancel(ctx, b.cancelVariety(ctx, po), po.ID)
	if IsSession(cerr) {
		return po, b.sessionEnded(ctx, s)
	}
	if IsSourceIP(cerr) {
		b.sourceRefused(ctx)
		return po, cerr
	}
	if cerr != nil && deskbot.ErrorCode(cerr) != deskbot.EINVALID {
		return po, cerr
	}
	// Read it back either way: a refused cancel is most often an order
	// that filled or ended meanwhile, and the desk's book must show it.
	h, err := b.kite.OrderHistory(ctx, po.ID)
	if err != nil || len(h) == 0 {
		if cerr != nil {
			return po, cerr
		}
		return po, nil // the cancel is sent; the next read of Kite's orders records it
	}
	rec, err := b.move(ctx, po, fromKite(po, h[len(h)-1]), true)
	if err != nil {
		return rec, err
	}
	if cerr != nil && !rec.Open() {
		return rec, deskbot.Errorf(deskbot.ECONFLICT, "Order %s is %s now; only an open order can be cancelled.", orderName(rec), rec.State)
	}
	return rec, cerr
}

// cancelVariety is the variety Kite cancels po under: an after-market
// order is amo only while Kite still holds it as one (AMO REQ RECEIVED);
// once it reached the exchange, at the open, it is cancelled as regular.
// Kite's status is read for an AMO; unread, it is taken for still waiting.
func (b *Broker) cancelVariety(ctx context.Context, po deskbot.PlacedOrder) string {
	if po.Order.Variety != deskbot.VarietyAMO {
		return kiteconnect.VarietyRegular
	}
	h, err := b.kite.OrderHistory(ctx, po.ID)
	if err != nil || len(h) == 0 || h[len(h)-1].Status == statusAMO {
		return kiteconnect.VarietyAMO
	}
	return kiteconnect.VarietyRegular
}

// statusAMO is Kite's status of an after-market order not yet sent to
// the exchange.
const statusAMO = "AMO REQ RECEIVED"

// amoDay is the trading day an order placed now belongs to when it is not
// today's: an after-market order's is the day of the opening it waits for.
func (b *Broker) amoDay(o deskbot.Order, now time.Time) string {
	if o.Variety != deskbot.VarietyAMO || b.day.cal == nil {
		return ""
	}
	next := b.day.cal.Next(now)
	if next.IsZero() || deskbot.OrderDay(next) == deskbot.OrderDay(now) {
		return ""
	}
	return deskbot.OrderDay(next)
}

func orderName(po deskbot.PlacedOrder) string {
	if po.ID != "" {
		return po.ID
	}
	return po.Tag
}

// Margin is what o would block of the account's margin and what the
// account has available in o's segment (commodity for MCX, else equity),
// as Kite reckons them. ok is false when Kite does not answer within 2 s.
func (b *Broker) Margin(ctx context.Context, o deskbot.Order) (deskbot.OrderMargin, bool, error) {
	if err := deskbot.CheckOrder(o); err != nil {
		return deskbot.OrderMargin{}, false, err
	}
	p, variety, err := orderParams(o)
	if err != nil {
		return deskbot.OrderMargin{}, false, err
	}
	if _, err := b.session(ctx); err != nil {
		return deskbot.OrderMargin{}, false, err
	}
	ctx, cancel := context.WithTimeout(ctx, b.marginWait)
	defer cancel()
	q := kiteconnect.OrderMarginParam{Exchange: p.Exchange, Tradingsymbol: p.Tradingsymbol, TransactionType: p.TransactionType,
		Variety: variety, Product: p.Product, OrderType: p.OrderType, Quantity: float64(p.Quantity), Price: p.Price, TriggerPrice: p.TriggerPrice}
	// Both reads at once: the two seconds are for both.
	var (
		need       []kiteconnect.OrderMargins
		funds      kiteconnect.AllMargins
		nerr, ferr error
		wg         sync.WaitGroup
	)
	wg.Go(func() { need, nerr = b.kite.OrderMargins(ctx, q) })
	wg.Go(func() { funds, ferr = b.kite.UserMargins(ctx) })
	wg.Wait()
	for _, err := range []error{nerr, ferr} {
		switch {
		case err == nil:
		case ctx.Err() != nil || deskbot.ErrorCode(err) == deskbot.EUNAVAILABLE:
			return deskbot.OrderMargin{}, false, nil
		default:
			return deskbot.OrderMargin{}, false, err
		}
	}
	if len(need) == 0 {
		return deskbot.OrderMargin{}, false, nil
	}
	seg := funds.Equity
	if p.Exchange == "MCX" {
		seg = funds.Commodity
	}
	return deskbot.OrderMargin{Required: need[0].Total, Available: seg.Net}, true, nil
}

// Book is the desk's positions from its own orders' fills, priced at
// Kite's last prices, and its realised P&L to date.
func (b *Broker) Book(ctx context.Context, desk string) (deskbot.Book, error) {
	return b.orders.Book(ctx, desk, b.day)
}

// Unowned is what the account holds at Kite beyond every desk's book:
// positions made by hand (Kite's net positions, summed over products,
// less each desk's), at Kite's last prices, by symbol.
func (b *Broker) Unowned(ctx context.Context) ([]deskbot.Position, error) {
	if _, err := b.session(ctx); err != nil {
		return nil, err
	}
	net, err := b.kite.NetPositions(ctx)
	if err != nil {
		return nil, err
	}
	held, last := map[string]float64{}, map[string]float64{}
	for _, p := range net {
		k := deskbot.SymbolOf(p.Exchange, p.Tradingsymbol) // as the desks' books write it
		held[k] += float64(p.Quantity)
		last[k] = p.LastPrice
	}
	for _, d := range b.desks {
		book, err := b.orders.Book(ctx, d, nil)
		if err != nil {
			return nil, err
		}
		for _, p := range book.Positions {
			held[p.Symbol] -= p.Quantity
		}
	}
	var out []deskbot.Position
	for _, sym := range slices.Sorted(maps.Keys(held)) {
		if q := held[sym]; math.Abs(q) > 1e-9 {
			out = append(out, deskbot.Position{Symbol: sym, Quantity: q, LastPrice: last[sym]})
		}
	}
	return out, nil
}

// Trades is the desk's last limit fills, oldest first.
func (b *Broker) Trades(ctx context.Context, desk string, limit int) ([]deskbot.Trade, error) {
	return b.orders.Trades(ctx, desk, limit, b.day)
}

// orderParams is o in Kite's form: exchange and tradingsymbol from its
// symbol (a bare symbol is NSE's), whole units, and its variety.
func orderParams(o deskbot.Order) (kiteconnect.OrderParams, string, error) {
	ex, ts := deskbot.InstrumentOf(o.Symbol)
	if o.Quantity != math.Trunc(o.Quantity) || o.Quantity < 1 || o.Quantity > math.MaxInt32 {
		return kiteconnect.OrderParams{}, "", deskbot.Errorf(deskbot.EINVALID, "quantity must be a whole number of units at Kite, not %s", strconv.FormatFloat(o.Quantity, 'f', -1, 64))
	}
	txn := kiteconnect.TransactionTypeBuy
	if o.Side == deskbot.Sell {
		txn = kiteconnect.TransactionTypeSell
	}
	variety := kiteconnect.VarietyRegular
	if o.Variety == deskbot.VarietyAMO {
		variety = kiteconnect.VarietyAMO
	}
	p := kiteconnect.OrderParams{
		Exchange: ex, Tradingsymbol: ts, TransactionType: txn, OrderType: o.Kind(),
		Quantity: int(o.Quantity), Product: o.Product, Validity: kiteconnect.ValidityDay,
	}
	if !o.AtMarket() {
		p.Price = o.Price
	}
	switch o.Kind() {
	case deskbot.OrderSL, deskbot.OrderSLM:
		p.TriggerPrice = o.TriggerPrice
	}
	return p, variety, nil
}

// fromKite is rec as Kite's order ko reports it.
func fromKite(rec deskbot.PlacedOrder, ko kiteconnect.Order) deskbot.PlacedOrder {
	po := rec
	po.ID = ko.OrderID
	po.Filled, po.AvgPrice = ko.FilledQuantity, ko.AveragePrice
	po.Reason = ""
	switch st := ko.Status; {
	case st == "COMPLETE":
		po.State = deskbot.OrderComplete
	case strings.HasPrefix(st, "REJECTED"):
		po.State, po.Reason = deskbot.OrderRejected, clip(strings.TrimSpace(ko.StatusMessage), maxMessage)
	case strings.HasPrefix(st, "CANCELLED"):
		po.State, po.Reason = deskbot.OrderCancelled, clip(strings.TrimSpace(ko.StatusMessage), maxMessage)
	case ko.FilledQuantity > 0:
		// OPEN, TRIGGER PENDING, AMO REQ RECEIVED, the steps before the
		// exchange, and the ticker's UPDATE of a partial fill.
		po.State = deskbot.OrderPartlyFilled
	default:
		po.State = deskbot.OrderOpen
	}
	if po.Filled == 0 {
		po.AvgPrice = 0
	}
	return po
}

// byTag indexes Kite's orders by their tag, and untagged ones (a GTT's,
// or a person's) by "id:" and their order id: an untagged order is a
// desk's only once its order id is recorded as the desk's (a fired GTT's,
// recordFired).
func byTag(orders []kiteconnect.Order) map[string]kiteconnect.Order {
	m := make(map[string]kiteconnect.Order, len(orders))
	for _, o := range orders {
		if o.Tag != "" {
			m[o.Tag] = o
		} else {
			m[untaggedKey+o.OrderID] = o
		}
	}
	return m
}

// untaggedKey is byTag's prefix of an untagged order's id: no tag has a
// colon.
const untaggedKey = "id:"

// settled is what Kite's day's orders (by tag) say of rec: ok is false
// when they say nothing new yet.
func (b *Broker) settled(rec deskbot.PlacedOrder, kite map[string]kiteconnect.Order) (deskbot.PlacedOrder, bool) {
	now := b.now()
	ko, found := kite[rec.Tag]
	if !found && rec.ID != "" {
		ko, found = kite[untaggedKey+rec.ID]
		found = found && ko.Tag == ""
	}
	if found {
		got := fromKite(rec, ko)
		// Never back: a read older than what is recorded (the ticker was
		// first) says nothing new.
		if got.Filled < rec.Filled || rec.State.Final() {
			return rec, false
		}
		return got, true
	}
	po := rec
	switch {
	case rec.State == deskbot.OrderPending && rec.ID == "" && now.Sub(rec.Updated) >= b.settle && !b.kite.placing(rec.Tag):
		po.State, po.Reason = deskbot.OrderNotPlaced, "Kite's order book shows no order with its tag: it was never placed"
		return po, true
	case rec.State != deskbot.OrderPending && rec.TradingDay() < deskbot.OrderDay(now):
		// Kite's order book starts empty every day: an order of a trading
		// day gone by can no longer be read. An after-market order's day
		// is the one it executes on, and Kite lists it until then.
		po.State, po.Reason = deskbot.OrderCancelled, "its day ended at Kite before its last state was read; check Kite's order history for any fill"
		return po, true
	}
	return rec, false
}

// Flatten deletes the desk's active GTTs and cancels its open orders, then closes each of its net
// positions with a market order, in the product its orders used, never
// for more than the account holds in that instrument and direction (what
// is beyond that belongs to no desk's book here: another desk's, or a
// person's at Kite). The closing orders' fills come as their updates. key
// makes it once: each closing order's key is key and its symbol.
func (b *Broker) Flatten(ctx context.Context, desk, key string) (deskbot.FlattenReport, error) {
	var r deskbot.FlattenReport
	if err := deskbot.ValidDeskName(desk); err != nil {
		return r, err
	}
	if key == "" {
		return r, broker.ErrNoKey
	}
	if _, err := b.session(ctx); err != nil {
		return r, err
	}
	// The desk's GTTs first, so none fires into the book being closed.
	deleted, left, err := b.deleteGTTs(ctx, desk, "deleted by a flatten")
	r.DeletedGTTs, r.Left = deleted, append(r.Left, left...)
	if err != nil {
		return r, err
	}
	if len(left) > 0 {
		// Kite refused a delete: most often the GTT fired. Its order is
		// recorded now, so the cancels below reach it and it cannot
		// reopen the book once the flatten has closed it.
		if _, err := b.Sync(ctx); err != nil {
			return r, err
		}
	}
	orders, err := b.Orders(ctx, desk)
	if err != nil {
		return r, err
	}
	for _, po := range orders {
		if !po.Open() || isFlattenOf(po, key) {
			continue
		}
		if po.State == deskbot.OrderPending {
			// One still waiting for its send is withdrawn: never sent.
			w, ok, err := b.orders.Withdraw(ctx, po, "cancelled by a flatten before it was sent")
			if err != nil {
				return r, err
			}
			if ok {
				r.Cancelled = append(r.Cancelled, w)
				continue
			}
			if po, err = b.resolve(ctx, po); err != nil || !po.Open() {
				if err != nil {
					r.Left = append(r.Left, fmt.Sprintf("%s: order %s is not confirmed by Kite yet, so it could not be cancelled", po.Order.Symbol, po.Tag))
				}
				continue
			}
		}
		c, err := b.cancel(ctx, po)
		switch {
		case err == nil:
			r.Cancelled = append(r.Cancelled, c)
		case deskbot.ErrorCode(err) == deskbot.ECONFLICT:
			// It filled or ended meanwhile: the book below counts it.
		case IsSourceIP(err):
			// Mended only at the console: left, said why, as a closing
			// order Kite refuses is, not failed and tried again.
			r.Left = append(r.Left, fmt.Sprintf("%s: order %s was not cancelled: %s", po.Order.Symbol, orderName(po), deskbot.ErrorMessage(err)))
		default:
			return r, err
		}
	}
	// The book's quantities only: Kite takes one quote call a second.
	book, err := b.orders.Book(ctx, desk, nil)
	if err != nil {
		return r, err
	}
	if len(book.Positions) == 0 {
		return r, nil
	}
	net, err := b.kite.NetPositions(ctx)
	if err != nil {
		return r, err
	}
	held := map[string]int{} // "EXCHANGE:SYMBOL PRODUCT" -> the account's net quantity
	for _, p := range net {
		held[p.Exchange+":"+p.Tradingsymbol+" "+p.Product] += p.Quantity
	}
	for _, pos := range book.Positions {
		if err := ctx.Err(); err != nil {
			return r, err
		}
		product, err := b.productOf(ctx, desk, pos.Symbol)
		if err != nil {
			return r, err
		}
		if product == "" {
			r.Left = append(r.Left, fmt.Sprintf("%s: the desk's orders that made this position are older than the order log keeps, so its product (MIS, NRML or CNC) is not known and nothing was sent; close it at Kite by hand", pos.Symbol))
			continue
		}
		ex, ts := deskbot.InstrumentOf(pos.Symbol)
		want := math.Abs(pos.Quantity)
		side, have := deskbot.Sell, float64(held[ex+":"+ts+" "+product])
		if pos.Quantity < 0 {
			side, have = deskbot.Buy, -have
		}
		qty := math.Min(want, math.Max(have, 0))
		if qty < want {
			r.Left = append(r.Left, fmt.Sprintf("%s: the desk's book holds %s but the account holds %s in %s, so %s was left open (it is not this desk's to close)",
				pos.Symbol, words.Quantity(pos.Quantity), words.Quantity(math.Copysign(math.Max(have, 0), pos.Quantity)), product, words.Quantity(want-qty)))
		}
		if qty == 0 {
			continue
		}
		o := deskbot.Order{Symbol: pos.Symbol, Side: side, Quantity: qty, Type: deskbot.OrderMarket, Product: product}
		// Not put to Admit: it only closes, and a halt's flatten sends it.
		po, err := b.place(ctx, desk, key+":"+pos.Symbol, o, nil)
		if err != nil {
			r.Left = append(r.Left, fmt.Sprintf("%s: the closing order was not placed: %s", pos.Symbol, deskbot.ErrorMessage(err)))
			continue
		}
		r.Placed = append(r.Placed, po)
	}
	return r, nil
}

// isFlattenOf reports whether po is a closing order of the flatten key
// (asked again, the flatten must not cancel its own orders).
func isFlattenOf(po deskbot.PlacedOrder, key string) bool {
	return po.Tag == broker.Tag(key+":"+po.Order.Symbol)
}

// productOf is the product of the desk's latest filled order in symbol,
// over the days the order log keeps: the product its position is held in
// at Kite; "" when none is found (its orders are older than the log).
func (b *Broker) productOf(ctx context.Context, desk, symbol string) (string, error) {
	day := b.now()
	for range 8 {
		orders, err := b.orders.Orders(ctx, desk, deskbot.OrderDay(day))
		if err != nil {
			return "", err
		}
		for _, po := range slices.Backward(orders) {
			if po.Order.Symbol == symbol && po.Filled > 0 && po.Order.Product != "" {
				return po.Order.Product, nil
			}
		}
		day = day.AddDate(0, 0, -1)
	}
	return "", nil
}
