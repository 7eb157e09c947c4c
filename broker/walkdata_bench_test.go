package broker_test

import (
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/deskbottest"
)

// The walk's longest answers: Kite's caps of minute and day candles, and
// a quote (its day's high and low sampled from the walk).
func BenchmarkWalkCandles(b *testing.B) {
	clock := deskbottest.NewClock(inSession)
	w := broker.DefaultMarket(clock.Now)
	for _, tc := range []struct {
		name     string
		interval string
		days     int
	}{{"minute-60d", deskbot.IntervalMinute, 60}, {"day-2000d", deskbot.IntervalDay, 2000}} {
		b.Run(tc.name, func(b *testing.B) {
			q := deskbot.CandleQuery{Symbol: "INFY", Interval: tc.interval, From: inSession.AddDate(0, 0, -tc.days), To: inSession}
			for b.Loop() {
				if _, err := w.Candles(b.Context(), q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("quote", func(b *testing.B) {
		for b.Loop() {
			if _, err := w.Quotes(b.Context(), []string{"INFY"}); err != nil {
				b.Fatal(err)
			}
		}
	})
	_ = time.Second
}
