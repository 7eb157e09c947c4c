package broker_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/deskbottest"
)

// A Wednesday in the paper market's session, India time.
var inSession = time.Date(2026, 3, 4, 11, 30, 20, 0, deskbot.IST)

func mustWalkPaper(t *testing.T, clock *deskbottest.Clock) *broker.Paper {
	t.Helper()
	st := mustStore(t)
	return broker.NewPaper(st, clock.Now).Accounting([]string{"main", "fno"})
}

// What a desk reads of the paper market is what it fills at: a quote's
// last price is the fill's price, and the candle of the fill's minute
// closes at it.
func TestPaperQuotesAndCandlesAgreeWithFills(t *testing.T) {
	clock := deskbottest.NewClock(inSession)
	p := mustWalkPaper(t, clock)
	ctx := t.Context()
	qs, err := p.Quotes(ctx, []string{"INFY", "RELIANCE"})
	if err != nil {
		t.Fatal(err)
	}
	po, err := p.PlaceOrder(ctx, "main", deskbottest.NewKey(), deskbot.Order{Symbol: "INFY", Side: deskbot.Buy, Quantity: 3, Type: deskbot.OrderMarket, Product: deskbot.ProductCNC})
	if err != nil {
		t.Fatal(err)
	}
	q := qs["INFY"]
	if got, want := q.Last.Value, po.AvgPrice; got != want {
		t.Errorf("quote's last %v, fill at %v: want them equal", got, want)
	}
	if !q.Last.At.Equal(inSession) || q.Symbol != "INFY" {
		t.Errorf("quote %+v, want INFY as of %v", q, inSession)
	}
	if !(q.Low <= q.Last.Value && q.Last.Value <= q.High && q.Low <= q.Open && q.Open <= q.High) || q.Close <= 0 || q.Volume <= 0 {
		t.Errorf("quote's day figures do not hold together: %+v", q)
	}
	if len(q.Bids) != 5 || len(q.Asks) != 5 || q.Bids[0].Price >= q.Asks[0].Price {
		t.Errorf("depth %+v / %+v, want five levels each side, bids below asks", q.Bids, q.Asks)
	}
	if got, want := q.Change, deskbot.RoundPaise(q.Last.Value-q.Close); got != want {
		t.Errorf("change %v, want %v", got, want)
	}
	cs, err := p.Candles(ctx, deskbot.CandleQuery{Symbol: "INFY", Interval: deskbot.IntervalMinute, From: inSession.Truncate(time.Minute).Add(-30 * time.Minute), To: inSession})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 31 {
		t.Fatalf("%d minute candles over 30 minutes up to now, want 31", len(cs))
	}
	last := cs[len(cs)-1]
	if got, want := last.Close, po.AvgPrice; got != want || !last.At.Equal(inSession.Truncate(time.Minute)) {
		t.Errorf("last candle %+v, want the fill's minute closing at %v", last, want)
	}
	for i := 1; i < len(cs); i++ {
		if cs[i].Open != cs[i-1].Close {
			t.Errorf("candle %d opens at %v, the one before closed at %v", i, cs[i].Open, cs[i-1].Close)
		}
		if cs[i].High < max(cs[i].Open, cs[i].Close) || cs[i].Low > min(cs[i].Open, cs[i].Close) {
			t.Errorf("candle %+v: high and low do not bound it", cs[i])
		}
	}
	// A day candle of today's session closes at the price now.
	days, err := p.Candles(ctx, deskbot.CandleQuery{Symbol: "INFY", Interval: deskbot.IntervalDay, From: inSession.AddDate(0, 0, -7), To: inSession})
	if err != nil {
		t.Fatal(err)
	}
	if len(days) != 6 || days[len(days)-1].Close != po.AvgPrice {
		t.Errorf("day candles %+v, want 6 weekdays, today's closing at %v", days, po.AvgPrice)
	}
}

// Spans past Kite's caps and intervals it lacks are refused with words
// that say what to send.
func TestPaperCandlesRefuseSpansPastTheCap(t *testing.T) {
	clock := deskbottest.NewClock(inSession)
	p := mustWalkPaper(t, clock)
	for _, tc := range []struct {
		q    deskbot.CandleQuery
		want string
	}{
		{deskbot.CandleQuery{Symbol: "INFY", Interval: deskbot.IntervalMinute, From: inSession.AddDate(0, 0, -61), To: inSession}, "at most 60 days"},
		{deskbot.CandleQuery{Symbol: "INFY", Interval: deskbot.Interval60Minute, From: inSession.AddDate(-2, 0, 0), To: inSession}, "at most 400 days"},
		{deskbot.CandleQuery{Symbol: "INFY", Interval: "2minute", From: inSession.AddDate(0, 0, -1), To: inSession}, "send one of minute, 3minute"},
		{deskbot.CandleQuery{Symbol: "INFY", Interval: deskbot.IntervalDay, From: inSession, To: inSession.AddDate(0, 0, -1)}, "before it starts"},
		{deskbot.CandleQuery{Symbol: "NFO:NIFTY25JAN24000CE", Interval: deskbot.IntervalDay, From: inSession.AddDate(0, 0, -3), To: inSession}, "expired"},
	} {
		_, err := p.Candles(t.Context(), tc.q)
		if deskbot.ErrorCode(err) != deskbot.EINVALID || !strings.Contains(deskbot.ErrorMessage(err), tc.want) {
			t.Errorf("Candles(%+v) = %v, want EINVALID saying %q", tc.q, err, tc.want)
		}
	}
}

