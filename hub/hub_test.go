package hub_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/hub"
)

const every = 200 * time.Millisecond

// 100 desks asking at once are served by requests at most one per
// QuoteEvery, never two at once, each of at most 500 instruments.
func TestHundredDesksShareOneRequest(t *testing.T) {
	m := newMarket(every, 200)
	h := start(t, m, hub.Config{})
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for d := range 100 {
		wg.Go(func() {
			s := sym(d)
			qs, err := h.Desk(fmt.Sprint("d", d)).Quotes(context.Background(), []string{s, sym(199)})
			if err == nil && qs[s].Last.Value != 100+float64(d) {
				err = fmt.Errorf("desk %d read %s at %v, want %v", d, s, qs[s].Last.Value, 100+float64(d))
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	n, fast, _ := m.stats()
	if fast != 0 {
		t.Errorf("%d requests came faster than one per %v", fast, every)
	}
	// 101 symbols fit one request; a desk arriving after the first one
	// left costs at most a second.
	if n > 2 {
		t.Errorf("100 desks cost %d quote requests, want at most 2", n)
	}
	// Asked again within Fresh: served from the hub.
	if _, err := h.Desk("d0").Quotes(context.Background(), []string{sym(0)}); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := m.stats(); got != n {
		t.Errorf("a fresh quote cost a request: %d, want %d", got, n)
	}
}

// A desk asking thousands of symbols takes its share of each request, and
// another desk and the approvers are answered by the first request.
func TestGreedyDeskDoesNotStarveOthers(t *testing.T) {
	m := newMarket(every, 5000)
	h := start(t, m, hub.Config{})
	greedy := make([]string, 0, 5000)
	for i := range 5000 {
		greedy = append(greedy, sym(i))
	}
	gctx, gcancel := context.WithCancel(context.Background())
	defer gcancel()
	go h.Desk("greedy").Quotes(gctx, greedy)
	deskbottest.Eventually(t, "the greedy desk's first request", func() bool { n, _, _ := m.stats(); return n >= 1 })
	before, _, _ := m.stats()
	var got map[string]deskbot.Quote
	var price map[string]float64
	var wg sync.WaitGroup
	var e1, e2 error
	wg.Go(func() { got, e1 = h.Desk("modest").Quotes(context.Background(), []string{sym(4999)}) })
	wg.Go(func() { price, e2 = h.LastPrices(context.Background(), []string{sym(4998)}) })
	wg.Wait()
	if e1 != nil || e2 != nil {
		t.Fatal(e1, e2)
	}
	after, fast, _ := m.stats()
	if got[sym(4999)].Last.Value != 5099 || price[sym(4998)] != 5098 {
		t.Errorf("got %v and %v", got, price)
	}
	if after-before > 2 {
		t.Errorf("the modest desk and the approvers waited %d requests behind the greedy desk, want at most 2", after-before)
	}
	if fast != 0 {
		t.Errorf("%d requests too fast", fast)
	}
}

// An unknown symbol is refused to the desk that named it, before it can
// join (and fail) a request shared with others.
func TestUnknownSymbolRefusedAlone(t *testing.T) {
	m := newMarket(every, 10)
	h := start(t, m, hub.Config{})
	var wg sync.WaitGroup
	var bad, good error
	wg.Go(func() { _, bad = h.Desk("hostile").Quotes(context.Background(), []string{sym(1), "NOPE"}) })
	wg.Go(func() { _, good = h.Desk("other").Quotes(context.Background(), []string{sym(1)}) })
	wg.Wait()
	if deskbot.ErrorCode(bad) != deskbot.EINVALID || good != nil {
		t.Fatalf("hostile %v, other %v", bad, good)
	}
}

// Followed symbols are polled (one LTP request for all) while nothing
// streams, and a moved price reaches Ticks.
func TestFeedPollsFollowedSymbols(t *testing.T) {
	m := newMarket(every, 10)
	h := start(t, m, hub.Config{PollEvery: every})
	ticks := make(chan deskbot.Tick, 100)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go h.Ticks(ctx, func(tk deskbot.Tick) { ticks <- tk })
	if err := h.Follow(ctx, "desk:a", []string{sym(1), sym(2)}); err != nil {
		t.Fatal(err)
	}
	m.set(sym(2), 250)
	deadline := time.After(10 * time.Second)
	for {
		select {
		case tk := <-ticks:
			if tk.Symbol == sym(2) && tk.Price.Value == 250 {
				_, fast, _ := m.stats()
				if fast != 0 {
					t.Errorf("%d polls too fast", fast)
				}
				return
			}
		case <-deadline:
			t.Fatal("no tick of the moved price")
		}
	}
}

// With a stream, the followed symbols are subscribed, ticks come from it
// and last prices are served from it without a request; when it breaks
// the hub polls.
func TestFeedStreamsThenPolls(t *testing.T) {
	m := newMarket(every, 10)
	stream := make(chan deskbot.Tick)
	m.stream = stream
	h := start(t, m, hub.Config{Stream: m, PollEvery: every})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ticks := make(chan deskbot.Tick, 100)
	go h.Ticks(ctx, func(tk deskbot.Tick) { ticks <- tk })
	h.Follow(ctx, "watches", []string{sym(3)})
	deskbottest.Eventually(t, "the stream subscribed the followed symbol", func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return len(m.subbed) == 1 && m.subbed[0] == sym(3)
	})
	stream <- deskbot.Tick{Symbol: sym(3), Price: deskbot.Price{Value: 321, At: time.Now()}}
	// A poll made before the stream was up may tick first.
	for tk := <-ticks; tk.Price.Value != 321; tk = <-ticks {
	}
	n0, _, _ := m.stats()
	p, ok, err := h.LastPrice(ctx, sym(3))
	if err != nil || !ok || p.Value != 321 {
		t.Fatalf("LastPrice %v %v %v", p, ok, err)
	}
	if n, _, _ := m.stats(); n != n0 {
		t.Errorf("a streamed price cost a request")
	}
	// The stream breaks: the hub polls the followed symbol.
	m.mu.Lock()
	m.stream = nil
	m.mu.Unlock()
	close(stream)
	m.set(sym(3), 333)
	deskbottest.Eventually(t, "a polled tick after the stream broke", func() bool {
		select {
		case tk := <-ticks:
			return tk.Price.Value == 333
		default:
			return false
		}
	})
}

// The stream holds at most StreamCap symbols; the rest are polled.
func TestStreamCap(t *testing.T) {
	m := newMarket(every, 10)
	m.stream = make(chan deskbot.Tick)
	h := start(t, m, hub.Config{Stream: m, StreamCap: 3, PollEvery: every})
	ctx := context.Background()
	h.Follow(ctx, "a", []string{sym(0), sym(1), sym(2)})
	h.Follow(ctx, "b", []string{sym(2), sym(3), sym(4)})
	deskbottest.Eventually(t, "three subscribed", func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return len(m.subbed) == 3
	})
	// The two beyond the cap are polled.
	deskbottest.Eventually(t, "a poll of the two symbols beyond the stream's cap", func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		for _, n := range m.sizes {
			if n == 2 {
				return true
			}
		}
		return false
	})
}

// A second desk asking the same span makes no request; a span of past days
// is kept on disk, so a new hub (a restart) makes none either.
func TestCandlesKept(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 12, 4, 14, 0, 0, 0, deskbot.IST)
	clock := func() time.Time { return now }
	q := deskbot.CandleQuery{Symbol: sym(1), Interval: deskbot.IntervalMinute,
		From: time.Date(2026, 12, 1, 9, 15, 0, 0, deskbot.IST), To: time.Date(2026, 12, 1, 15, 29, 0, 0, deskbot.IST)}
	m := newMarket(every, 10)
	h := start(t, m, hub.Config{DataDir: dir, Now: clock})
	a, err := h.Desk("a").Candles(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	b, err := h.Desk("b").Candles(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, n := m.stats(); n != 1 || len(a) != 375 || len(b) != 375 {
		t.Fatalf("requests %d, candles %d and %d", n, len(a), len(b))
	}
	m2 := newMarket(every, 10)
	h2 := start(t, m2, hub.Config{DataDir: dir, Now: clock})
	c, err := h2.Desk("c").Candles(context.Background(), q)
	if err != nil || len(c) != 375 || !c[0].At.Equal(a[0].At) {
		t.Fatalf("after a restart: %d candles, %v", len(c), err)
	}
	if _, _, n := m2.stats(); n != 0 {
		t.Errorf("a kept span cost %d requests after a restart", n)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "market", "candles", "*.json"))
	if len(files) != 1 {
		t.Errorf("files %v", files)
	}
}

// Kite's per-request span caps and intervals are refused with words that
// say what to fix, and cost nothing.
func TestCandlesRefused(t *testing.T) {
	m := newMarket(every, 10)
	h := start(t, m, hub.Config{})
	now := time.Now()
	for _, q := range []deskbot.CandleQuery{
		{Symbol: sym(1), Interval: deskbot.IntervalMinute, From: now.AddDate(-10, 0, 0), To: now},
		{Symbol: sym(1), Interval: "2minute", From: now.Add(-time.Hour), To: now},
		{Symbol: sym(1), Interval: deskbot.IntervalDay, From: now, To: now.AddDate(0, 0, -3)},
		{Symbol: "NOPE", Interval: deskbot.IntervalDay, From: now.AddDate(0, 0, -3), To: now},
	} {
		_, err := h.Desk("x").Candles(context.Background(), q)
		if deskbot.ErrorCode(err) != deskbot.EINVALID {
			t.Errorf("%+v: %v", q, err)
		}
	}
	if _, _, n := m.stats(); n != 0 {
		t.Errorf("refused asks cost %d requests", n)
	}
}

// Candle requests are paced (3 a second by default) and served desk by
// desk in turn: a desk with many asks queued does not delay another's.
func TestCandlesFairShare(t *testing.T) {
	m := newMarket(every, 10)
	h := start(t, m, hub.Config{HistEvery: 100 * time.Millisecond})
	base := time.Now().AddDate(0, 0, -30)
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 15 {
		wg.Go(func() {
			q := deskbot.CandleQuery{Symbol: sym(1), Interval: deskbot.IntervalDay, From: base.AddDate(0, 0, i), To: base.AddDate(0, 0, i+1)}
			h.Desk("greedy").Candles(ctx, q)
		})
	}
	deskbottest.Eventually(t, "the greedy desk's first request", func() bool { _, _, n := m.stats(); return n >= 1 })
	if _, err := h.Desk("other").Candles(ctx, deskbot.CandleQuery{Symbol: sym(2), Interval: deskbot.IntervalDay, From: base, To: base.AddDate(0, 0, 1)}); err != nil {
		t.Fatal(err)
	}
	if _, _, n := m.stats(); n > 4 {
		t.Errorf("the other desk waited behind %d of the greedy desk's requests", n-1)
	}
	wg.Wait()
}

func TestMain(m *testing.M) { os.Exit(m.Run()) }
