package kite

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/deskbot/deskbot/broker/kitetest"
	kiteconnect "github.com/zerodha/gokiteconnect/v4"
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
