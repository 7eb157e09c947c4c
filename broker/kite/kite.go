// Package kite is the one place deskbot talks to Zerodha Kite Connect. It
// drives the official client (github.com/zerodha/gokiteconnect/v4) and adds
// what the client lacks and real money needs: a context on every call, the
// account's rate limits kept on this side, errors sorted into deskbot's
// codes with secrets scrubbed, and placement that never makes one order
// twice.
//
// What it owns: the app's api key, the day's access token (SetAccessToken,
// GenerateSession), the rate limiters of the account, and the rule below.
// It owns no order state: Kite's day's orders (Orders) are the truth.
//
// Concurrency: a Client is safe for use from many goroutines. The official
// client takes no context and keeps its HTTP client in a field, so one
// shared kiteconnect.Client cannot carry a different context per call.
// Each call therefore builds its own short-lived kiteconnect.Client whose
// http.Client copy has a RoundTripper bound to that call's context; the
// copies share the one underlying Transport (its connection pool), so the
// cost is a few small allocations, not a connection. A call never outlives
// its ctx: the request, the wait for a rate-limit slot, the wait after a
// 429 and the reading of orders after a lost answer all end with it.
//
// At most one order per tag. Place requires a tag (broker.Tag: one allowed
// call gives one tag) and keeps to this rule:
//
//   - Before sending, it reads the day's orders; an order already carrying
//     the tag is the answer and nothing is sent. A retried Place after a
//     crash or a timeout therefore finds its order instead of making another.
//   - A 429 is a refusal before any work at Kite: it waits (Retry-After, or
//     backoff) and sends again, while ctx allows. A refusal (InputException,
//     OrderException, MarginException...) is returned as it is.
//   - A lost answer (timeout, connection reset, a 5xx, a NetworkException or
//     DataException, a 504 with no body) may hide an order Kite made. Place
//     does not resend blindly: it reads the day's orders, retrying with
//     backoff until ctx ends, and returns the id of the order carrying the
//     tag. It may send again only when the day's orders, read at least a
//     settling time after the loss (so that a request Kite was still
//     working on has landed), show no such order.
//   - When ctx ends before that question is answered, Place returns an error
//     saying the order's fate is unknown; Place again with the same tag
//     learns it.
//   - Places with the same tag in this process run one at a time, so two
//     goroutines cannot both see "no order" and both send.
//
// Market orders (MARKET and SL-M) are always sent with MarketProtection -1
// (Kite's automatic protection): Kite refuses API market orders without
// it, and the client leaves a zero out of the form.
//
// The real broker (broker.go, updates.go): Broker is deskbot.Broker on
// Kite (BROKER=kite). It owns nothing of its own in Redis: its orders are
// the order log's (broker.OrderLog, shared with the paper broker), each
// desk's orders as Kite last reported them, their fills booked into the
// desk's book once. Kite's day's orders are the truth the log follows,
// matched by tag; an order Kite holds without a deskbot tag (placed by
// hand, or by another app) belongs to no desk and is never booked to one,
// and a flatten never trades more than the account holds.
//
// Its delivery rules: an order is recorded pending (OrderLog.Start)
// before anything is sent, so a crash between sending and hearing back
// leaves a record that any later process resolves from Kite's day's
// orders: found by its tag it takes Kite's state; absent a settling time
// after its last send (each send is recorded just before it goes, once it
// has its rate-limit slot, and lasts at most the client's timeout) it was
// never placed, unless a Place of it still runs in the reading process
// (waiting for its slot: a burst goes out at Kite's pace, none dropped).
// Each send is first put to the broker's Admit (the desk's halt and
// square-off), once it has its rate-limit slot and just before it goes: a
// call allowed before a halt and held in a burst's wait is refused there,
// recorded not placed, never sent, and its desk told why. An order
// waiting for its send is withdrawn by a cancel (a halt's, cancel_order's,
// a flatten's) and never sent; one whose send is marked is Kite's to end.
// An after-market order belongs to the trading day it executes on (the
// calendar's next opening): Kite keeps it in its order book across
// midnight until it runs, so no read of the book takes it for ended
// before that day is over, and it is cancelled as amo while Kite holds it
// as one (AMO REQ RECEIVED), as regular once it reached the exchange.
// Every later change (a fill, a rejection, a cancel) moves
// the record only from the version it was read at (OrderLog.Move), and
// never back, so two processes reading Kite at once (a hand-over), or the
// ticker and the poll, agree whichever is first; the order log's Teller
// tells each version once, to the desk's inbox and, for fills and
// rejections, the chat, across restarts and a hand-over. A broker's own
// answer (the placing or cancelling call's) tells the desk what it read
// then; a fill or a rejection is told through the Teller anyway.
//
// Its concurrency: a Broker is safe for use from many goroutines and
// processes. Run, the updates' loop (Sync every few seconds while any
// order is open, and Kite's ticker), is for the leader; any process may
// Sync. Without a session Kite takes, nothing asks Kite anything until a
// login: orders are refused in the login's words.
//
// India's rules from April 2026 (source.go, rules2026.go): order requests
// (placements, modifications, cancellations, GTT changes) leave from
// KITE_SOURCE_IP when it is set, whatever their caller, because the
// transport picks the address by the request; Kite's refusal of one for
// its address is ErrSourceIP, never retried, and the group is told once
// an India day across instances. Every order carries the desk's algo id,
// chosen in one place (Broker.algoIDOf: the desk's algo_id, else
// KITE_ALGO_ID); a modification asks the same. The account's orders of a
// day are counted in Redis by tag before each is sent (deskbot.
// AccountOrders): past 5,000 an order is refused with the count.
//
// The daily login (login.go): a Kite session lasts one day and only a
// person can start it. /login gives an approver a button to Kite's login
// page; the callback on the service's HTTP address exchanges Kite's
// request_token for the day's access token, and the session is kept in
// Redis (the store's notes, under the keys login.go names) for every
// instance. A login's state is taken first-caller-wins in Redis, so any
// instance may serve the callback and a replay exchanges nothing.
package kite

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/deskbot/deskbot/retry"
	kiteconnect "github.com/zerodha/gokiteconnect/v4"
)

