package kitetest

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot/deskbottest"
	kiteconnect "github.com/zerodha/gokiteconnect/v4"
)

func TestMarketOrderFillsAtLastPrice(t *testing.T) {
	s := newFake(t)
	at := time.Date(2026, 12, 2, 10, 0, 0, 0, IST)
	s.SetNow(deskbottest.NewClock(at).Now)
	c := login(t, s, testUser)
	id := place(t, c, marketBuy(10, "desk1"))

	o := orderFromList(t, c, id)
	if got, want := o.Status, StatusComplete; got != want {
		t.Fatalf("status: got %q, want %q (%s)", got, want, o.StatusMessage)
	}
	if got, want := o.Tag, "desk1"; got != want {
		t.Errorf("tag: got %q, want %q", got, want)
	}
	if o.FilledQuantity != 10 || o.PendingQuantity != 0 || o.AveragePrice != 1500 {
		t.Errorf("got filled %v pending %v at %v, want 10, 0 at 1500", o.FilledQuantity, o.PendingQuantity, o.AveragePrice)
	}
	if !o.OrderTimestamp.Equal(at) {
		t.Errorf("order_timestamp: got %v, want %v", o.OrderTimestamp.Time, at)
	}
	if got, want := s.OrdersPlaced("desk1"), 1; got != want {
		t.Errorf("OrdersPlaced(desk1): got %d, want %d", got, want)
	}

	trades, err := c.GetTrades()
	if err != nil {
		t.Fatalf("GetTrades: %v", err)
	}
	if len(trades) != 1 || trades[0].OrderID != id || trades[0].Quantity != 10 || trades[0].AveragePrice != 1500 {
		t.Errorf("got trades %+v, want one of 10 at 1500 for %s", trades, id)
	}
	pos, err := c.GetPositions()
	if err != nil {
		t.Fatalf("GetPositions: %v", err)
	}
	if len(pos.Net) != 1 || pos.Net[0].Quantity != 10 || pos.Net[0].AveragePrice != 1500 || len(pos.Day) != 1 {
		t.Errorf("got positions %+v, want net and day 10 INFY at 1500", pos)
	}

	hist, err := c.GetOrderHistory(id)
	if err != nil {
		t.Fatalf("GetOrderHistory: %v", err)
	}
	var statuses []string
	for _, h := range hist {
		statuses = append(statuses, h.Status)
	}
	want := []string{StatusPutOrderReq, StatusValidation, StatusOpenPending, StatusOpen, StatusComplete}
	if !slices.Equal(statuses, want) {
		t.Errorf("history: got %q, want %q", statuses, want)
	}
}

func TestMarketOrderNeedsMarketProtection(t *testing.T) {
	s := newFake(t)
	c := login(t, s, testUser)
	p := marketBuy(1, "")
	p.MarketProtection = 0 // the client then leaves the field out
	_, err := c.PlaceOrder("regular", p)
	wantErrorType(t, err, InputException, http.StatusBadRequest)
	if got := s.AllOrdersPlaced(); got != 0 {
		t.Errorf("got %d orders placed, want 0", got)
	}
}

func TestLimitOrderRestsThenFillsWhenThePriceComes(t *testing.T) {
	s := newFake(t)
	c := login(t, s, testUser)
	id := place(t, c, limitBuy(5, 1490, "rest"))
	if got, want := orderFromList(t, c, id).Status, StatusOpen; got != want {
		t.Fatalf("status after placing below the market: got %q, want %q", got, want)
	}
	s.SetLTP("NSE:INFY", 1495)
	if got, want := orderFromList(t, c, id).Status, StatusOpen; got != want {
		t.Fatalf("status with the market above the limit: got %q, want %q", got, want)
	}
	s.SetLTP("NSE:INFY", 1488)
	o := orderFromList(t, c, id)
	// A resting order fills at its own price, not the price that came to it.
	if o.Status != StatusComplete || o.AveragePrice != 1490 || o.FilledQuantity != 5 {
		t.Errorf("got %s %v at %v, want COMPLETE 5 at 1490", o.Status, o.FilledQuantity, o.AveragePrice)
	}
}

func TestMarketableLimitFillsAtTheMarket(t *testing.T) {
	s := newFake(t)
	c := login(t, s, testUser)
	o := orderFromList(t, c, place(t, c, limitBuy(1, 1510, "")))
	if o.Status != StatusComplete || o.AveragePrice != 1500 {
		t.Errorf("got %s at %v, want COMPLETE at 1500", o.Status, o.AveragePrice)
	}
}

