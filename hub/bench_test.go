package hub_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/hub"
)

// BenchmarkHubQuote is a desk's quote served from what the hub holds
// (the answer to every desk asking within the second), against its
// floor: one map lookup of the quote.
func BenchmarkHubQuote(b *testing.B) {
	m := newMarket(every, 10)
	h := start(b, m, hub.Config{Fresh: time.Hour})
	ctx := context.Background()
	want := []string{sym(1)}
	if _, err := h.Desk("main").Quotes(ctx, want); err != nil {
		b.Fatal(err)
	}
	lane := h.Desk("main")
	b.Run("hub", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			qs, err := lane.Quotes(ctx, want)
			if err != nil || qs[sym(1)].Last.Value == 0 {
				b.Fatal(qs, err)
			}
		}
	})
	b.Run("floor-map-lookup", func(b *testing.B) {
		held := map[string]deskbot.Quote{sym(1): {Symbol: sym(1), Last: deskbot.Price{Value: 101}}}
		b.ReportAllocs()
		for b.Loop() {
			if q, ok := held[want[0]]; !ok || q.Last.Value == 0 {
				b.Fatal(q)
			}
		}
	})
}

// capture is a PriceStream that hands the benchmark the hub's tick
// callback, as Kite's ticker would call it.
type capture struct {
	*market
	fn chan func(deskbot.Tick)
}

func (c *capture) StreamPrices(ctx context.Context, symbols <-chan []string, fn func(deskbot.Tick)) error {
	c.fn <- fn
	<-ctx.Done()
	return ctx.Err()
}

// BenchmarkFeed1000 is the hub's cost of 1,000 followed instruments
// ticking once a second: one op is one second's 1,000 streamed ticks,
// each kept and handed to a Ticks subscriber (the watches' evaluator).
// cpu-ns/instrument-second is the CPU one instrument costs each second;
// heap-B/instrument what the hub holds for it. The floor is one map write
// and one callback per tick.
func BenchmarkFeed1000(b *testing.B) {
	const n = 1000
	syms := make([]string, n)
	for i := range syms {
		syms[i] = fmt.Sprintf("NSE:S%04d", i)
	}
	b.Run("hub", func(b *testing.B) {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		c := &capture{market: newMarket(every, 0), fn: make(chan func(deskbot.Tick), 1)}
		h := start(b, c.market, hub.Config{Stream: c})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var seen int
		go h.Ticks(ctx, func(deskbot.Tick) { seen++ })
		h.Follow(ctx, "watches", syms)
		fn := <-c.fn
		at := time.Now()
		for i, s := range syms {
			fn(deskbot.Tick{Symbol: s, Price: deskbot.Price{Value: 100 + float64(i), At: at}})
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		heap := float64(after.HeapAlloc-before.HeapAlloc) / n
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; b.Loop(); i++ {
			at = at.Add(time.Second)
			for j, s := range syms {
				fn(deskbot.Tick{Symbol: s, Price: deskbot.Price{Value: 100 + float64((i+j)%50), At: at}})
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "cpu-ns/instrument-second")
		b.ReportMetric(heap, "heap-B/instrument")
	})
	b.Run("floor-map-write-and-callback", func(b *testing.B) {
		last := make(map[string]deskbot.Price, n)
		var seen int
		emit := func(deskbot.Tick) { seen++ }
		at := time.Now()
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			at = at.Add(time.Second)
			for j, s := range syms {
				t := deskbot.Tick{Symbol: s, Price: deskbot.Price{Value: 100 + float64((i+j)%50), At: at}}
				last[s] = t.Price
				emit(t)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "cpu-ns/instrument-second")
	})
}