// Options configure a Client. Zero values take the defaults noted.
type Options struct {
	APIKey string
	// APIURL is Kite's API root; "" is https://api.kite.trade. Tests point
	// it at broker/kitetest's fake.
	APIURL string
	// HTTPClient's Transport, Timeout, Jar and CheckRedirect are used for
	// every call; nil gives a client with a 10 s timeout on the default
	// transport. The Timeout caps one HTTP exchange; ctx caps the whole call.
	HTTPClient *http.Client
	Now        func() time.Time                                 // default time.Now
	Sleep      func(ctx context.Context, d time.Duration) error // default retry.Sleep
	Log        *slog.Logger                                     // default discards
	// Kite's limits per user: orders (placements) 10 a second and 400 a
	// minute, other calls 10 a second, quotes 1 a second. Zero takes those.
	OrdersPerSecond, OrdersPerMinute, CallsPerSecond int
	QuotesPerSecond                                  int
	// SourceIP (KITE_SOURCE_IP) is the local address every order request
	// (a placement, modification or cancellation: what Kite checks
	// against the app's IP whitelist) leaves from; "" leaves it to the
	// host's routing. Other calls leave as the host routes them. An
	// address this host cannot bind makes every order request fail
	// before anything is sent, never leave from another address.
	SourceIP string
}

// Client talks to Kite for one app and one user's session. Create it with New.
type Client struct {
	apiKey string
	apiURL string
	base   http.Client // copied per call; its Transport is shared
	rt     http.RoundTripper
	// orderRT carries the order requests (orderRequest): rt, or with
	// SourceIP a transport of its own bound to that address.
	orderRT  http.RoundTripper
	sourceIP string
	now      func() time.Time
	sleep    func(context.Context, time.Duration) error
	log      *slog.Logger

	orderLim, callLim, quoteLim *limiter
	// histLim keeps Kite's pace for historical candles: 3 a second.
	histLim *limiter

	// settle is how long after a lost answer the day's orders must be read
	// before a missing tag is believed: Kite may still be working on the
	// request whose answer was lost.
	settle time.Duration
	// backoff bounds the waits between tries of a transient failure.
	backoffMin, backoffMax time.Duration

	mu     sync.RWMutex
	token  string
	secret string // the api secret last given to GenerateSession, kept only to scrub it

	tagMu sync.Mutex
	tags  map[string]*tagLock
}

