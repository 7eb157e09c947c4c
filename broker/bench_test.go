package broker_test

import (
	"github.com/deskbot/deskbot/deskbottest"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker"
)

// BenchmarkPlaceOrder measures a paper fill against the floor no Redis
// implementation can beat: one round trip carrying a read and a write of the
// position (a pipelined HGET+HSET). x-floor is the ratio.
func BenchmarkPlaceOrder(b *testing.B) {
	st := mustStore(b)
	p := broker.NewPaper(st, time.Now)
	ctx := b.Context()
	// Priced through the market (RELIANCE walks near ₹1,250), so both fill.
	orders := []deskbot.Order{buy("RELIANCE", 1, 2500), sell("RELIANCE", 1, 1)}
	if _, err := p.PlaceOrder(ctx, "bench", deskbottest.NewKey(), orders[0]); err != nil { // loads the script
		b.Fatal(err)
	}
	floorKey := st.Key("floor")
	floor := func() error {
		pipe := st.Client().Pipeline()
		pipe.HGet(ctx, floorKey, "RELIANCE")
		pipe.HSet(ctx, floorKey, "RELIANCE", "1 2500 2500 0")
		_, err := pipe.Exec(ctx)
		return err
	}
	if err := st.Client().HSet(ctx, floorKey, "RELIANCE", "0 0 0 0").Err(); err != nil {
		b.Fatal(err)
	}

	// The two are interleaved so that load from elsewhere on the machine
	// falls on both alike; ns/op is their sum.
	var n int
	var orderTime, floorTime time.Duration
	for b.Loop() {
		start := time.Now()
		if _, err := p.PlaceOrder(ctx, "bench", deskbottest.NewKey(), orders[n%2]); err != nil {
			b.Fatal(err)
		}
		mid := time.Now()
		if err := floor(); err != nil {
			b.Fatal(err)
		}
		orderTime += mid.Sub(start)
		floorTime += time.Since(mid)
		n++
	}
	b.ReportMetric(float64(orderTime.Nanoseconds())/float64(n), "order-ns/op")
	b.ReportMetric(float64(floorTime.Nanoseconds())/float64(n), "floor-ns/op")
	b.ReportMetric(float64(orderTime)/float64(floorTime), "x-floor")
}