// The chain is the walk's: its options' prices are what an order for one
// fills at, calls fall and puts rise with the strike.
func TestPaperOptionChainFromTheWalk(t *testing.T) {
	clock := deskbottest.NewClock(inSession)
	p := mustWalkPaper(t, clock)
	ctx := t.Context()
	ch, err := p.OptionChain(ctx, "NIFTY", "", 5)
	if err != nil {
		t.Fatal(err)
	}
	if ch.Expiry != "2026-03-31" || ch.Underlying != "NIFTY 50" || len(ch.Strikes) != 11 {
		t.Fatalf("chain %s %s with %d strikes, want NIFTY 50's of 2026-03-31 (March's last Tuesday) with 11", ch.Underlying, ch.Expiry, len(ch.Strikes))
	}
	atm := ch.Strikes[5].Strike
	if d := atm - ch.UnderlyingPrice.Value; d > 25 || d < -25 {
		t.Errorf("middle strike %v is not at the money (%v)", atm, ch.UnderlyingPrice.Value)
	}
	for i := 1; i < len(ch.Strikes); i++ {
		a, b := ch.Strikes[i-1], ch.Strikes[i]
		if b.Strike-a.Strike != 50 || b.Call.Last.Value > a.Call.Last.Value || b.Put.Last.Value < a.Put.Last.Value {
			t.Errorf("strikes %v→%v: call %v→%v, put %v→%v", a.Strike, b.Strike, a.Call.Last.Value, b.Call.Last.Value, a.Put.Last.Value, b.Put.Last.Value)
		}
	}
	call := ch.Strikes[5].Call
	if want := "NFO:NIFTY26MAR" + strconv.FormatFloat(atm, 'f', -1, 64) + "CE"; call.Symbol != want {
		t.Errorf("call symbol %q", call.Symbol)
	}
	in, err := p.Instrument(ctx, call.Symbol)
	if err != nil || in.LotSize != 75 || in.Underlying != "NIFTY 50" || in.Expiry != "2026-03-31" {
		t.Fatalf("Instrument(%s) = %+v, %v", call.Symbol, in, err)
	}
	po, err := p.PlaceOrder(ctx, "fno", deskbottest.NewKey(), deskbot.Order{Symbol: call.Symbol, Side: deskbot.Buy, Quantity: 75, Type: deskbot.OrderMarket, Product: deskbot.ProductNRML})
	if err != nil {
		t.Fatal(err)
	}
	if po.AvgPrice != call.Last.Value {
		t.Errorf("bought %s at %v, the chain showed %v", call.Symbol, po.AvgPrice, call.Last.Value)
	}
	if _, err := p.OptionChain(ctx, "NIFTY", "2026-03-26", 5); deskbot.ErrorCode(err) != deskbot.EINVALID || !strings.Contains(deskbot.ErrorMessage(err), "2026-03-31") {
		t.Errorf("an expiry not listed: %v, want EINVALID naming the listed ones", err)
	}
	if _, err := p.OptionChain(ctx, "NOSUCH", "", 5); deskbot.ErrorCode(err) != deskbot.EINVALID {
		t.Errorf("an unknown underlying: %v, want EINVALID", err)
	}
	found, err := p.SearchInstruments(ctx, deskbot.InstrumentQuery{Underlying: "BANKNIFTY", Type: deskbot.InstrumentPE, Limit: 500})
	if err != nil || len(found) == 0 {
		t.Fatalf("search BANKNIFTY puts: %v %v", found, err)
	}
	for _, in := range found {
		if in.Type != deskbot.InstrumentPE || in.Underlying != "NIFTY BANK" || in.LotSize != 35 {
			t.Errorf("search found %+v", in)
		}
	}
	if got, err := p.SearchInstruments(ctx, deskbot.InstrumentQuery{Text: "infy"}); err != nil || len(got) != 1 || got[0].Symbol != "INFY" {
		t.Errorf("search infy = %+v, %v", got, err)
	}
}

