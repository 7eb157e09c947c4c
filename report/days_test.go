package report

import (
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/exchange"
)

// The week (/pnl week, the page's) counts the operator's trading days: a
// Saturday's special session is one of them, a holiday is not.
func TestWeekCountsTheTradingCalendar(t *testing.T) {
	cal, err := exchange.ParseCalendar("Mon-Fri 09:15-15:30", "2026-11-25, 2026-11-28 10:00-11:00")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 30, 16, 0, 0, 0, deskbot.IST) // a Monday
	if got, want := strings.Join(TradingDays(now, 5, cal.TradingDay), " "), "2026-11-24 2026-11-26 2026-11-27 2026-11-28 2026-11-30"; got != want {
		t.Errorf("the week on the calendar: %s; want %s", got, want)
	}
	if got, want := strings.Join(TradingDays(now, 5, nil), " "), "2026-11-24 2026-11-25 2026-11-26 2026-11-27 2026-11-30"; got != want {
		t.Errorf("the week with no calendar: %s; want %s", got, want)
	}
}