func TestStopLossTriggersOnSetLTP(t *testing.T) {
	s := newFake(t)
	c := login(t, s, testUser)
	id := place(t, c, kiteconnect.OrderParams{
		Exchange: "NSE", Tradingsymbol: "INFY", TransactionType: "SELL", OrderType: "SL-M",
		Quantity: 2, TriggerPrice: 1450, Product: "MIS", Validity: "DAY", MarketProtection: -1,
	})
	if got, want := orderFromList(t, c, id).Status, StatusTriggerPending; got != want {
		t.Fatalf("status: got %q, want %q", got, want)
	}
	s.SetLTP("NSE:INFY", 1449)
	o := orderFromList(t, c, id)
	if o.Status != StatusComplete || o.AveragePrice != 1449 {
		t.Errorf("got %s at %v, want COMPLETE at 1449", o.Status, o.AveragePrice)
	}
}

func TestOrdersThatBreakKiteRulesAreRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*kiteconnect.OrderParams)
		want string // in the message
	}{
		{"quantity not a lot multiple", func(p *kiteconnect.OrderParams) {
			p.Exchange, p.Tradingsymbol, p.Product, p.Quantity, p.Price = "NFO", "NIFTY26DECFUT", "NRML", 50, 24000
		}, "lot size (75)"},
		{"price off tick", func(p *kiteconnect.OrderParams) { p.Price = 1500.03 }, "Tick size for this script is 0.05"},
		{"future price off its 0.1 tick", func(p *kiteconnect.OrderParams) {
			p.Exchange, p.Tradingsymbol, p.Product, p.Quantity, p.Price = "NFO", "NIFTY26DECFUT", "NRML", 75, 24000.05
		}, "Tick size for this script is 0.1."},
		{"tag over 20", func(p *kiteconnect.OrderParams) { p.Tag = "abcdefghijklmnopqrstu" }, "`tag`"},
		{"tag not alphanumeric", func(p *kiteconnect.OrderParams) { p.Tag = "desk-1" }, "`tag`"},
		{"unknown instrument", func(p *kiteconnect.OrderParams) { p.Tradingsymbol = "NOSUCH" }, "`tradingsymbol`"},
		{"NRML on cash", func(p *kiteconnect.OrderParams) { p.Product = "NRML" }, "`product`"},
		{"no validity", func(p *kiteconnect.OrderParams) { p.Validity = "" }, "`validity`"},
		{"no price on a limit", func(p *kiteconnect.OrderParams) { p.Price = 0 }, "`price`"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newFake(t)
			c := login(t, s, testUser)
			p := limitBuy(1, 1500, "ok")
			tc.edit(&p)
			_, err := c.PlaceOrder("regular", p)
			ke := wantErrorType(t, err, InputException, http.StatusBadRequest)
			if !strings.Contains(ke.Message, tc.want) {
				t.Errorf("message: got %q, want it to mention %q", ke.Message, tc.want)
			}
			if got := s.AllOrdersPlaced(); got != 0 {
				t.Errorf("got %d orders placed, want 0", got)
			}
		})
	}
}

func TestTwentyCharacterTagIsAccepted(t *testing.T) {
	s := newFake(t)
	c := login(t, s, testUser)
	tag := "abcdefghij0123456789"
	if got, want := orderFromList(t, c, place(t, c, marketBuy(1, tag))).Tag, tag; got != want {
		t.Errorf("tag: got %q, want %q", got, want)
	}
}

func TestCancelOrder(t *testing.T) {
	s := newFake(t)
	c := login(t, s, testUser)
	id := place(t, c, limitBuy(3, 1400, ""))
	r, err := c.CancelOrder("regular", id, nil)
	if err != nil {
		t.Fatalf("CancelOrder: %v", err)
	}
	if r.OrderID != id {
		t.Errorf("CancelOrder answered %q, want %q", r.OrderID, id)
	}
	o := orderFromList(t, c, id)
	if o.Status != StatusCancelled || o.CancelledQuantity != 3 || o.PendingQuantity != 0 {
		t.Errorf("got %s cancelled %v pending %v, want CANCELLED 3, 0", o.Status, o.CancelledQuantity, o.PendingQuantity)
	}
	_, err = c.CancelOrder("regular", id, nil)
	wantErrorType(t, err, InputException, http.StatusBadRequest)
}

func TestRejectNextGivesAnOrderIDThenRejected(t *testing.T) {
	s := newFake(t)
	c := login(t, s, testUser)
	s.RejectNext("RMS:Blocked for MIS")
	o := orderFromList(t, c, place(t, c, marketBuy(1, "")))
	if o.Status != StatusRejected || o.StatusMessage != "RMS:Blocked for MIS" {
		t.Errorf("got %s %q, want REJECTED with the reason", o.Status, o.StatusMessage)
	}
}

