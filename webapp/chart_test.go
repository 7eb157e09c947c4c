package webapp

import (
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/report"
)

// The page's week is the operator's trading days, as /pnl week counts
// them: a Saturday special session's P&L is a bar of its own, and a
// holiday is no bar.
func TestDaysChartFollowsTheTradingCalendar(t *testing.T) {
	now := time.Date(2026, 11, 30, 16, 0, 0, 0, deskbot.IST) // a Monday
	trading := func(d time.Time) bool {
		switch deskbot.OrderDay(d) {
		case "2026-11-28": // a Saturday special session
			return true
		case "2026-11-25": // a holiday
			return false
		}
		wd := d.In(deskbot.IST).Weekday()
		return wd != time.Saturday && wd != time.Sunday
	}
	saturday := deskbot.Trade{At: time.Date(2026, 11, 28, 11, 0, 0, 0, deskbot.IST)}
	saturday.RealisedPnL = 1234.5
	got := string(daysChart([]deskbot.Trade{saturday}, report.TradingDays(now, 5, trading)))
	for _, want := range []string{"over the last 5 trading days", "2026-11-28 +₹1,234.50", "Sat 28"} {
		if !strings.Contains(got, want) {
			t.Errorf("chart lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "2026-11-25") {
		t.Errorf("chart shows the holiday 2026-11-25:\n%s", got)
	}
}
