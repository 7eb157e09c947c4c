package exchange

import (
	"testing"
	"time"

	"github.com/deskbot/deskbot"
)

// ist is a moment in India time, built in a fixed +05:30 zone of the test's
// own so the test does not lean on the package's IST.
func ist(y int, m time.Month, d, hh, mm, ss int) time.Time {
	return time.Date(y, m, d, hh, mm, ss, 0, time.FixedZone("+0530", 5*3600+30*60))
}

// The week the tests live in: Fri 4 Dec 2026, Sat 5, Sun 6, Mon 7, Tue 8.

func mustHours(t *testing.T, s string) Hours {
	t.Helper()
	h, err := ParseHours(s)
	if err != nil {
		t.Fatalf("ParseHours(%q): %v", s, err)
	}
	return h
}

func mustCalendar(t *testing.T, hours, holidays string) *Calendar {
	t.Helper()
	c, err := ParseCalendar(hours, holidays)
	if err != nil {
		t.Fatalf("ParseCalendar(%q, %q): %v", hours, holidays, err)
	}
	return c
}

type openCase struct {
	name string
	at   time.Time
	want bool
}

func checkOpen(t *testing.T, c *Calendar, cases []openCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := c.Open(tc.at); got != tc.want {
				t.Errorf("Open(%v): got %v, want %v", tc.at, got, tc.want)
			}
		})
	}
}

func TestDefaultHours(t *testing.T) {
	c := mustCalendar(t, "", "")
	if got, want := mustHours(t, "").String(), DefaultHours; got != want {
		t.Errorf("empty MARKET_HOURS: got %q, want %q", got, want)
	}
	checkOpen(t, c, []openCase{
		{"Mon 09:14:59", ist(2026, 12, 7, 9, 14, 59), false},
		{"Mon 09:15:00", ist(2026, 12, 7, 9, 15, 0), true},
		{"Mon 15:29:59", ist(2026, 12, 7, 15, 29, 59), true},
		{"Mon 15:30:00", ist(2026, 12, 7, 15, 30, 0), false},
		{"Fri 12:00", ist(2026, 12, 4, 12, 0, 0), true},
		{"Sat 12:00", ist(2026, 12, 5, 12, 0, 0), false},
		{"Sun 12:00", ist(2026, 12, 6, 12, 0, 0), false},
		{"Mon 00:00", ist(2026, 12, 7, 0, 0, 0), false},
		// The same instants given in UTC: hours are India time whatever
		// zone a time carries.
		{"Mon 03:45Z is 09:15 IST", time.Date(2026, 12, 7, 3, 45, 0, 0, time.UTC), true},
		{"Mon 03:44:59Z is 09:14:59 IST", time.Date(2026, 12, 7, 3, 44, 59, 0, time.UTC), false},
		{"Sun 20:00Z is Mon 01:30 IST", time.Date(2026, 12, 6, 20, 0, 0, 0, time.UTC), false},
		{"Fri 09:59Z is 15:29 IST", time.Date(2026, 12, 4, 9, 59, 0, 0, time.UTC), true},
	})
}

func TestParseHoursSpans(t *testing.T) {
	c := mustCalendar(t, "Mon-Fri 09:15-15:30, Sat 10:00-11:00,Wed 16:00-17:00", "")
	checkOpen(t, c, []openCase{
		{"Sat 09:59", ist(2026, 12, 5, 9, 59, 0), false},
		{"Sat 10:00", ist(2026, 12, 5, 10, 0, 0), true},
		{"Sat 11:00", ist(2026, 12, 5, 11, 0, 0), false},
		{"Sun 10:30", ist(2026, 12, 6, 10, 30, 0), false},
		{"Wed 15:45 between sessions", ist(2026, 12, 9, 15, 45, 0), false},
		{"Wed 16:30 second session", ist(2026, 12, 9, 16, 30, 0), true},
		{"Thu 16:30 no second session", ist(2026, 12, 10, 16, 30, 0), false},
	})
	all := mustCalendar(t, "Mon-Sun 00:00-23:59", "")
	checkOpen(t, all, []openCase{
		{"Sun 00:00", ist(2026, 12, 6, 0, 0, 0), true},
		{"Sat 23:58:59", ist(2026, 12, 5, 23, 58, 59), true},
		{"Sat 23:59", ist(2026, 12, 5, 23, 59, 0), false},
	})
	// A close of 24:00 is midnight: open all day, every minute of it.
	allDay := mustCalendar(t, "Mon-Sun 00:00-24:00", "")
	checkOpen(t, allDay, []openCase{
		{"Sun 00:00", ist(2026, 12, 6, 0, 0, 0), true},
		{"Sat 23:59", ist(2026, 12, 5, 23, 59, 0), true},
		{"Sat 23:59:59", ist(2026, 12, 5, 23, 59, 59), true},
	})
}

