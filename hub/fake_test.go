package hub_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/hub"
)

// market is a strict fake of a broker's market for the hub's unit tests:
// it refuses (as a 429 would) a quote-family request less than every
// after the last one, or two at once, and counts what it was asked.
type market struct {
	every time.Duration
	now   func() time.Time // the market's clock, the quotes' time

	mu       sync.Mutex
	prices   map[string]float64
	quoteAt  []time.Time // start of each quote-family request
	sizes    []int
	tooFast  int
	inflight int
	candles  int
	funds    int
	stream   chan deskbot.Tick // nil: StreamPrices fails at once
	subbed   []string
}

func newMarket(every time.Duration, symbols int) *market {
	m := &market{every: every, prices: map[string]float64{}, now: time.Now}
	for i := range symbols {
		m.prices[sym(i)] = 100 + float64(i)
	}
	return m
}

func sym(i int) string { return fmt.Sprintf("S%04d", i) }

func (m *market) begin(n int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	if k := len(m.quoteAt); m.inflight > 0 || k > 0 && now.Sub(m.quoteAt[k-1]) < m.every {
		m.tooFast++
		return deskbot.Errorf(deskbot.EUNAVAILABLE, "429 too many requests")
	}
	m.inflight++
	m.quoteAt = append(m.quoteAt, now)
	m.sizes = append(m.sizes, n)
	return nil
}

func (m *market) end() { m.mu.Lock(); m.inflight--; m.mu.Unlock() }

func (m *market) Quotes(ctx context.Context, symbols []string) (map[string]deskbot.Quote, error) {
	if len(symbols) > 500 {
		return nil, deskbot.Errorf(deskbot.EINVALID, "too many instruments")
	}
	if err := m.begin(len(symbols)); err != nil {
		return nil, err
	}
	defer m.end()
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]deskbot.Quote{}
	for _, s := range symbols {
		p, ok := m.prices[s]
		if !ok {
			return nil, deskbot.Errorf(deskbot.EINVALID, "%s is not listed", s)
		}
		out[s] = deskbot.Quote{Symbol: s, Last: deskbot.Price{Value: p, At: m.now().Add(-3 * time.Second)}, Close: 100, Change: p - 100, ChangePct: p - 100, Open: 99, High: p + 1, Low: 98, Volume: 1000,
			Bids: []deskbot.Depth{{Price: p - 0.05, Quantity: 10, Orders: 1}}, Asks: []deskbot.Depth{{Price: p + 0.05, Quantity: 12, Orders: 2}}}
	}
	return out, nil
}

func (m *market) LastPrices(ctx context.Context, symbols []string) (map[string]float64, error) {
	if len(symbols) > 1000 {
		return nil, deskbot.Errorf(deskbot.EINVALID, "too many instruments")
	}
	if err := m.begin(len(symbols)); err != nil {
		return nil, err
	}
	defer m.end()
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]float64{}
	for _, s := range symbols {
		if p, ok := m.prices[s]; ok {
			out[s] = p
		}
	}
	return out, nil
}

func (m *market) LastPrice(ctx context.Context, s string) (deskbot.Price, bool, error) {
	ps, err := m.LastPrices(ctx, []string{s})
	return deskbot.Price{Value: ps[s], At: time.Now()}, ps[s] > 0, err
}

func (m *market) Instrument(ctx context.Context, s string) (deskbot.Instrument, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.prices[s]; !ok {
		return deskbot.Instrument{}, deskbot.Errorf(deskbot.EINVALID, "%s is not an instrument the market lists", s)
	}
	return deskbot.Instrument{Symbol: s, Type: deskbot.InstrumentEQ, ContractSize: 1}, nil
}

func (m *market) Candles(ctx context.Context, q deskbot.CandleQuery) ([]deskbot.Candle, error) {
	m.mu.Lock()
	m.candles++
	m.mu.Unlock()
	var out []deskbot.Candle
	for t := q.From; !t.After(q.To) && len(out) < 100000; t = t.Add(time.Minute) {
		out = append(out, deskbot.Candle{At: t, Open: 100, High: 101, Low: 99, Close: 100.5, Volume: 10})
	}
	return out, nil
}

func (m *market) SearchInstruments(ctx context.Context, q deskbot.InstrumentQuery) ([]deskbot.Instrument, error) {
	var out []deskbot.Instrument
	for s := range m.prices {
		if strings.Contains(s, q.Text) {
			out = append(out, deskbot.Instrument{Symbol: s, Type: deskbot.InstrumentEQ, ContractSize: 1})
		}
	}
	return out, nil
}

func (m *market) OptionChain(ctx context.Context, u, e string, n int) (deskbot.OptionChain, error) {
	return deskbot.OptionChain{}, deskbot.Errorf(deskbot.EINVALID, "not here")
}

func (m *market) Funds(ctx context.Context) ([]deskbot.SegmentFunds, error) {
	m.mu.Lock()
	m.funds++
	m.mu.Unlock()
	return []deskbot.SegmentFunds{{Segment: "equity", Available: 500000, Used: 120000}}, nil
}

func (m *market) Holdings(ctx context.Context) ([]deskbot.Holding, error) { return nil, nil }

func (m *market) StreamPrices(ctx context.Context, symbols <-chan []string, fn func(deskbot.Tick)) error {
	m.mu.Lock()
	ch := m.stream
	m.mu.Unlock()
	if ch == nil {
		return deskbot.Errorf(deskbot.EUNAVAILABLE, "no stream")
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case s := <-symbols:
			m.mu.Lock()
			m.subbed = s
			m.mu.Unlock()
		case t, ok := <-ch:
			if !ok {
				return deskbot.Errorf(deskbot.EUNAVAILABLE, "stream broke")
			}
			fn(t)
		}
	}
}

func (m *market) set(s string, p float64) { m.mu.Lock(); m.prices[s] = p; m.mu.Unlock() }

func (m *market) stats() (requests, tooFast, candles int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.quoteAt), m.tooFast, m.candles
}

// start runs a hub over m until the test ends.
func start(t testing.TB, m *market, cfg hub.Config) *hub.Hub {
	t.Helper()
	cfg.Market, cfg.Prices = m, m
	if cfg.QuoteEvery == 0 {
		cfg.QuoteEvery = m.every
	}
	h := hub.New(cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return h
}