func TestInsufficientFundsRejects(t *testing.T) {
	s := newFake(t)
	s.SetFunds(testUser, 1000)
	c := login(t, s, testUser)
	o := orderFromList(t, c, place(t, c, marketBuy(10, ""))) // 10×1500×0.2 = 3000 needed
	if o.Status != StatusRejected {
		t.Errorf("got %s, want REJECTED for want of margin", o.Status)
	}
}

func TestHoldAndFillPartly(t *testing.T) {
	s := newFake(t)
	c := login(t, s, testUser)
	s.Hold(true)
	id := place(t, c, marketBuy(10, ""))
	if err := s.FillPartly(id, 4); err != nil {
		t.Fatalf("FillPartly: %v", err)
	}
	o := orderFromList(t, c, id)
	if o.Status != StatusOpen || o.FilledQuantity != 4 || o.PendingQuantity != 6 {
		t.Fatalf("got %s filled %v pending %v, want OPEN 4, 6", o.Status, o.FilledQuantity, o.PendingQuantity)
	}
	s.Hold(false)
	if o := orderFromList(t, c, id); o.Status != StatusComplete || o.FilledQuantity != 10 {
		t.Errorf("got %s filled %v after Hold(false), want COMPLETE 10", o.Status, o.FilledQuantity)
	}
}

func TestModifyOrderMovesALimit(t *testing.T) {
	s := newFake(t)
	c := login(t, s, testUser)
	id := place(t, c, limitBuy(2, 1400, ""))
	if _, err := c.ModifyOrder("regular", id, kiteconnect.OrderParams{Price: 1500.05}); err != nil {
		t.Fatalf("ModifyOrder: %v", err)
	}
	o := orderFromList(t, c, id)
	if o.Status != StatusComplete || !o.Modified {
		t.Errorf("got %s modified=%v, want COMPLETE modified", o.Status, o.Modified)
	}
}

func TestAMORestsWithoutFilling(t *testing.T) {
	s := newFake(t)
	c := login(t, s, testUser)
	r, err := c.PlaceOrder("amo", marketBuy(1, ""))
	if err != nil {
		t.Fatalf("PlaceOrder amo: %v", err)
	}
	if got, want := orderFromList(t, c, r.OrderID).Status, StatusAMOReceived; got != want {
		t.Errorf("status: got %q, want %q", got, want)
	}
	_, err = c.CancelOrder("regular", r.OrderID, nil)
	wantErrorType(t, err, InputException, http.StatusBadRequest)
	if _, err := c.CancelOrder("amo", r.OrderID, nil); err != nil {
		t.Errorf("CancelOrder amo: %v", err)
	}
}

func TestOrderBookStartsEmptyEachDay(t *testing.T) {
	s := newFake(t)
	clk := deskbottest.NewClock(time.Date(2026, 12, 2, 10, 0, 0, 0, IST))
	s.SetNow(clk.Now)
	c := login(t, s, testUser)
	place(t, c, marketBuy(1, ""))
	clk.Set(time.Date(2026, 12, 3, 9, 0, 0, 0, IST))
	c = login(t, s, testUser) // yesterday's session ended at 06:00
	orders, err := c.GetOrders()
	if err != nil {
		t.Fatalf("GetOrders: %v", err)
	}
	if len(orders) != 0 {
		t.Errorf("got %d orders the next day, want 0", len(orders))
	}
}

func TestIOCLimitAwayFromTheMarketIsCancelled(t *testing.T) {
	s := newFake(t)
	c := login(t, s, testUser)
	p := limitBuy(2, 1450, "")
	p.Validity = "IOC"
	o := orderFromList(t, c, place(t, c, p))
	if o.Status != StatusCancelled || o.CancelledQuantity != 2 {
		t.Errorf("got %s cancelled %v, want CANCELLED 2", o.Status, o.CancelledQuantity)
	}
}

func TestOrderTradesListsEachFill(t *testing.T) {
	s := newFake(t)
	c := login(t, s, testUser)
	s.Hold(true)
	id := place(t, c, limitBuy(6, 1500, ""))
	for _, q := range []int{2, 4} {
		if err := s.FillPartly(id, q); err != nil {
			t.Fatalf("FillPartly %d: %v", q, err)
		}
	}
	trades, err := c.GetOrderTrades(id)
	if err != nil {
		t.Fatalf("GetOrderTrades: %v", err)
	}
	if len(trades) != 2 || trades[0].Quantity != 2 || trades[1].Quantity != 4 || trades[0].TradeID == trades[1].TradeID {
		t.Errorf("got %+v, want two trades of 2 and 4", trades)
	}
	if got, want := orderFromList(t, c, id).Status, StatusComplete; got != want {
		t.Errorf("status: got %q, want %q", got, want)
	}
}