func TestOverlappingSessionsMerge(t *testing.T) {
	c := mustCalendar(t, "Mon 09:00-12:00, Mon 11:00-15:00, Mon 15:00-16:00", "")
	checkOpen(t, c, []openCase{
		{"Mon 11:30 in both", ist(2026, 12, 7, 11, 30, 0), true},
		{"Mon 15:00 where two touch", ist(2026, 12, 7, 15, 0, 0), true},
		{"Mon 16:00", ist(2026, 12, 7, 16, 0, 0), false},
	})
	// 11:00 and 15:00 are not openings: the market is already open then.
	if got, want := c.Next(ist(2026, 12, 7, 10, 0, 0)), ist(2026, 12, 14, 9, 0, 0); !got.Equal(want) {
		t.Errorf("Next from inside merged sessions: got %v, want %v", got, want)
	}
}

func TestParseHoursErrors(t *testing.T) {
	form := `each entry is days and a session in India time, like "Mon-Fri 09:15-15:30" or "Sat 10:00-11:00" (days Mon Tue Wed Thu Fri Sat Sun, a single day or a range; times HH:MM on a 24-hour clock, a close of 24:00 being midnight), entries separated by commas`
	for _, tc := range []struct {
		in, want string
	}{
		{"Mon-Fri 9:15-15:30", `market hours entry "Mon-Fri 9:15-15:30": time "9:15" must be HH:MM on a 24-hour clock, e.g. 09:15; ` + form},
		{"Mon-Fri 24:00-24:00", `market hours entry "Mon-Fri 24:00-24:00": time "24:00" must be HH:MM on a 24-hour clock, e.g. 09:15; ` + form},
		{"Mon-Fri 09:15-24:01", `market hours entry "Mon-Fri 09:15-24:01": time "24:01" must be HH:MM on a 24-hour clock, e.g. 09:15; ` + form},
		{"Mon-Fri 09:15:00-15:30", `market hours entry "Mon-Fri 09:15:00-15:30": time "09:15:00" must be HH:MM on a 24-hour clock, e.g. 09:15; ` + form},
		{"Mon-Fri 15:30-09:15", `market hours entry "Mon-Fri 15:30-09:15": session 15:30-09:15 closes before it opens; the close must be later the same day (sessions past midnight are not supported); ` + form},
		{"Mon-Fri 09:15-09:15", `market hours entry "Mon-Fri 09:15-09:15": session 09:15-09:15 closes before it opens; the close must be later the same day (sessions past midnight are not supported); ` + form},
		{"Mon-Fri 09:15", `market hours entry "Mon-Fri 09:15": session "09:15" must be an open and a close time, HH:MM-HH:MM; ` + form},
		{"Monday-Friday 09:15-15:30", `market hours entry "Monday-Friday 09:15-15:30": day "Monday" is not one of Mon Tue Wed Thu Fri Sat Sun; ` + form},
		{"mon-fri 09:15-15:30", `market hours entry "mon-fri 09:15-15:30": day "mon" is not one of Mon Tue Wed Thu Fri Sat Sun; ` + form},
		{"Mon-Fry 09:15-15:30", `market hours entry "Mon-Fry 09:15-15:30": day "Fry" is not one of Mon Tue Wed Thu Fri Sat Sun; ` + form},
		{"Fri-Mon 09:15-15:30", `market hours entry "Fri-Mon 09:15-15:30": days Fri-Mon run backwards; write a range from Mon towards Sun, e.g. Mon-Fri; ` + form},
		{"09:15-15:30", `market hours entry "09:15-15:30" is not days and one session; ` + form},
		{"Mon-Fri 09:15-12:00 13:00-15:30", `market hours entry "Mon-Fri 09:15-12:00 13:00-15:30" is not days and one session; ` + form},
		{"Mon-Fri 09:15-15:30,", `market hours "Mon-Fri 09:15-15:30," have an empty entry; ` + form},
		{"Mon,Tue 09:15-15:30", `market hours entry "Mon" is not days and one session; ` + form},
	} {
		t.Run(tc.in, func(t *testing.T) {
			_, err := ParseHours(tc.in)
			wantError(t, err, deskbot.EINVALID, tc.want)
		})
	}
}