// The paper account's funds and holdings are its desks' books.
func TestPaperFundsAndHoldings(t *testing.T) {
	clock := deskbottest.NewClock(inSession)
	p := mustWalkPaper(t, clock)
	ctx := t.Context()
	for _, desk := range []string{"main", "fno"} {
		if _, err := p.PlaceOrder(ctx, desk, deskbottest.NewKey(), deskbot.Order{Symbol: "TCS", Side: deskbot.Buy, Quantity: 2, Type: deskbot.OrderMarket, Product: deskbot.ProductCNC}); err != nil {
			t.Fatal(err)
		}
	}
	last, _, _ := p.LastPrice(ctx, "TCS")
	hs, err := p.Holdings(ctx)
	if err != nil || len(hs) != 1 || hs[0].Symbol != "TCS" || hs[0].Quantity != 4 || hs[0].LastPrice != last.Value || hs[0].AvgPrice != last.Value {
		t.Fatalf("holdings %+v, %v; want 4 TCS at %v", hs, err, last.Value)
	}
	fs, err := p.Funds(ctx)
	if err != nil || len(fs) != 2 || fs[0].Segment != "equity" {
		t.Fatalf("funds %+v, %v", fs, err)
	}
	if got, want := fs[0].Used, deskbot.RoundPaise(4*last.Value); got != want {
		t.Errorf("used %v, want %v", got, want)
	}
	if got, want := fs[0].Available, deskbot.RoundPaise(broker.DefaultPaperCash-4*last.Value); got != want {
		t.Errorf("available %v, want %v", got, want)
	}
}

// The stream gives a followed symbol's price at once, and again each
// time the walk steps, at the walk's price.
func TestPaperStreamTicksAsTheWalkSteps(t *testing.T) {
	clock := deskbottest.NewClock(inSession)
	w := &broker.Walk{Seed: broker.DefaultSeed, Origin: broker.DefaultOrigin, Now: clock.Now, Poll: 5 * time.Millisecond}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	syms := make(chan []string, 1)
	var mu sync.Mutex
	var ticks []deskbot.Tick
	done := make(chan error, 1)
	go func() {
		done <- w.StreamPrices(ctx, syms, func(tk deskbot.Tick) { mu.Lock(); ticks = append(ticks, tk); mu.Unlock() })
	}()
	syms <- []string{"INFY", "NOT A SYMBOL"}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(ticks) }
	deskbottest.Eventually(t, "the first tick", func() bool { return count() == 1 })
	clock.Add(time.Minute)
	deskbottest.Eventually(t, "a tick after the step", func() bool { return count() == 2 })
	mu.Lock()
	got := ticks[1]
	mu.Unlock()
	if want := w.Price("INFY", clock.Now()); got.Symbol != "INFY" || got.Price.Value != want {
		t.Errorf("tick %+v, want INFY at %v", got, want)
	}
	cancel()
	if err := <-done; err != context.Canceled {
		t.Errorf("StreamPrices ended with %v, want context.Canceled", err)
	}
}

// A paper broker on a market of last prices alone (a test's tape) quotes
// those, refuses candles and chains in words, and refuses a hostile
// number of symbols on the walk.
func TestPaperOnATapeQuotesItsPrices(t *testing.T) {
	p, tape := mustMarket(t)
	tape.Set("INFY", 1604.35)
	qs, err := p.Quotes(t.Context(), []string{"INFY"})
	if err != nil || qs["INFY"].Last.Value != 1604.35 {
		t.Fatalf("quotes %+v, %v", qs, err)
	}
	if _, err := p.Candles(t.Context(), deskbot.CandleQuery{Symbol: "INFY", Interval: deskbot.IntervalDay, From: t0.AddDate(0, 0, -3), To: t0}); deskbot.ErrorCode(err) != deskbot.EUNAVAILABLE {
		t.Errorf("candles on a tape: %v, want EUNAVAILABLE", err)
	}
	if _, err := p.OptionChain(t.Context(), "NIFTY", "", 5); deskbot.ErrorCode(err) != deskbot.EUNAVAILABLE {
		t.Errorf("a chain on a tape: %v, want EUNAVAILABLE", err)
	}
	w := mustWalkPaper(t, deskbottest.NewClock(inSession))
	many := make([]string, 10000)
	for i := range many {
		many[i] = "INFY"
	}
	if _, err := w.Quotes(t.Context(), many); deskbot.ErrorCode(err) != deskbot.EINVALID || !strings.Contains(deskbot.ErrorMessage(err), "at most 500") {
		t.Errorf("10,000 symbols: %v, want EINVALID saying at most 500", err)
	}
}
