package kite

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/deskbottest"
)

// BenchmarkAllowToOrder is the time from an allowed call's PlaceOrder to
// the order standing at Kite (the fake, limits off): the pending record
// in Redis, the placement, the read back and the record of its state.
// bare_post is the floor in the same run: the same order form posted to
// the same fake by net/http alone. Each reports its p50 and p99.
func BenchmarkAllowToOrder(b *testing.B) {
	r := mustRig(b)
	r.kt.SetLimits(nil)
	br, _ := r.mustBroker(b, options{clientOpts: Options{OrdersPerSecond: 1 << 30, OrdersPerMinute: 1 << 30, CallsPerSecond: 1 << 30}})
	b.Run("place_order", func(b *testing.B) {
		lat := make([]time.Duration, 0, b.N)
		for b.Loop() {
			start := time.Now()
			po, err := br.PlaceOrder(b.Context(), "alpha", deskbottest.NewKey(), limit("NSE:INFY", deskbot.Buy, 1, 1490))
			lat = append(lat, time.Since(start))
			if err != nil || po.ID == "" {
				b.Fatalf("PlaceOrder: %+v, %v", po, err)
			}
		}
		reportPercentiles(b, lat)
	})
	b.Run("bare_post", func(b *testing.B) {
		post := barePOST(r.kt.URL, br.kite.accessToken())
		lat := make([]time.Duration, 0, b.N)
		i := 0
		for b.Loop() {
			i++
			tag := fmt.Sprintf("bare%d", i)
			start := time.Now()
			post(b, tag)
			lat = append(lat, time.Since(start))
		}
		reportPercentiles(b, lat)
	})
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	at := func(p float64) float64 { return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) }
	b.ReportMetric(at(0.50), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
}
