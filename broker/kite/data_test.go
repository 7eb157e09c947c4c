package kite

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/broker/kitetest"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/store/storetest"
)

var (
	niftyIndex = kitetest.Instrument{Exchange: "NSE", Tradingsymbol: "NIFTY 50", Token: 256265&^0xFF | 9, LastPrice: 24480, Segment: "INDICES"}
	expiry     = time.Date(2026, 12, 29, 0, 0, 0, 0, deskbot.IST)
)

// niftyOption is a NIFTY option of expiry on the fake, its token's low
// byte NFO's (2).
func niftyOption(strike float64, typ string, last float64, n uint32) kitetest.Instrument {
	ts := "NIFTY26DEC" + strconv.FormatFloat(strike, 'f', -1, 64) + typ
	return kitetest.Instrument{Exchange: "NFO", Tradingsymbol: ts, Name: "NIFTY", Token: (10000+n)<<8 | 2, LastPrice: last, LotSize: 75,
		Expiry: expiry, Strike: strike, Type: typ, OI: int64(1000 * (n + 1)), Volume: int64(500 * (n + 1))}
}

// mustDataBroker is a broker on the rig's fake listing INFY, TCS, NIFTY's
// index and nine of its December strikes either side of 24,500 (calls and
// puts), logged in, the day's NSE and NFO lists loaded.
func mustDataBroker(t *testing.T) (*Broker, *rig) {
	t.Helper()
	r := mustRig(t)
	r.kt.AddInstruments(niftyIndex)
	for i := range 9 {
		k := 24300 + 50*float64(i)
		r.kt.AddInstruments(niftyOption(k, "CE", 300-25*float64(i), uint32(2*i)), niftyOption(k, "PE", 100+25*float64(i), uint32(2*i+1)))
	}
	b, _ := r.mustBroker(t, options{exchanges: []string{"NSE", "NFO"}})
	return b, r
}

// A quote reads Kite's figures: last price and its time, the day's OHLC,
// the change from the close, volume; a symbol Kite does not list is
// refused naming it, before any request.
func TestKiteQuotesReadKitesFigures(t *testing.T) {
	b, r := mustDataBroker(t)
	r.kt.AddInstruments(kitetest.Instrument{Exchange: "NSE", Tradingsymbol: "INFY", Name: "INFOSYS", Token: 408065, LastPrice: 1604.35,
		Open: 1590, High: 1611.5, Low: 1588.2, Close: 1595.1, Volume: 1234567})
	before := r.kt.Requests("GET", "/quote")
	got, err := b.Quotes(t.Context(), []string{"INFY", "NSE:TCS"})
	if err != nil {
		t.Fatal(err)
	}
	q := got["INFY"]
	if q.Symbol != "INFY" || q.Last.Value != 1604.35 || q.Open != 1590 || q.High != 1611.5 || q.Low != 1588.2 || q.Close != 1595.1 || q.Volume != 1234567 {
		t.Errorf("INFY quote %+v", q)
	}
	if q.Change != 9.25 || q.ChangePct != 0.58 {
		t.Errorf("change %v (%v%%), want 9.25 (0.58%%)", q.Change, q.ChangePct)
	}
	if q.Last.At.IsZero() || time.Since(q.Last.At) > time.Minute {
		t.Errorf("last price's time %v, want Kite's timestamp (now)", q.Last.At)
	}
	if tq := got["NSE:TCS"]; tq.Symbol != "TCS" || tq.Last.Value != 3500 {
		t.Errorf("TCS quote %+v", tq)
	}
	if n := r.kt.Requests("GET", "/quote") - before; n != 1 {
		t.Errorf("%d quote requests for two symbols, want 1", n)
	}
	before = r.kt.Requests("GET", "/quote")
	_, err = b.Quotes(t.Context(), []string{"INFY", "NOSUCH"})
	if deskbot.ErrorCode(err) != deskbot.EINVALID || !strings.Contains(deskbot.ErrorMessage(err), "NOSUCH") {
		t.Errorf("an unlisted symbol: %v, want EINVALID naming it", err)
	}
	if n := r.kt.Requests("GET", "/quote") - before; n != 0 {
		t.Errorf("%d quote requests for a refused read, want none", n)
	}
}

