package risk_test

import (
	"context"
	"fmt"
	"github.com/deskbot/deskbot/deskbottest"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/risk"
	"github.com/deskbot/deskbot/store/storetest"
)

// prices is a market the benchmark sets.
type prices struct {
	mu sync.Mutex
	p  map[string]float64
}

func (m *prices) LastPrices(ctx context.Context, symbols []string) (map[string]float64, error) {
	return broker.EachPrice(ctx, m, symbols)
}

func (m *prices) LastPrice(_ context.Context, symbol string) (deskbot.Price, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.p[symbol]
	return deskbot.Price{Value: p, At: time.Now()}, ok, nil
}

func (m *prices) Instrument(_ context.Context, symbol string) (deskbot.Instrument, error) {
	return broker.PaperInstrument(symbol)
}

func (m *prices) set(symbol string, p float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.p[symbol] = p
}

// BenchmarkHaltAfterFill is how late a halt acts after the fill that
// takes a desk past its max_daily_loss: from the fill's event published
// (as the executor publishes it) to the halt in the store, through the
// watcher's event read, the desk's check and the halt. Each op is one
// desk: bought at ₹100, the market at ₹90, then the crossing fill. The
// floor is the event stream's own delivery, a publish to a blocked
// reader of another group, timed in the same loop.
func BenchmarkHaltAfterFill(b *testing.B) {
	s := storetest.MustOpen(b)
	ctx := context.Background()
	market := &prices{p: map[string]float64{}}
	paper := broker.NewPaperMarket(s, time.Now, market)
	desks := make([]string, b.N)
	rules := map[string]deskbot.RiskRules{}
	for i := range desks {
		desks[i] = fmt.Sprintf("d%d", i)
		rules[desks[i]] = deskbot.RiskRules{MaxDailyLoss: 500}
	}
	w := &risk.Watcher{Rules: rules, Store: s, Broker: paper, Now: time.Now, Every: risk.MaxEvery,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- w.Run(wctx) }()
	defer func() { stop(); <-done }()
	if err := s.CreateEventGroupAtEnd(ctx, "floor"); err != nil {
		b.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the watcher's group made

	var lat, floor []time.Duration
	b.ResetTimer()
	for i := range b.N {
		desk, sym := desks[i], fmt.Sprintf("S%d", i)
		market.set(sym, 100)
		if _, err := paper.PlaceOrder(ctx, desk, deskbottest.NewKey(), deskbot.Order{Symbol: sym, Side: deskbot.Buy, Quantity: 100, Price: 100}); err != nil {
			b.Fatal(err)
		}
		market.set(sym, 90)
		if _, err := paper.PlaceOrder(ctx, desk, deskbottest.NewKey(), deskbot.Order{Symbol: sym, Side: deskbot.Buy, Quantity: 1, Price: 90}); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if err := s.Publish(ctx, deskbot.Event{Kind: deskbot.EventToolResult, Desk: desk, Time: start,
			Call: &deskbot.ToolCall{Name: deskbot.ToolPlaceOrder}, Result: &deskbot.ToolResult{Text: "Filled"}}); err != nil {
			b.Fatal(err)
		}
		for {
			st, err := s.DeskStatus(ctx, desk)
			if err != nil {
				b.Fatal(err)
			}
			if st.Halt != nil {
				break
			}
			if time.Since(start) > 10*time.Second {
				b.Fatalf("desk %s not halted 10s after its crossing fill", desk)
			}
			time.Sleep(50 * time.Microsecond)
		}
		lat = append(lat, time.Since(start))

		start = time.Now()
		if err := s.Publish(ctx, deskbot.Event{Kind: deskbot.EventDeskMessage, Desk: "floor", Time: start}); err != nil {
			b.Fatal(err)
		}
		if evs, err := s.ReadEvents(ctx, "floor", "f", 10, time.Second); err != nil || len(evs) == 0 {
			b.Fatal(evs, err)
		} else {
			ids := make([]string, len(evs))
			for j, e := range evs {
				ids[j] = e.ID
			}
			if err := s.AckEvents(ctx, "floor", ids...); err != nil {
				b.Fatal(err)
			}
		}
		floor = append(floor, time.Since(start))
	}
	b.StopTimer()
	p := func(d []time.Duration, q float64) float64 {
		slices.Sort(d)
		return float64(d[min(len(d)-1, int(q*float64(len(d))))].Microseconds()) / 1000
	}
	b.ReportMetric(p(lat, 0.5), "halt-p50-ms")
	b.ReportMetric(p(lat, 0.99), "halt-p99-ms")
	b.ReportMetric(p(floor, 0.5), "floor-p50-ms")
	b.ReportMetric(p(floor, 0.99), "floor-p99-ms")
}