const (
	defaultTimeout = 10 * time.Second
	defaultSettle  = 2 * time.Second
)

// New returns a Client. It makes no call.
func New(opts Options) *Client {
	c := &Client{
		apiKey:     opts.APIKey,
		apiURL:     strings.TrimRight(opts.APIURL, "/"),
		now:        opts.Now,
		sleep:      opts.Sleep,
		log:        opts.Log,
		settle:     defaultSettle,
		backoffMin: 100 * time.Millisecond,
		backoffMax: 5 * time.Second,
		tags:       map[string]*tagLock{},
	}
	if c.apiURL == "" {
		c.apiURL = "https://api.kite.trade"
	}
	if opts.HTTPClient != nil {
		c.base = *opts.HTTPClient
	} else {
		c.base = http.Client{Timeout: defaultTimeout}
	}
	c.rt = c.base.Transport
	if c.rt == nil {
		c.rt = http.DefaultTransport
	}
	c.orderRT, c.sourceIP = c.rt, opts.SourceIP
	if opts.SourceIP != "" {
		rt, err := SourceTransport(c.rt, opts.SourceIP)
		if err != nil {
			rt = failing{err}
		}
		c.orderRT = rt
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.sleep == nil {
		c.sleep = retry.Sleep
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	orPos := func(v, d int) int {
		if v <= 0 {
			return d
		}
		return v
	}
	c.orderLim = newLimiter(c.now, c.sleep,
		rule{orPos(opts.OrdersPerSecond, 10), time.Second},
		rule{orPos(opts.OrdersPerMinute, 400), time.Minute})
	c.callLim = newLimiter(c.now, c.sleep, rule{orPos(opts.CallsPerSecond, 10), time.Second})
	c.quoteLim = newLimiter(c.now, c.sleep, rule{orPos(opts.QuotesPerSecond, 1), time.Second})
	c.histLim = newLimiter(c.now, c.sleep, rule{historicalPerSecond, time.Second})
	return c
}

// SetAccessToken sets the session's access token for the calls that start
// after it. Safe for concurrent use.
func (c *Client) SetAccessToken(token string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.token = token
}

func (c *Client) accessToken() string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.token
}

// secrets are the texts no error or log line may hold.
func (c *Client) secrets() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return []string{c.token, c.secret}
}

// GenerateSession exchanges a request_token from a person's login for the
// day's session and returns it. It does not make it this Client's session:
// the caller checks the account first (SetAccessToken). The secret and
// tokens never appear in an error.
func (c *Client) GenerateSession(ctx context.Context, requestToken, apiSecret string) (userID, accessToken string, loginTime time.Time, err error) {
	c.mu.Lock()
	c.secret = apiSecret
	c.mu.Unlock()
	var s kiteconnect.UserSession
	err = c.attempt(ctx, c.callLim, "", func(k *kiteconnect.Client) error {
		var err error
		s, err = k.GenerateSession(requestToken, apiSecret)
		return err
	})
	if err != nil {
		return "", "", time.Time{}, c.classify(ctx, "login", err, requestToken, apiSecret)
	}
	return s.UserID, s.AccessToken, s.LoginTime.Time, nil
}

// Profile returns the user id of the session.
func (c *Client) Profile(ctx context.Context) (string, error) {
	var p kiteconnect.UserProfile
	if err := c.call(ctx, c.callLim, "profile read", func(k *kiteconnect.Client) (err error) {
		p, err = k.GetUserProfile()
		return err
	}); err != nil {
		return "", err
	}
	return p.UserID, nil
}

