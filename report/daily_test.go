package report_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/exchange"
	"github.com/deskbot/deskbot/report"
)

// On a fake clock walked through a week from Saturday, the report goes out
// once a trading day, at REPORT_AT India time, and never at the weekend.
func TestScheduleFiresOnTradingDays(t *testing.T) {
	s, err := report.Schedule("15:45")
	if err != nil {
		t.Fatal(err)
	}
	clock := deskbottest.NewClock(time.Date(2026, 11, 28, 0, 0, 0, 0, deskbot.IST)) // a Saturday
	end := clock.Now().AddDate(0, 0, 7)
	var got []string
	for {
		next := s.Next(clock.Now())
		if next.After(end) {
			break
		}
		clock.Set(next)
		got = append(got, next.In(deskbot.IST).Format("Mon 2 Jan 15:04"))
	}
	want := []string{"Mon 30 Nov 15:45", "Tue 1 Dec 15:45", "Wed 2 Dec 15:45", "Thu 3 Dec 15:45", "Fri 4 Dec 15:45"}
	if len(got) != len(want) {
		t.Fatalf("fired at %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("run %d at %s, want %s", i+1, got[i], want[i])
		}
	}
	// From a minute before on a weekday it fires that day, once; from
	// Saturday's 15:44 it waits for Monday.
	tests := []struct {
		from time.Time
		want string
	}{
		{time.Date(2026, 12, 3, 15, 44, 0, 0, deskbot.IST), "Thu 3 Dec 15:45"},
		{time.Date(2026, 12, 3, 15, 45, 0, 0, deskbot.IST), "Fri 4 Dec 15:45"},
		{time.Date(2026, 12, 5, 15, 44, 0, 0, deskbot.IST), "Mon 7 Dec 15:45"},
		// The clock's zone does not matter: 15:44 IST is 10:14 UTC.
		{time.Date(2026, 12, 3, 10, 14, 0, 0, time.UTC), "Thu 3 Dec 15:45"},
		{time.Date(2026, 12, 3, 10, 15, 0, 0, time.UTC), "Fri 4 Dec 15:45"},
	}
	for _, tt := range tests {
		if got := s.Next(tt.from).In(deskbot.IST).Format("Mon 2 Jan 15:04"); got != tt.want {
			t.Errorf("next after %v: %s, want %s", tt.from, got, tt.want)
		}
	}
}

func TestScheduleRefusesWhatIsNotHHMM(t *testing.T) {
	for _, at := range []string{"", "15", "3:45pm", "25:00", "15:60", "9:15", "15:45:00", " 15:45"} {
		if _, err := report.Schedule(at); deskbot.ErrorCode(err) != deskbot.EINVALID {
			t.Errorf("Schedule(%q) = %v, want EINVALID", at, err)
		}
	}
	for _, at := range []string{"00:00", "09:15", "15:45", "23:59"} {
		if _, err := report.Schedule(at); err != nil {
			t.Errorf("Schedule(%q) = %v", at, err)
		}
	}
}

// Everyday fires every day of the week at its time, Saturday and Sunday
// too: its job asks the operator's calendar whether the day trades (a
// Saturday's special session does).
func TestEverydayFiresEveryDay(t *testing.T) {
	s, err := report.Everyday("08:45")
	if err != nil {
		t.Fatal(err)
	}
	from := time.Date(2026, 12, 4, 9, 0, 0, 0, deskbot.IST) // a Friday, after its 08:45
	var got []string
	for at := s.Next(from); len(got) < 7; at = s.Next(at) {
		got = append(got, at.In(deskbot.IST).Format("Mon 15:04"))
	}
	want := []string{"Sat 08:45", "Sun 08:45", "Mon 08:45", "Tue 08:45", "Wed 08:45", "Thu 08:45", "Fri 08:45"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("fired at %v, want %v", got, want)
	}
	if _, err := report.Everyday("8:45"); deskbot.ErrorCode(err) != deskbot.EINVALID {
		t.Errorf("Everyday(%q) = %v, want EINVALID", "8:45", err)
	}
}

// The day's report follows the operator's calendar: a Saturday's special
// session gets its report, a holiday none, whatever the weekday.
func TestReportFollowsTheTradingCalendar(t *testing.T) {
	cal, err := exchange.ParseCalendar("Mon-Fri 09:15-15:30", "2026-11-24, 2026-11-28 10:00-11:00")
	if err != nil {
		t.Fatal(err)
	}
	s, err := report.Everyday("15:45")
	if err != nil {
		t.Fatal(err)
	}
	clock := deskbottest.NewClock(time.Date(2026, 11, 23, 0, 0, 0, 0, deskbot.IST)) // a Monday
	var sent []string
	run := report.OnTradingDays(clock.Now, cal.TradingDay, func(context.Context) error {
		sent = append(sent, clock.Now().In(deskbot.IST).Format("Mon 2 Jan"))
		return nil
	})
	end := clock.Now().AddDate(0, 0, 7)
	for next := s.Next(clock.Now()); !next.After(end); next = s.Next(clock.Now()) {
		clock.Set(next)
		if err := run(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	want := "Mon 23 Nov, Wed 25 Nov, Thu 26 Nov, Fri 27 Nov, Sat 28 Nov" // Tue 24 a holiday, Sat 28 a special session
	if got := strings.Join(sent, ", "); got != want {
		t.Errorf("reports went out on %s; want %s", got, want)
	}
}
