package kitetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/deskbot/deskbot/deskbottest"
	kiteconnect "github.com/zerodha/gokiteconnect/v4"
	"github.com/zerodha/gokiteconnect/v4/models"
	kiteticker "github.com/zerodha/gokiteconnect/v4/ticker"
)

// heard collects what a ticker's callbacks receive.
type heard struct {
	mu     sync.Mutex
	orders []kiteconnect.Order
	ticks  []models.Tick
	errs   []error
}

func (h *heard) statuses() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, o := range h.orders {
		out = append(out, o.Status)
	}
	return out
}

func (h *heard) lastTick() (models.Tick, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.ticks) == 0 {
		return models.Tick{}, false
	}
	return h.ticks[len(h.ticks)-1], true
}

// startTicker runs the official ticker against s with accessToken until the
// test ends; onConnect runs on each connection.
func startTicker(t *testing.T, s *Server, accessToken string, onConnect func(*kiteticker.Ticker)) *heard {
	t.Helper()
	h := &heard{}
	tk := kiteticker.New(testKey, accessToken)
	tk.SetRootURL(s.TickerURL())
	tk.OnOrderUpdate(func(o kiteconnect.Order) {
		h.mu.Lock()
		h.orders = append(h.orders, o)
		h.mu.Unlock()
	})
	tk.OnTick(func(tick models.Tick) {
		h.mu.Lock()
		h.ticks = append(h.ticks, tick)
		h.mu.Unlock()
	})
	tk.OnError(func(err error) {
		h.mu.Lock()
		h.errs = append(h.errs, err)
		h.mu.Unlock()
	})
	if onConnect != nil {
		tk.OnConnect(func() { onConnect(tk) })
	}
	ctx, cancel := context.WithCancel(context.Background())
	go tk.ServeWithContext(ctx)
	// Registered after New's cleanup, so it runs first: the ticker stops
	// before the server closes its connection under it.
	t.Cleanup(cancel)
	return h
}

func TestTickerHearsEveryOrderStateChange(t *testing.T) {
	s := newFake(t)
	c := login(t, s, testUser)
	h := startTicker(t, s, s.AccessTokens()[0], nil)
	deskbottest.Eventually(t, "the ticker to connect", func() bool { return s.TickerConnections() == 1 })

	id := place(t, c, limitBuy(10, 1490, "tick1"))
	if err := s.FillPartly(id, 4); err != nil {
		t.Fatalf("FillPartly: %v", err)
	}
	s.SetLTP("NSE:INFY", 1489)

	want := []string{StatusOpen, StatusUpdate, StatusComplete}
	deskbottest.Eventually(t, "three order updates", func() bool { return len(h.statuses()) == len(want) })
	for i, got := range h.statuses() {
		if got != want[i] {
			t.Errorf("update %d: got %q, want %q", i, got, want[i])
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	partial, last := h.orders[1], h.orders[2]
	if partial.OrderID != id || partial.Tag != "tick1" || partial.FilledQuantity != 4 || partial.PendingQuantity != 6 {
		t.Errorf("partial update: got %+v, want 4 of 10 filled for %s tagged tick1", partial, id)
	}
	if last.FilledQuantity != 10 || last.AveragePrice != 1490 || last.OrderTimestamp.IsZero() {
		t.Errorf("last update: got filled %v at %v stamped %v, want 10 at 1490 with a timestamp",
			last.FilledQuantity, last.AveragePrice, last.OrderTimestamp)
	}
}

func TestTickerRefusesABadToken(t *testing.T) {
	s := newFake(t)
	login(t, s, testUser)
	h := startTicker(t, s, "not-a-token", nil)
	deskbottest.Eventually(t, "the handshake error", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return len(h.errs) > 0
	})
	if got := s.TickerConnections(); got != 0 {
		t.Errorf("got %d connections, want 0", got)
	}
}

func TestTickerSendsTicksToSubscribers(t *testing.T) {
	s := newFake(t)
	login(t, s, testUser)
	h := startTicker(t, s, s.AccessTokens()[0], func(tk *kiteticker.Ticker) {
		_ = tk.Subscribe([]uint32{infy.Token})
		_ = tk.SetMode(kiteticker.ModeFull, []uint32{infy.Token})
	})
	price := 1500.0
	// The subscription reaches the fake some time after the connection;
	// keep moving the price until a tick arrives.
	deskbottest.Eventually(t, "a full tick for INFY", func() bool {
		price += 0.05
		s.SetLTP("NSE:INFY", price)
		tick, ok := h.lastTick()
		return ok && tick.Mode == string(kiteticker.ModeFull) && tick.LastPrice > 1500
	})
	tick, _ := h.lastTick()
	if tick.InstrumentToken != infy.Token || tick.Mode != string(kiteticker.ModeFull) || tick.LastPrice < 1500 {
		t.Errorf("got tick %+v, want a full-mode INFY tick above 1500", tick)
	}
}

func TestExpiredSessionClosesTheTicker(t *testing.T) {
	s := newFake(t)
	login(t, s, testUser)
	startTicker(t, s, s.AccessTokens()[0], nil)
	deskbottest.Eventually(t, "the ticker to connect", func() bool { return s.TickerConnections() == 1 })
	s.ExpireSession()
	deskbottest.EventuallyWithin(t, 5*time.Second, "the ticker connection to close", func() bool {
		return s.TickerConnections() == 0
	})
}

// Kite answers a subscription with the instrument's current packet, and a
// change of mode with the packet of the new mode, before the price moves.
func TestTickerAnswersASubscriptionWithTheCurrentTick(t *testing.T) {
	s := newFake(t)
	login(t, s, testUser)
	h := startTicker(t, s, s.AccessTokens()[0], func(tk *kiteticker.Ticker) {
		_ = tk.Subscribe([]uint32{infy.Token})
		_ = tk.SetMode(kiteticker.ModeLTP, []uint32{infy.Token})
	})
	deskbottest.Eventually(t, "an LTP tick of INFY without a price move", func() bool {
		tick, ok := h.lastTick()
		return ok && tick.Mode == string(kiteticker.ModeLTP) && tick.LastPrice == 1500
	})
}
