package kitetest

import (
	"errors"
	"net/http"
	"testing"
	"time"

	kiteconnect "github.com/zerodha/gokiteconnect/v4"
)

const (
	testKey    = "kitetestkey"
	testSecret = "kitetestsecret"
	testUser   = "AB1234"
)

// Instruments the tests trade. INFY's token is its real one (low byte 1:
// NSE cash); the future's low byte is 2 (NFO), as the ticker expects.
var (
	infy = Instrument{Exchange: "NSE", Tradingsymbol: "INFY", Name: "INFOSYS", Token: 408065, LastPrice: 1500, TickSize: 0.05, LotSize: 1}
	fut  = Instrument{Exchange: "NFO", Tradingsymbol: "NIFTY26DECFUT", Name: "NIFTY", Token: 12345602, LastPrice: 24000,
		TickSize: 0.1, LotSize: 75, Type: "FUT", Expiry: time.Date(2026, 12, 29, 0, 0, 0, 0, IST)}
)

// newFake starts a fake holding infy and fut.
func newFake(t *testing.T) *Server {
	t.Helper()
	s := New(t, testKey, testSecret)
	s.AddInstruments(infy, fut)
	return s
}

// client returns an official client pointed at s, not yet logged in.
func client(s *Server) *kiteconnect.Client {
	c := kiteconnect.New(testKey)
	c.SetBaseURI(s.URL)
	c.SetHTTPClient(&http.Client{Timeout: 5 * time.Second})
	return c
}

// login returns an official client with a session for userID.
func login(t *testing.T, s *Server, userID string) *kiteconnect.Client {
	t.Helper()
	c := client(s)
	if _, err := c.GenerateSession(s.Login(userID), testSecret); err != nil {
		t.Fatalf("GenerateSession: %v", err)
	}
	return c
}

// kiteError unwraps the client's error, failing the test when there is none.
func kiteError(t *testing.T, err error) kiteconnect.Error {
	t.Helper()
	if err == nil {
		t.Fatal("got no error, want a kiteconnect.Error")
	}
	var ke kiteconnect.Error
	if !errors.As(err, &ke) {
		t.Fatalf("got %T %v, want a kiteconnect.Error", err, err)
	}
	return ke
}

// wantErrorType checks the client's error type and HTTP status.
func wantErrorType(t *testing.T, err error, errorType string, code int) kiteconnect.Error {
	t.Helper()
	ke := kiteError(t, err)
	if ke.ErrorType != errorType || ke.Code != code {
		t.Fatalf("got %s %d (%q), want %s %d", ke.ErrorType, ke.Code, ke.Message, errorType, code)
	}
	return ke
}

// marketBuy is a valid market order for qty of infy.
func marketBuy(qty int, tag string) kiteconnect.OrderParams {
	return kiteconnect.OrderParams{
		Exchange: "NSE", Tradingsymbol: "INFY", TransactionType: "BUY", OrderType: "MARKET",
		Quantity: qty, Product: "MIS", Validity: "DAY", MarketProtection: kiteconnect.MarketProtectionAuto, Tag: tag,
	}
}

// limitBuy is a valid limit order for qty of infy at price.
func limitBuy(qty int, price float64, tag string) kiteconnect.OrderParams {
	return kiteconnect.OrderParams{
		Exchange: "NSE", Tradingsymbol: "INFY", TransactionType: "BUY", OrderType: "LIMIT",
		Quantity: qty, Price: price, Product: "MIS", Validity: "DAY", Tag: tag,
	}
}

// place places an order that must be accepted and returns its id.
func place(t *testing.T, c *kiteconnect.Client, p kiteconnect.OrderParams) string {
	t.Helper()
	r, err := c.PlaceOrder("regular", p)
	if err != nil {
		t.Fatalf("PlaceOrder: %v", err)
	}
	if r.OrderID == "" {
		t.Fatal("PlaceOrder answered no order_id")
	}
	return r.OrderID
}

// orderFromList finds an order in GetOrders' answer.
func orderFromList(t *testing.T, c *kiteconnect.Client, id string) kiteconnect.Order {
	t.Helper()
	orders, err := c.GetOrders()
	if err != nil {
		t.Fatalf("GetOrders: %v", err)
	}
	for _, o := range orders {
		if o.OrderID == id {
			return o
		}
	}
	t.Fatalf("order %s not in GetOrders (%d orders)", id, len(orders))
	return kiteconnect.Order{}
}
