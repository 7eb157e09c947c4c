package kitetest

import (
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	kiteconnect "github.com/zerodha/gokiteconnect/v4"
)

// from returns c's HTTP client made to connect from the local address ip.
func from(t *testing.T, c *kiteconnect.Client, ip string) {
	t.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}).DialContext
	c.SetHTTPClient(&http.Client{Timeout: 5 * time.Second, Transport: tr})
}

// The IP whitelist refuses placements, modifications and cancellations
// from any other address with a PermissionException, and serves every
// other call; from a listed address orders work.
func TestWhitelistRefusesOnlyOrderRequests(t *testing.T) {
	s := newFake(t)
	s.Hold(true)
	c := login(t, s, testUser)
	id := place(t, c, limitBuy(1, 1500, "before"))
	s.AllowSources("127.0.0.2")

	_, err := c.PlaceOrder("regular", limitBuy(1, 1500, "refused"))
	ke := wantErrorType(t, err, PermissionException, http.StatusForbidden)
	if !strings.Contains(ke.Message, "127.0.0.1") || !strings.Contains(ke.Message, "IP whitelist") {
		t.Errorf("refusal %q names neither the address nor the whitelist", ke.Message)
	}
	_, err = c.ModifyOrder("regular", id, kiteconnect.OrderParams{Price: 1499})
	wantErrorType(t, err, PermissionException, http.StatusForbidden)
	_, err = c.CancelOrder("regular", id, nil)
	wantErrorType(t, err, PermissionException, http.StatusForbidden)
	if got, want := s.AllOrdersPlaced(), 1; got != want {
		t.Errorf("orders placed = %d, want %d", got, want)
	}
	if _, err := c.GetOrders(); err != nil {
		t.Errorf("GetOrders from an unlisted address: %v", err)
	}
	if _, err := c.GetPositions(); err != nil {
		t.Errorf("GetPositions from an unlisted address: %v", err)
	}

	from(t, c, "127.0.0.2")
	place(t, c, limitBuy(1, 1500, "after"))
	if _, err := c.ModifyOrder("regular", id, kiteconnect.OrderParams{Price: 1499}); err != nil {
		t.Errorf("ModifyOrder from the listed address: %v", err)
	}
	if _, err := c.CancelOrder("regular", id, nil); err != nil {
		t.Errorf("CancelOrder from the listed address: %v", err)
	}
	got := s.OrderSources()
	want := []string{"127.0.0.1", "127.0.0.1", "127.0.0.1", "127.0.0.1", "127.0.0.2", "127.0.0.2", "127.0.0.2"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("order sources = %v, want %v", got, want)
	}
}

// The algo id of a placement and of each modification is kept as sent,
// and an order is modified at most 25 times.
func TestAlgoIDOfEachOrderRequestAndTheModificationsCap(t *testing.T) {
	s := newFake(t)
	s.SetLimits(nil)
	s.Hold(true)
	c := login(t, s, testUser)
	p := limitBuy(1, 1400, "algo")
	p.AlgoID = "ALGO1"
	id := place(t, c, p)
	for i := range MaxModifications {
		if _, err := c.ModifyOrder("regular", id, kiteconnect.OrderParams{Price: 1400 + float64(i%2)*0.05, AlgoID: "ALGO1"}); err != nil {
			t.Fatalf("modification %d: %v", i+1, err)
		}
	}
	_, err := c.ModifyOrder("regular", id, kiteconnect.OrderParams{Price: 1401, AlgoID: "ALGO1"})
	wantErrorType(t, err, OrderException, http.StatusBadRequest)
	o, _ := s.Order(id)
	if o.AlgoID != "ALGO1" {
		t.Errorf("placement's algo_id = %q, want ALGO1", o.AlgoID)
	}
	if got, want := o.Modifications, MaxModifications; got != want {
		t.Errorf("modifications = %d, want %d", got, want)
	}
	for i, a := range o.ModifyAlgoIDs {
		if a != "ALGO1" {
			t.Errorf("modification %d carried algo_id %q, want ALGO1", i+1, a)
		}
	}
	if got, want := s.DayOrders(testUser), 1; got != want {
		t.Errorf("the day's orders = %d, want %d (modifications are not orders)", got, want)
	}
}