// Orders returns the day's orders of the session's user, oldest first as
// Kite lists them.
func (c *Client) Orders(ctx context.Context) ([]kiteconnect.Order, error) {
	var o kiteconnect.Orders
	if err := c.call(ctx, c.callLim, "orders read", func(k *kiteconnect.Client) (err error) {
		o, err = k.GetOrders()
		return err
	}); err != nil {
		return nil, err
	}
	return o, nil
}

// Cancel cancels an open order. Kite counts cancellations with the other
// calls, not with placements.
func (c *Client) Cancel(ctx context.Context, variety, orderID string) error {
	if variety == "" {
		variety = kiteconnect.VarietyRegular
	}
	return c.call(ctx, c.callLim, "cancellation", func(k *kiteconnect.Client) error {
		_, err := k.CancelOrder(variety, orderID, nil)
		return err
	})
}

// LTP returns the last prices of instruments keyed "EXCHANGE:TRADINGSYMBOL".
// An instrument Kite does not know is absent from the map. (The official
// client's GetLTP asks GET /quote/ltp since v4.4.1, GET /quote before; it
// is counted with the quotes either way.)
func (c *Client) LTP(ctx context.Context, keys ...string) (map[string]float64, error) {
	if len(keys) == 0 {
		return map[string]float64{}, nil
	}
	var q kiteconnect.QuoteLTP
	if err := c.call(ctx, c.quoteLim, "price read", func(k *kiteconnect.Client) (err error) {
		q, err = k.GetLTP(keys...)
		return err
	}); err != nil {
		return nil, err
	}
	out := make(map[string]float64, len(q))
	for k, v := range q {
		out[k] = v.LastPrice
	}
	return out, nil
}

// Instruments returns Kite's instrument list of one exchange (NSE, NFO,
// ...): tens of thousands of rows; keep only what is needed of them.
func (c *Client) Instruments(ctx context.Context, exchange string) ([]kiteconnect.Instrument, error) {
	var list kiteconnect.Instruments
	if err := c.call(ctx, c.callLim, "instrument list read", func(k *kiteconnect.Client) (err error) {
		list, err = k.GetInstrumentsByExchange(exchange)
		return err
	}); err != nil {
		return nil, err
	}
	return list, nil
}

// call runs fn once a slot is free, waits out 429s, and classifies the
// failure. For calls that change nothing, so a plain retry of 429 is safe.
func (c *Client) call(ctx context.Context, lim *limiter, op string, fn func(*kiteconnect.Client) error) error {
	if err := c.attempt(ctx, lim, c.accessToken(), fn); err != nil {
		return c.classify(ctx, op, err)
	}
	return nil
}

// attempt runs fn with a per-call kiteconnect.Client bound to ctx, after
// taking a slot of lim, and sends again after each 429 (Kite refuses a 429
// before doing anything) while ctx allows. token "" sends no session (the
// login). The raw error is returned.
func (c *Client) attempt(ctx context.Context, lim *limiter, token string, fn func(*kiteconnect.Client) error) error {
	b := retry.Backoff{Min: c.backoffMin, Max: c.backoffMax}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		release, err := lim.acquire(ctx)
		if err != nil {
			return err
		}
		ex := &roundTrip{ctx: ctx}
		err = fn(c.kiteFor(ex, token))
		release()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !tooMany(err) {
			return err
		}
		d := ex.retryAfter()
		if d <= 0 {
			d = b.Next()
		}
		c.log.Info("kite: 429, waiting", "wait", d)
		if err := c.sleep(ctx, d); err != nil {
			return err
		}
		if token != "" {
			token = c.accessToken() // a new login may have come meanwhile
		}
	}
}

// kiteFor builds the official client for one call. Building one per call
// is what lets each call carry its own context without a lock.
func (c *Client) kiteFor(ex *roundTrip, token string) *kiteconnect.Client {
	k := kiteconnect.New(c.apiKey)
	k.SetBaseURI(c.apiURL)
	hc := c.base
	hc.Transport = &ctxTransport{ex: ex, rt: c.rt, orderRT: c.orderRT}
	k.SetHTTPClient(&hc)
	if token != "" {
		k.SetAccessToken(token)
	}
	return k
}

