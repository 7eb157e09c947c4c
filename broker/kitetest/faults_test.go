package kitetest

import (
	"net/http"
	"testing"
	"time"

	"github.com/deskbot/deskbot/deskbottest"
)

func TestLostAnswerLeavesTheOrderPlaced(t *testing.T) {
	for _, tc := range []struct {
		name      string
		how       Loss
		errorType string
		code      int
	}{
		// The client's own mapping: a transport error becomes
		// NetworkException 503, an unparseable error body DataException 504.
		{"connection dropped", LoseByDrop, NetworkException, http.StatusServiceUnavailable},
		{"504 without body", LoseBy504, DataException, http.StatusGatewayTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newFake(t)
			c := login(t, s, testUser)
			s.LoseAnswers(tc.how, 1)
			_, err := c.PlaceOrder("regular", marketBuy(1, "lost1"))
			wantErrorType(t, err, tc.errorType, tc.code)

			orders, err := c.GetOrders()
			if err != nil {
				t.Fatalf("GetOrders: %v", err)
			}
			if len(orders) != 1 || orders[0].Tag != "lost1" || orders[0].Status != StatusComplete {
				t.Fatalf("got orders %+v, want the one lost order, COMPLETE, tagged lost1", orders)
			}
			// The loss was used up: the next placement is answered.
			place(t, c, marketBuy(1, "lost2"))
			if got, want := s.AllOrdersPlaced(), 2; got != want {
				t.Errorf("orders placed: got %d, want %d", got, want)
			}
		})
	}
}

func TestTooManyRequestsThenSuccess(t *testing.T) {
	s := newFake(t)
	c := login(t, s, testUser)
	s.TooManyRequests(http.MethodPost, "/orders/*", 2)
	for range 2 {
		_, err := c.PlaceOrder("regular", marketBuy(1, "retry"))
		wantErrorType(t, err, NetworkException, http.StatusTooManyRequests)
	}
	place(t, c, marketBuy(1, "retry"))
	if got, want := s.Served429(), 2; got != want {
		t.Errorf("Served429: got %d, want %d", got, want)
	}
	if got, want := s.OrdersPlaced("retry"), 1; got != want {
		t.Errorf("OrdersPlaced: got %d, want %d", got, want)
	}
	if got, want := s.Requests(http.MethodPost, "/orders/*"), 3; got != want {
		t.Errorf("Requests(POST /orders/*): got %d, want %d", got, want)
	}
}

func TestOrderRateLimitsPerSecondAndMinute(t *testing.T) {
	s := newFake(t)
	clk := deskbottest.NewClock(time.Date(2026, 12, 2, 10, 0, 0, 0, IST))
	s.SetNow(clk.Now)
	c := login(t, s, testUser)
	p := limitBuy(1, 1400, "") // resting orders: cheap on margin
	for i := range 10 {
		if _, err := c.PlaceOrder("regular", p); err != nil {
			t.Fatalf("order %d within 10/s: %v", i+1, err)
		}
	}
	_, err := c.PlaceOrder("regular", p)
	wantErrorType(t, err, NetworkException, http.StatusTooManyRequests)
	if got, want := s.Served429(), 1; got != want {
		t.Fatalf("Served429: got %d, want %d", got, want)
	}
	// 10 a second for 40 seconds reaches 400 in the minute.
	for sec := 1; sec < 40; sec++ {
		clk.Add(time.Second)
		for i := range 10 {
			if _, err := c.PlaceOrder("regular", p); err != nil {
				t.Fatalf("second %d order %d: %v", sec, i+1, err)
			}
		}
	}
	clk.Add(time.Second)
	_, err = c.PlaceOrder("regular", p)
	wantErrorType(t, err, NetworkException, http.StatusTooManyRequests)
	clk.Add(time.Minute)
	place(t, c, p)
	if got, want := s.AllOrdersPlaced(), 401; got != want {
		t.Errorf("orders placed: got %d, want %d", got, want)
	}
}

func TestQuoteRateLimit(t *testing.T) {
	s := newFake(t)
	clk := deskbottest.NewClock(time.Date(2026, 12, 2, 10, 0, 0, 0, IST))
	s.SetNow(clk.Now)
	c := login(t, s, testUser)
	if _, err := c.GetLTP("NSE:INFY"); err != nil {
		t.Fatalf("first GetLTP: %v", err)
	}
	_, err := c.GetLTP("NSE:INFY")
	wantErrorType(t, err, NetworkException, http.StatusTooManyRequests)
	clk.Add(time.Second)
	if _, err := c.GetLTP("NSE:INFY"); err != nil {
		t.Fatalf("GetLTP a second later: %v", err)
	}
}

func TestSlowPlacementTimesOutButPlaces(t *testing.T) {
	s := newFake(t)
	c := login(t, s, testUser)
	c.SetHTTPClient(&http.Client{Timeout: 100 * time.Millisecond})
	s.Slow(http.MethodPost, "/orders/*", 300*time.Millisecond)
	_, err := c.PlaceOrder("regular", marketBuy(1, "slow"))
	wantErrorType(t, err, NetworkException, http.StatusServiceUnavailable)
	deskbottest.Eventually(t, "the slow order to be placed after the client gave up", func() bool {
		return s.OrdersPlaced("slow") == 1
	})
}

func TestFailureWithoutBody(t *testing.T) {
	s := newFake(t)
	c := login(t, s, testUser)
	s.Fail(Failure{Path: "/orders", Code: http.StatusBadGateway, NoBody: true, Times: 1})
	_, err := c.GetOrders()
	wantErrorType(t, err, DataException, http.StatusGatewayTimeout)
	if _, err := c.GetOrders(); err != nil {
		t.Fatalf("GetOrders after the failure: %v", err)
	}
}
