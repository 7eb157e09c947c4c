package exchange

import (
	"fmt"
	"strings"
	"time"

	"github.com/deskbot/deskbot"
)

// CandleSpans is the longest span one request for candles of an interval
// may cover: Kite's historical API refuses more in one request, and the
// paper market keeps the same caps so a desk learns them on paper.
var CandleSpans = map[string]int{ // days
	deskbot.IntervalMinute:   60,
	deskbot.Interval3Minute:  100,
	deskbot.Interval5Minute:  100,
	deskbot.Interval10Minute: 100,
	deskbot.Interval15Minute: 200,
	deskbot.Interval30Minute: 200,
	deskbot.Interval60Minute: 400,
	deskbot.IntervalDay:      2000,
}

// Intervals are the candle intervals, shortest first.
var Intervals = []string{
	deskbot.IntervalMinute, deskbot.Interval3Minute, deskbot.Interval5Minute, deskbot.Interval10Minute,
	deskbot.Interval15Minute, deskbot.Interval30Minute, deskbot.Interval60Minute, deskbot.IntervalDay,
}

// IntervalLength is how long one candle of interval is (a day's is 24
// hours; its candle covers the day's session).
func IntervalLength(interval string) time.Duration {
	switch interval {
	case deskbot.IntervalMinute:
		return time.Minute
	case deskbot.Interval3Minute:
		return 3 * time.Minute
	case deskbot.Interval5Minute:
		return 5 * time.Minute
	case deskbot.Interval10Minute:
		return 10 * time.Minute
	case deskbot.Interval15Minute:
		return 15 * time.Minute
	case deskbot.Interval30Minute:
		return 30 * time.Minute
	case deskbot.Interval60Minute:
		return time.Hour
	case deskbot.IntervalDay:
		return 24 * time.Hour
	}
	return 0
}

// CheckCandles refuses a request for candles that one request to Kite
// cannot answer: an interval it lacks, a span that ends before it starts,
// or one longer than the interval's cap. Its words tell the model what to
// send instead. A nil error means the span is within the cap.
func CheckCandles(q deskbot.CandleQuery) error {
	days, ok := CandleSpans[q.Interval]
	if !ok {
		return deskbot.Errorf(deskbot.EINVALID, "interval %q is not one the market has: send one of %s", q.Interval, strings.Join(Intervals, ", "))
	}
	if q.From.IsZero() || q.To.IsZero() {
		return deskbot.Errorf(deskbot.EINVALID, "candles need a start and an end (from and to)")
	}
	if q.To.Before(q.From) {
		return deskbot.Errorf(deskbot.EINVALID, "the span of candles ends (%s) before it starts (%s): send from before to", istTime(q.To), istTime(q.From))
	}
	if span := q.To.Sub(q.From); span > time.Duration(days)*24*time.Hour {
		return deskbot.Errorf(deskbot.EINVALID, "%s candles can be read at most %d days at a time, and %s to %s is %s days: ask for a shorter span (or a longer interval)",
			q.Interval, days, istTime(q.From), istTime(q.To), fmt.Sprintf("%.1f", span.Hours()/24))
	}
	return nil
}

func istTime(t time.Time) string { return t.In(deskbot.IST).Format("2006-01-02 15:04") + " IST" }
