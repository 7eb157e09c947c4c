package kitetest

import (
	"net/http"
	"sync"
	"testing"
	"time"

	kiteticker "github.com/zerodha/gokiteconnect/v4/ticker"

	"github.com/deskbot/deskbot/deskbottest"
)

// Historical candles reach the official client within the span asked,
// with open interest; Kite's refusals come in its words and shape.
func TestHistoricalCandlesAndTheirRefusals(t *testing.T) {
	s := newFake(t)
	c := login(t, s, testUser)
	// A second passes between requests: Kite takes three a second.
	clock := deskbottest.NewClock(time.Date(2026, 12, 1, 11, 0, 0, 0, IST))
	s.SetNow(clock.Now)
	at := time.Date(2026, 12, 1, 9, 15, 0, 0, IST)
	s.SetCandles("NSE:INFY", "minute", []Candle{
		{At: at, Open: 1500, High: 1502, Low: 1499, Close: 1501, Volume: 300, OI: 7},
		{At: at.Add(time.Minute), Open: 1501, High: 1503, Low: 1500, Close: 1502.5, Volume: 200},
		{At: at.Add(time.Hour), Open: 1, High: 1, Low: 1, Close: 1, Volume: 1},
	})
	got, err := c.GetHistoricalData(int(infy.Token), "minute", at, at.Add(10*time.Minute), false, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !got[0].Date.Time.Equal(at) || got[0].OI != 7 || got[1].Close != 1502.5 || got[1].Volume != 200 {
		t.Errorf("candles %+v, want the two within the span", got)
	}
	for _, tc := range []struct {
		token    int
		interval string
		from, to time.Time
		want     string
	}{
		{int(infy.Token), "minute", at.AddDate(0, 0, -61), at, "interval exceeds max limit: 60 days"},
		{int(infy.Token), "60minute", at.AddDate(0, 0, -401), at, "interval exceeds max limit: 400 days"},
		{int(infy.Token), "2minute", at, at.Add(time.Hour), "invalid interval"},
		{999, "day", at.AddDate(0, 0, -3), at, "invalid token"},
	} {
		clock.Add(time.Second)
		_, err := c.GetHistoricalData(tc.token, tc.interval, tc.from, tc.to, false, false)
		if ke := wantErrorType(t, err, InputException, http.StatusBadRequest); ke.Message != tc.want {
			t.Errorf("%s %v..%v: %q, want %q", tc.interval, tc.from, tc.to, ke.Message, tc.want)
		}
	}
}

// Past three candle requests a second the fake answers 429 in Kite's
// shape, and counts what arrived in each second.
func TestHistoricalPaceIsThreeASecond(t *testing.T) {
	s := newFake(t)
	c := login(t, s, testUser)
	clock := deskbottest.NewClock(time.Date(2026, 12, 1, 11, 0, 0, 0, IST))
	s.SetNow(clock.Now)
	at := time.Date(2026, 12, 1, 9, 15, 0, 0, IST)
	for i := range 4 {
		_, err := c.GetHistoricalData(int(infy.Token), "day", at.AddDate(0, 0, -5), at, false, false)
		if i < 3 && err != nil {
			t.Fatalf("request %d: %v", i+1, err)
		}
		if i == 3 {
			wantErrorType(t, err, NetworkException, http.StatusTooManyRequests)
		}
	}
	if got := s.MaxPerSecond(http.MethodGet, "/instruments/historical/*/*"); got != 4 {
		t.Errorf("MaxPerSecond = %d, want 4 (the refused one arrived too)", got)
	}
	clock.Add(time.Second)
	if _, err := c.GetHistoricalData(int(infy.Token), "day", at.AddDate(0, 0, -5), at, false, false); err != nil {
		t.Errorf("a second later: %v", err)
	}
}

// Holdings reach the official client.
func TestHoldingsReachTheClient(t *testing.T) {
	s := newFake(t)
	c := login(t, s, testUser)
	s.SetHoldings(testUser, []Holding{{Exchange: "NSE", Tradingsymbol: "INFY", Quantity: 5, AveragePrice: 1400, LastPrice: 1500}})
	hs, err := c.GetHoldings()
	if err != nil {
		t.Fatal(err)
	}
	if len(hs) != 1 || hs[0].Tradingsymbol != "INFY" || hs[0].Quantity != 5 || hs[0].AveragePrice != 1400 || hs[0].InstrumentToken != infy.Token || hs[0].PnL != 500 {
		t.Errorf("holdings %+v", hs)
	}
}

// A quote-mode tick (44 bytes) carries the day's OHLC and volume as
// Kite's packet does, parsed by the official ticker.
func TestQuoteModeTickCarriesTheDaysFigures(t *testing.T) {
	s := newFake(t)
	login(t, s, testUser)
	s.AddInstruments(Instrument{Exchange: "NSE", Tradingsymbol: "INFY", Name: "INFOSYS", Token: infy.Token, LastPrice: 1500,
		Open: 1490, High: 1510, Low: 1480, Close: 1495, Volume: 123456})
	h := startTicker(t, s, s.AccessTokens()[0], func(tk *kiteticker.Ticker) {
		_ = tk.Subscribe([]uint32{infy.Token})
		_ = tk.SetMode(kiteticker.ModeQuote, []uint32{infy.Token})
	})
	price := 1500.0
	var mu sync.Mutex
	deskbottest.Eventually(t, "a quote tick for INFY", func() bool {
		mu.Lock()
		price += 0.05
		mu.Unlock()
		s.SetLTP("NSE:INFY", price)
		_, ok := h.lastTick()
		return ok
	})
	tick, _ := h.lastTick()
	if tick.Mode != string(kiteticker.ModeQuote) || tick.OHLC.Open != 1490 || tick.OHLC.High != 1510 || tick.OHLC.Low != 1480 || tick.OHLC.Close != 1495 || tick.VolumeTraded != 123456 {
		t.Errorf("tick %+v, want quote mode with the day's figures", tick)
	}
}
