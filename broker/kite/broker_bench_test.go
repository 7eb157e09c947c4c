package kite

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
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
		auth := "token " + testKey + ":" + br.kite.accessToken()
		hc := &http.Client{Timeout: 5 * time.Second}
		lat := make([]time.Duration, 0, b.N)
		i := 0
		for b.Loop() {
			i++
			form := url.Values{
				"exchange": {"NSE"}, "tradingsymbol": {"INFY"}, "transaction_type": {"BUY"}, "order_type": {"LIMIT"},
				"quantity": {"1"}, "price": {"1490"}, "product": {"MIS"}, "validity": {"DAY"}, "tag": {fmt.Sprintf("bare%d", i)},
			}
			start := time.Now()
			req, err := http.NewRequest(http.MethodPost, r.kt.URL+"/orders/regular", strings.NewReader(form.Encode()))
			if err != nil {
				b.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("X-Kite-Version", "3")
			req.Header.Set("Authorization", auth)
			resp, err := hc.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			lat = append(lat, time.Since(start))
			if resp.StatusCode != http.StatusOK {
				b.Fatalf("status %d", resp.StatusCode)
			}
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
