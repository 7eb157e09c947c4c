package kite

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	kiteconnect "github.com/zerodha/gokiteconnect/v4"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker/kitetest"
	"github.com/deskbot/deskbot/exchange"
	"github.com/deskbot/deskbot/store/storetest"
)

const (
	testKey    = "kitekeyapp"
	testSecret = "kitesecretvalue"
	testUser   = "AB1234"
)

var infy = kitetest.Instrument{Exchange: "NSE", Tradingsymbol: "INFY", Name: "INFOSYS", Token: 408065, LastPrice: 1500, TickSize: 0.05, LotSize: 1}

// mustFake starts a fake holding INFY, with Kite's limits on.
func mustFake(t testing.TB) *kitetest.Server {
	t.Helper()
	s := kitetest.New(t, testKey, testSecret)
	s.AddInstruments(infy)
	return s
}

// mustClient returns a Client logged in to s as testUser, with short waits
// so that the tests of retries take milliseconds.
func mustClient(t testing.TB, s *kitetest.Server, opts Options) *Client {
	t.Helper()
	opts.APIKey = testKey
	opts.APIURL = s.URL
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: 5 * time.Second}
	}
	c := New(opts)
	c.settle = 50 * time.Millisecond
	c.backoffMin, c.backoffMax = 5*time.Millisecond, 50*time.Millisecond
	user, tok, _, err := c.GenerateSession(context.Background(), s.Login(testUser), testSecret)
	if err != nil {
		t.Fatalf("GenerateSession: %v", err)
	}
	if user != testUser || tok == "" {
		t.Fatalf("GenerateSession: got user %q token %q, want %q and a token", user, tok, testUser)
	}
	c.SetAccessToken(tok)
	return c
}

// mustPlace places p for the call p.Tag names (limitBuy and marketBuy put
// the call's key there) and returns its id, failing the test on an error.
func mustPlace(t testing.TB, c *Client, p kiteconnect.OrderParams) string {
	t.Helper()
	id, err := c.Place(ctxFor(t, 10*time.Second), p.Tag, p, "")
	if err != nil {
		t.Fatalf("Place(%s): %v", p.Tag, err)
	}
	if id == "" {
		t.Fatalf("Place(%s): no order id", p.Tag)
	}
	return id
}

// mustOrder returns the fake's order id, failing when it has none.
func mustOrder(t testing.TB, s *kitetest.Server, id string) kitetest.Order {
	t.Helper()
	o, ok := s.Order(id)
	if !ok {
		t.Fatalf("the fake has no order %s", id)
	}
	return o
}

func ctxFor(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func limitBuy(tag string) kiteconnect.OrderParams {
	return kiteconnect.OrderParams{
		Exchange: "NSE", Tradingsymbol: "INFY", TransactionType: "BUY", OrderType: "LIMIT",
		Quantity: 1, Price: 1490, Product: "MIS", Validity: "DAY", Tag: tag,
	}
}

// marketBuy leaves MarketProtection zero: Place must send -1 itself.
func marketBuy(tag string) kiteconnect.OrderParams {
	return kiteconnect.OrderParams{
		Exchange: "NSE", Tradingsymbol: "INFY", TransactionType: "BUY", OrderType: "MARKET",
		Quantity: 1, Product: "MIS", Validity: "DAY", Tag: tag,
	}
}

// heard records the events the login and the day publish.
type heard struct {
	mu  sync.Mutex
	evs []deskbot.Event
}

func (h *heard) Publish(_ context.Context, e deskbot.Event) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.evs = append(h.evs, e)
	return nil
}

// kinds are the heard events' kinds, in order.
func (h *heard) kinds() []deskbot.EventKind {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []deskbot.EventKind
	for _, e := range h.evs {
		out = append(out, e.Kind)
	}
	return out
}

func (h *heard) texts() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, e := range h.evs {
		out = append(out, e.Text)
	}
	return out
}

// mustLoginOn builds a Login, on a client of its own, against the fake,
// keeping its notes in st (instances of one deployment share st).
func mustLoginOn(t *testing.T, kt *kitetest.Server, st deskbot.Notes, now deskbot.Now) (*Login, *heard) {
	t.Helper()
	ev := &heard{}
	l, err := NewLogin(LoginConfig{APIKey: testKey, APISecret: testSecret, UserID: testUser,
		CallbackURL: "http://127.0.0.1:8080/kite/callback", Now: now}, New(Options{APIKey: testKey, APIURL: kt.URL}), st, ev, nil)
	if err != nil {
		t.Fatal(err)
	}
	return l, ev
}

// mustLoginDay builds a Login and a Day on the fake and Redis.
func mustLoginDay(t *testing.T, kt *kitetest.Server, now deskbot.Now) (*Login, *Day, *heard, *Client) {
	t.Helper()
	l, ev := mustLoginOn(t, kt, storetest.MustOpen(t), now)
	cal, err := exchange.ParseCalendar("Mon-Sun 00:00-24:00", "")
	if err != nil {
		t.Fatal(err)
	}
	return l, NewDay(l.kite, l, cal, []string{"NSE"}, now, nil), ev, l.kite
}

// loginAs runs /login's button and Kite's redirect for by.
func loginAs(t testing.TB, l *Login, kt *kitetest.Server, by deskbot.Person) {
	t.Helper()
	u, err := l.LoginURL(t.Context(), by)
	if err != nil {
		t.Fatal(err)
	}
	parsed, _ := url.Parse(u)
	params, _ := url.ParseQuery(parsed.Query().Get("redirect_params"))
	q := url.Values{"status": {"success"}, "request_token": {kt.Login(testUser)}, "state": {params.Get("state")}}
	rec := httptest.NewRecorder()
	l.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/kite/callback?"+q.Encode(), nil))
	if rec.Code != 200 {
		t.Fatalf("login: %d %s", rec.Code, rec.Body)
	}
}