// roundTrip is one HTTP exchange of one call: the context it is bound to,
// and the Retry-After header it saw (the official client keeps the
// headers to itself).
type roundTrip struct {
	ctx      context.Context
	retryHdr string
}

func (ex *roundTrip) retryAfter() time.Duration {
	if ex.retryHdr == "" {
		return 0
	}
	var secs int
	if _, err := fmt.Sscanf(ex.retryHdr, "%d", &secs); err == nil && secs > 0 {
		return time.Duration(min(secs, 60)) * time.Second
	}
	if t, err := http.ParseTime(ex.retryHdr); err == nil {
		return min(time.Until(t), time.Minute)
	}
	return 0
}

// ctxTransport binds every request of one call to that call's context.
// Each call has its own, so no state is shared between goroutines.
type ctxTransport struct {
	ex      *roundTrip
	rt      http.RoundTripper
	orderRT http.RoundTripper // the order requests' (KITE_SOURCE_IP)
}

func (t *ctxTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rt := t.rt
	if orderRequest(r) {
		rt = t.orderRT
	}
	resp, err := rt.RoundTrip(r.WithContext(t.ex.ctx))
	if err != nil {
		return nil, err
	}
	t.ex.retryHdr = resp.Header.Get("Retry-After")
	return resp, nil
}

func tooMany(err error) bool {
	var ke kiteconnect.Error
	return errors.As(err, &ke) && ke.Code == http.StatusTooManyRequests
}

// tagLock lets one Place per tag run at a time in this process.
type tagLock struct {
	ch chan struct{}
	n  int
}

func (c *Client) lockTag(ctx context.Context, tag string) (unlock func(), err error) {
	c.tagMu.Lock()
	l := c.tags[tag]
	if l == nil {
		l = &tagLock{ch: make(chan struct{}, 1)}
		c.tags[tag] = l
	}
	l.n++
	c.tagMu.Unlock()
	done := func() {
		c.tagMu.Lock()
		if l.n--; l.n == 0 {
			delete(c.tags, tag)
		}
		c.tagMu.Unlock()
	}
	select {
	case l.ch <- struct{}{}:
		return func() { <-l.ch; done() }, nil
	case <-ctx.Done():
		done()
		return nil, ctx.Err()
	}
}

// OrderHistory returns every state the order id went through, oldest
// first: its last is the order as it stands.
func (c *Client) OrderHistory(ctx context.Context, id string) ([]kiteconnect.Order, error) {
	var h []kiteconnect.Order
	if err := c.call(ctx, c.callLim, "order read", func(k *kiteconnect.Client) (err error) {
		h, err = k.GetOrderHistory(id)
		return err
	}); err != nil {
		return nil, err
	}
	return h, nil
}

// NetPositions returns the account's net positions (Kite's "net": the
// day's trades and those carried), one per instrument and product.
func (c *Client) NetPositions(ctx context.Context) ([]kiteconnect.Position, error) {
	var p kiteconnect.Positions
	if err := c.call(ctx, c.callLim, "positions read", func(k *kiteconnect.Client) (err error) {
		p, err = k.GetPositions()
		return err
	}); err != nil {
		return nil, err
	}
	return p.Net, nil
}

// OrderMargins returns what each order would block of the account's
// margin, as Kite reckons it.
func (c *Client) OrderMargins(ctx context.Context, orders ...kiteconnect.OrderMarginParam) ([]kiteconnect.OrderMargins, error) {
	var m []kiteconnect.OrderMargins
	if err := c.call(ctx, c.callLim, "margin read", func(k *kiteconnect.Client) (err error) {
		m, err = k.GetOrderMargins(kiteconnect.GetMarginParams{OrderParams: orders})
		return err
	}); err != nil {
		return nil, err
	}
	return m, nil
}

// UserMargins returns the account's funds of both segments (equity and
// commodity).
func (c *Client) UserMargins(ctx context.Context) (kiteconnect.AllMargins, error) {
	var m kiteconnect.AllMargins
	err := c.call(ctx, c.callLim, "funds read", func(k *kiteconnect.Client) (err error) {
		m, err = k.GetUserMargins()
		return err
	})
	return m, err
}