func TestParseHolidaysErrors(t *testing.T) {
	form := `each entry is a date YYYY-MM-DD, closed all day (e.g. "2026-01-26"), or a date and its only session in India time to make a special session (e.g. "2026-11-08 18:00-19:00"), entries separated by commas`
	for _, tc := range []struct {
		in, want string
	}{
		{"2026-13-01", `market holiday "2026-13-01": date "2026-13-01" must be a real date written YYYY-MM-DD, e.g. 2026-01-26; ` + form},
		{"2026-02-30", `market holiday "2026-02-30": date "2026-02-30" must be a real date written YYYY-MM-DD, e.g. 2026-01-26; ` + form},
		{"2026-1-26", `market holiday "2026-1-26": date "2026-1-26" must be a real date written YYYY-MM-DD, e.g. 2026-01-26; ` + form},
		{"26/01/2026", `market holiday "26/01/2026": date "26/01/2026" must be a real date written YYYY-MM-DD, e.g. 2026-01-26; ` + form},
		{"2026-11-08 18:00", `market holiday "2026-11-08 18:00": session "18:00" must be an open and a close time, HH:MM-HH:MM; ` + form},
		{"2026-11-08 19:00-18:00", `market holiday "2026-11-08 19:00-18:00": session 19:00-18:00 closes before it opens; the close must be later the same day (sessions past midnight are not supported); ` + form},
		{"2026-11-08 18:00-19:00 19:15-19:30", `market holiday "2026-11-08 18:00-19:00 19:15-19:30" is not a date and at most one session; ` + form},
		{"2026-01-26, 2026-01-26 10:00-11:00", `market holiday 2026-01-26 is given twice; give each date once (` + form + `)`},
		{"2026-01-26,,2026-03-03", `market holidays "2026-01-26,,2026-03-03" have an empty entry; ` + form},
	} {
		t.Run(tc.in, func(t *testing.T) {
			_, err := ParseHolidays(tc.in)
			wantError(t, err, deskbot.EINVALID, tc.want)
		})
	}
}

func TestParseHolidays(t *testing.T) {
	got, err := ParseHolidays(" 2026-01-26 , 2026-11-08  18:00-19:00")
	if err != nil {
		t.Fatal(err)
	}
	want := []Holiday{
		{Date: Date{2026, time.January, 26}},
		{Date: Date{2026, time.November, 8}, Sessions: []Session{{18 * time.Hour, 19 * time.Hour}}},
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i].Date != want[i].Date || len(got[i].Sessions) != len(want[i].Sessions) ||
			len(want[i].Sessions) > 0 && got[i].Sessions[0] != want[i].Sessions[0] {
			t.Errorf("holiday %d: got %v, want %v", i, got[i], want[i])
		}
	}
	if none, err := ParseHolidays(""); err != nil || none != nil {
		t.Errorf("empty MARKET_HOLIDAYS: got %v %v, want none", none, err)
	}
}

