package watch

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/store/storetest"
	"github.com/deskbot/deskbot/words"
)

// Watch benchmark's world: 100 desks watching 1,000 instruments, ten
// each, one watch per instrument.
const (
	benchDesks       = 100
	benchInstruments = 1000
)

func benchWatch(i int) deskbot.Watch {
	return deskbot.Watch{ID: fmt.Sprintf("w%04d", i), Desk: fmt.Sprintf("desk%03d", i%benchDesks), Symbol: fmt.Sprintf("SYM%04d", i),
		Direction: deskbot.WatchAbove, Level: 100, Note: "breakout", CreatedAt: time.Now()}
}

// reportLatency reports the p50 and p99 of ds.
func reportLatency(b *testing.B, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(ds[len(ds)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkWatchTickToTrigger is a tick that crosses a watch, from the
// hub's callback (Evaluator.Tick) to the desk's trigger written with the
// watch deleted (the store's one script), with 100 desks and 1,000
// watched instruments. Its floor is BenchmarkWatchFloorStreamWrite.
func BenchmarkWatchTickToTrigger(b *testing.B) {
	s := storetest.MustOpen(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := range benchInstruments {
		if err := s.AddWatch(ctx, benchWatch(i), deskbot.DefaultMaxWatches); err != nil {
			b.Fatal(err)
		}
	}
	f := &fakeFeed{}
	done := make(chan bool, 1)
	e := &Evaluator{Store: s, Feed: f, Refresh: time.Hour}
	e.afterFire = func(_ deskbot.Watch, ok bool) { done <- ok }
	go e.Run(ctx)
	for {
		f.mu.Lock()
		n := len(f.followed[Follower])
		f.mu.Unlock()
		if n == benchInstruments {
			break
		}
		time.Sleep(time.Millisecond)
	}
	ds := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for n := range b.N {
		i := n % benchInstruments
		w := benchWatch(i)
		start := time.Now()
		e.Tick(deskbot.Tick{Symbol: w.Symbol, Price: deskbot.Price{Value: 101, At: start}})
		if !<-done {
			b.Fatal("the watch did not fire")
		}
		ds = append(ds, time.Since(start))
		b.StopTimer()
		// The watch again, for the next round over the instruments.
		if err := s.AddWatch(ctx, w, deskbot.DefaultMaxWatches); err != nil {
			b.Fatal(err)
		}
		e.mu.Lock()
		e.bySymbol[w.Symbol] = append(e.bySymbol[w.Symbol], w)
		e.mu.Unlock()
		b.StartTimer()
	}
	b.StopTimer()
	reportLatency(b, ds)
}

// BenchmarkWatchFloorStreamWrite is the floor: one write of the same
// trigger to a desk's inbox stream (Store.Enqueue, one XADD).
func BenchmarkWatchFloorStreamWrite(b *testing.B) {
	s := storetest.MustOpen(b)
	ctx := context.Background()
	ds := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for n := range b.N {
		w := benchWatch(n % benchInstruments)
		start := time.Now()
		if err := s.Enqueue(ctx, words.WatchTrigger(w, deskbot.Price{Value: 101, At: start})); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(start))
	}
	b.StopTimer()
	reportLatency(b, ds)
}