// Desks asking at once are served at Kite's pace: at most one quote
// request a second reaches Kite, and none is refused with a 429.
func TestKiteQuotesKeepKitesPace(t *testing.T) {
	b, r := mustDataBroker(t)
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			if _, err := b.Quotes(t.Context(), []string{"INFY"}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := r.kt.MaxPerSecond("GET", "/quote"); got > 1 {
		t.Errorf("%d quote requests within a second, want at most 1", got)
	}
	if got := r.kt.Served429(); got != 0 {
		t.Errorf("%d answers of 429, want none", got)
	}
}

// Candles are Kite's for the symbol's instrument token; a span past the
// interval's cap is refused with the cap in words, before any request.
func TestKiteCandles(t *testing.T) {
	b, r := mustDataBroker(t)
	at := time.Date(2026, 12, 1, 9, 15, 0, 0, deskbot.IST)
	r.kt.SetCandles("NSE:INFY", "5minute", []kitetest.Candle{
		{At: at, Open: 1500, High: 1510, Low: 1495, Close: 1505, Volume: 1000},
		{At: at.Add(5 * time.Minute), Open: 1505, High: 1507, Low: 1501, Close: 1502, Volume: 800},
		{At: at.AddDate(0, 0, 1), Open: 1, High: 1, Low: 1, Close: 1, Volume: 1},
	})
	got, err := b.Candles(t.Context(), deskbot.CandleQuery{Symbol: "INFY", Interval: deskbot.Interval5Minute, From: at, To: at.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !got[0].At.Equal(at) || got[0].Close != 1505 || got[1].High != 1507 || got[1].Volume != 800 {
		t.Errorf("candles %+v, want the two within the span", got)
	}
	before := r.kt.Requests("GET", "/instruments/historical/*/*")
	_, err = b.Candles(t.Context(), deskbot.CandleQuery{Symbol: "INFY", Interval: deskbot.IntervalMinute, From: at.AddDate(0, 0, -61), To: at})
	if deskbot.ErrorCode(err) != deskbot.EINVALID || !strings.Contains(deskbot.ErrorMessage(err), "at most 60 days at a time") {
		t.Errorf("61 days of minutes: %v, want EINVALID saying the cap", err)
	}
	if n := r.kt.Requests("GET", "/instruments/historical/*/*") - before; n != 0 {
		t.Errorf("%d candle requests for a refused span, want none", n)
	}
	// The fake refuses it too, in Kite's words, should a span reach it.
	_, err = b.kite.Historical(t.Context(), 408065, "minute", at.AddDate(0, 0, -61), at)
	if err == nil || !strings.Contains(err.Error(), "interval exceeds max limit: 60 days") {
		t.Errorf("the fake took 61 days of minutes: %v", err)
	}
}

// Candles keep Kite's pace of three requests a second, with no 429.
func TestKiteCandlesKeepKitesPace(t *testing.T) {
	b, r := mustDataBroker(t)
	at := time.Date(2026, 12, 1, 9, 15, 0, 0, deskbot.IST)
	var wg sync.WaitGroup
	for range 7 {
		wg.Go(func() {
			if _, err := b.Candles(t.Context(), deskbot.CandleQuery{Symbol: "INFY", Interval: deskbot.IntervalDay, From: at.AddDate(-1, 0, 0), To: at}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := r.kt.MaxPerSecond("GET", "/instruments/historical/*/*"); got > 3 {
		t.Errorf("%d candle requests within a second, want at most 3", got)
	}
	if got := r.kt.Served429(); got != 0 {
		t.Errorf("%d answers of 429, want none", got)
	}
}

// The chain is the day's list's strikes around the index's price, each
// side with Kite's last price, open interest and volume, read in one
// quote request.
func TestKiteOptionChain(t *testing.T) {
	b, r := mustDataBroker(t)
	before := r.kt.Requests("GET", "/quote")
	ch, err := b.OptionChain(t.Context(), "NIFTY", "", 2)
	if err != nil {
		t.Fatal(err)
	}
	if n := r.kt.Requests("GET", "/quote") - before; n != 1 {
		t.Errorf("%d quote requests for a chain, want 1", n)
	}
	if ch.Underlying != "NIFTY 50" || ch.UnderlyingPrice.Value != 24480 || ch.Expiry != "2026-12-29" || len(ch.Strikes) != 5 {
		t.Fatalf("chain %+v", ch)
	}
	if ch.Strikes[0].Strike != 24400 || ch.Strikes[2].Strike != 24500 || ch.Strikes[4].Strike != 24600 {
		t.Errorf("strikes %v..%v, want 24400..24600 around 24480", ch.Strikes[0].Strike, ch.Strikes[4].Strike)
	}
	atm := ch.Strikes[2]
	if atm.Call == nil || atm.Put == nil || atm.Call.Symbol != "NFO:NIFTY26DEC24500CE" || atm.Call.Last.Value != 200 || atm.Put.Last.Value != 200 {
		t.Fatalf("24500 %+v / %+v", atm.Call, atm.Put)
	}
	if atm.Call.OpenInterest != 9000 || atm.Call.Volume != 4500 {
		t.Errorf("24500 call OI %d volume %d, want 9000 and 4500", atm.Call.OpenInterest, atm.Call.Volume)
	}
	if _, err := b.OptionChain(t.Context(), "NIFTY", "2026-12-30", 2); deskbot.ErrorCode(err) != deskbot.EINVALID || !strings.Contains(deskbot.ErrorMessage(err), "2026-12-29") {
		t.Errorf("an expiry not listed: %v, want EINVALID naming the listed one", err)
	}
	if _, err := b.OptionChain(t.Context(), "NOSUCH", "", 2); deskbot.ErrorCode(err) != deskbot.EINVALID {
		t.Errorf("an unknown underlying: %v, want EINVALID", err)
	}
}

// Search reads the day's list: by text, by underlying and type.
func TestKiteSearchInstruments(t *testing.T) {
	b, _ := mustDataBroker(t)
	got, err := b.SearchInstruments(t.Context(), deskbot.InstrumentQuery{Text: "infy"})
	if err != nil || len(got) != 1 || got[0].Symbol != "INFY" || got[0].Type != deskbot.InstrumentEQ {
		t.Errorf("search infy = %+v, %v", got, err)
	}
	puts, err := b.SearchInstruments(t.Context(), deskbot.InstrumentQuery{Underlying: "NIFTY", Type: "PE", Limit: 100})
	if err != nil || len(puts) != 9 {
		t.Fatalf("NIFTY puts = %d, %v; want 9", len(puts), err)
	}
	for i, in := range puts {
		if in.Type != deskbot.InstrumentPE || in.Expiry != "2026-12-29" || in.LotSize != 75 || in.Underlying != "NIFTY 50" || (i > 0 && in.Strike <= puts[i-1].Strike) {
			t.Errorf("put %d: %+v", i, in)
		}
	}
	if got, _ := b.SearchInstruments(t.Context(), deskbot.InstrumentQuery{Underlying: "NIFTY", Limit: 3}); len(got) != 3 {
		t.Errorf("limit 3 gave %d", len(got))
	}
}

// Funds are Kite's margins by segment; holdings Kite's.
func TestKiteFundsAndHoldings(t *testing.T) {
	b, r := mustDataBroker(t)
	r.kt.SetFunds(testUser, 250000)
	r.kt.SetHoldings(testUser, []kitetest.Holding{{Exchange: "NSE", Tradingsymbol: "INFY", Quantity: 10, T1Quantity: 2, AveragePrice: 1400, LastPrice: 1500}})
	fs, err := b.Funds(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 2 || fs[0].Segment != "equity" || fs[0].Available != 250000 || fs[0].Used != 0 || fs[1].Segment != "commodity" {
		t.Errorf("funds %+v", fs)
	}
	hs, err := b.Holdings(t.Context())
	if err != nil || len(hs) != 1 || hs[0] != (deskbot.Holding{Symbol: "INFY", Quantity: 12, AvgPrice: 1400, LastPrice: 1500}) {
		t.Errorf("holdings %+v, %v", hs, err)
	}
}

// A price Kite's ticker sends reaches StreamPrices' fn as the symbol it
// was followed under.
func TestKiteStreamPricesFromTheTicker(t *testing.T) {
	b, r := mustDataBroker(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	syms := make(chan []string, 1)
	var mu sync.Mutex
	var ticks []deskbot.Tick
	done := make(chan error, 1)
	go func() {
		done <- b.StreamPrices(ctx, syms, func(tk deskbot.Tick) { mu.Lock(); ticks = append(ticks, tk); mu.Unlock() })
	}()
	syms <- []string{"INFY", "NFO:NIFTY26DEC24500CE"}
	price := 1500.0
	deskbottest.Eventually(t, "a tick of INFY", func() bool {
		price += 0.05
		r.kt.SetLTP("NSE:INFY", price)
		mu.Lock()
		defer mu.Unlock()
		for _, tk := range ticks {
			if tk.Symbol == "INFY" && tk.Price.Value > 1500 {
				return true
			}
		}
		return false
	})
	r.kt.SetLTP("NFO:NIFTY26DEC24500CE", 211.5)
	deskbottest.Eventually(t, "a tick of the option", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, tk := range ticks {
			if tk.Symbol == "NFO:NIFTY26DEC24500CE" && tk.Price.Value == 211.5 {
				return true
			}
		}
		return false
	})
	cancel()
	if err := <-done; err != context.Canceled {
		t.Errorf("StreamPrices ended with %v, want context.Canceled", err)
	}
}

// The paper broker on Kite's prices (BROKER=paper-kite) reads Kite's
// market: its quotes and chains are Kite's, and it fills at Kite's price.
func TestPaperKiteReadsKitesMarket(t *testing.T) {
	b, r := mustDataBroker(t)
	st := storetest.MustReopen(t, r.st)
	p := broker.NewPaperMarket(st, r.clock.Now, b.day).Reading(b.day).Checking(func(deskbot.Order) error { return nil })
	r.kt.SetLTP("NSE:INFY", 1612.4)
	qs, err := p.Quotes(t.Context(), []string{"INFY"})
	if err != nil || qs["INFY"].Last.Value != 1612.4 {
		t.Fatalf("paper-kite quote %+v, %v; want Kite's 1612.4", qs, err)
	}
	ch, err := p.OptionChain(t.Context(), "NIFTY", "", 1)
	if err != nil || len(ch.Strikes) != 3 || ch.UnderlyingPrice.Value != 24480 {
		t.Fatalf("paper-kite chain %+v, %v", ch, err)
	}
	po, err := p.PlaceOrder(t.Context(), "main", deskbottest.NewKey(), deskbot.Order{Symbol: "INFY", Side: deskbot.Buy, Quantity: 1, Type: deskbot.OrderMarket, Product: deskbot.ProductCNC})
	if err != nil || po.AvgPrice != 1612.4 {
		t.Errorf("paper-kite fill %+v, %v; want at Kite's 1612.4", po, err)
	}
}