func TestHolidayIsClosed(t *testing.T) {
	c := mustCalendar(t, "", "2026-12-08")
	checkOpen(t, c, []openCase{
		{"Tue holiday 10:00", ist(2026, 12, 8, 10, 0, 0), false},
		{"Mon before 10:00", ist(2026, 12, 7, 10, 0, 0), true},
		{"Wed after 10:00", ist(2026, 12, 9, 10, 0, 0), true},
	})
	for _, tc := range []struct {
		name string
		at   time.Time
		want bool
	}{
		{"Mon", ist(2026, 12, 7, 20, 0, 0), true},
		{"Tue holiday", ist(2026, 12, 8, 10, 0, 0), false},
		{"Sat", ist(2026, 12, 5, 10, 0, 0), false},
		// 19:00 UTC on the Monday is already Tuesday in India.
		{"Mon 19:00Z is the holiday", time.Date(2026, 12, 7, 19, 0, 0, 0, time.UTC), false},
	} {
		if got := c.TradingDay(tc.at); got != tc.want {
			t.Errorf("TradingDay %s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestSpecialSession(t *testing.T) {
	// Muhurat trading on Sunday 8 Nov 2026, and a weekday whose usual hours
	// are replaced by a short session.
	c := mustCalendar(t, "", "2026-11-08 18:00-19:00, 2026-12-09 10:00-11:00")
	checkOpen(t, c, []openCase{
		{"Sun 17:59:59", ist(2026, 11, 8, 17, 59, 59), false},
		{"Sun 18:00", ist(2026, 11, 8, 18, 0, 0), true},
		{"Sun 18:59:59", ist(2026, 11, 8, 18, 59, 59), true},
		{"Sun 19:00", ist(2026, 11, 8, 19, 0, 0), false},
		{"Sun 10:00 usual weekend", ist(2026, 11, 8, 10, 0, 0), false},
		{"next Sun 18:30", ist(2026, 11, 15, 18, 30, 0), false},
		{"Wed 09:30 usual hours replaced", ist(2026, 12, 9, 9, 30, 0), false},
		{"Wed 10:30", ist(2026, 12, 9, 10, 30, 0), true},
		{"Wed 11:00", ist(2026, 12, 9, 11, 0, 0), false},
	})
	if !c.TradingDay(ist(2026, 11, 8, 8, 0, 0)) {
		t.Error("TradingDay on the special Sunday: got false, want true")
	}
	if got, want := c.Next(ist(2026, 11, 7, 12, 0, 0)), ist(2026, 11, 8, 18, 0, 0); !got.Equal(want) {
		t.Errorf("Next from Sat: got %v, want %v (the special session)", got, want)
	}
}

func TestNext(t *testing.T) {
	plain := mustCalendar(t, "", "")
	holiday := mustCalendar(t, "", "2026-12-07, 2026-12-25")
	for _, tc := range []struct {
		name string
		c    *Calendar
		at   time.Time
		want time.Time
	}{
		{"Fri before the open", plain, ist(2026, 12, 4, 8, 0, 0), ist(2026, 12, 4, 9, 15, 0)},
		{"Fri at the close, over the weekend", plain, ist(2026, 12, 4, 15, 30, 0), ist(2026, 12, 7, 9, 15, 0)},
		{"Fri while open: the next session", plain, ist(2026, 12, 4, 10, 0, 0), ist(2026, 12, 7, 9, 15, 0)},
		{"Fri at the open: the next one", plain, ist(2026, 12, 4, 9, 15, 0), ist(2026, 12, 7, 9, 15, 0)},
		{"Sat", plain, ist(2026, 12, 5, 12, 0, 0), ist(2026, 12, 7, 9, 15, 0)},
		{"Sun late", plain, ist(2026, 12, 6, 23, 59, 59), ist(2026, 12, 7, 9, 15, 0)},
		{"Fri evening, weekend and a Monday holiday", holiday, ist(2026, 12, 4, 16, 0, 0), ist(2026, 12, 8, 9, 15, 0)},
		{"Thu 24 Dec over Christmas and the weekend", holiday, ist(2026, 12, 24, 16, 0, 0), ist(2026, 12, 28, 9, 15, 0)},
		{"across the year", plain, ist(2026, 12, 31, 16, 0, 0), ist(2027, 1, 1, 9, 15, 0)},
		{"given in UTC", plain, time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC), ist(2026, 12, 7, 9, 15, 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.c.Next(tc.at)
			if !got.Equal(tc.want) {
				t.Errorf("Next(%v): got %v, want %v", tc.at, got, tc.want)
			}
			if got.Location() != deskbot.IST {
				t.Errorf("Next(%v) is in %v, want IST", tc.at, got.Location())
			}
		})
	}
	if got := NewCalendar(Hours{}, nil).Next(ist(2026, 12, 4, 8, 0, 0)); !got.IsZero() {
		t.Errorf("Next with no sessions at all: got %v, want the zero time", got)
	}
}
