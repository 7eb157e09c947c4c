package exchange

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/deskbot/deskbot"
)

// DefaultHours is MARKET_HOURS when the operator sets none: NSE and BSE,
// cash and F&O, in India time.
const DefaultHours = "Mon-Fri 09:15-15:30"

// hoursForm and holidaysForm say what the settings look like, for the
// operator reading a refusal.
const (
	hoursForm    = `each entry is days and a session in India time, like "Mon-Fri 09:15-15:30" or "Sat 10:00-11:00" (days Mon Tue Wed Thu Fri Sat Sun, a single day or a range; times HH:MM on a 24-hour clock, a close of 24:00 being midnight), entries separated by commas`
	holidaysForm = `each entry is a date YYYY-MM-DD, closed all day (e.g. "2026-01-26"), or a date and its only session in India time to make a special session (e.g. "2026-11-08 18:00-19:00"), entries separated by commas`
)

// Date is a calendar date in India, without a time.
type Date struct {
	Year  int
	Month time.Month
	Day   int
}

// DateOf is the date in India at t.
func DateOf(t time.Time) Date {
	y, m, d := t.In(deskbot.IST).Date()
	return Date{y, m, d}
}

// String writes the date as YYYY-MM-DD.
func (d Date) String() string { return fmt.Sprintf("%04d-%02d-%02d", d.Year, d.Month, d.Day) }

// IsZero reports whether d is the zero Date (no date).
func (d Date) IsZero() bool { return d == Date{} }

// Midnight is the start of d in India.
func (d Date) Midnight() time.Time { return time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, deskbot.IST) }

// Before reports whether d is an earlier date than e.
func (d Date) Before(e Date) bool {
	if d.Year != e.Year {
		return d.Year < e.Year
	}
	if d.Month != e.Month {
		return d.Month < e.Month
	}
	return d.Day < e.Day
}

// Session is one opening within a day, as offsets from India midnight: open
// from Open (included) until Close (excluded), so a 09:15-15:30 session is
// closed at 15:30:00. Sessions past midnight are not supported: no Indian
// exchange the desks trade has one.
type Session struct {
	Open, Close time.Duration
}

func (s Session) String() string { return clock(s.Open) + "-" + clock(s.Close) }

func clock(d time.Duration) string {
	m := int(d / time.Minute)
	return fmt.Sprintf("%02d:%02d", m/60, m%60)
}

// Hours is the weekly timetable parsed from MARKET_HOURS: for each weekday,
// its sessions, sorted and merged where they touch or overlap.
type Hours struct {
	week [7][]Session // by time.Weekday
	text string
}

// String is the timetable as it was written.
func (h Hours) String() string { return h.text }

// ParseHours reads MARKET_HOURS: comma-separated entries like
// "Mon-Fri 09:15-15:30" or "Sat 10:00-11:00", in India time. An empty
// setting is DefaultHours, since an unset variable arrives as "". Anything
// else is refused with what an entry must look like: a guessed timetable
// would let orders through when the exchange is shut.
func ParseHours(s string) (Hours, error) {
	if strings.TrimSpace(s) == "" {
		s = DefaultHours
	}
	var h Hours
	for _, entry := range strings.Split(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			return Hours{}, deskbot.Errorf(deskbot.EINVALID, "market hours %s have an empty entry; %s", strconv.Quote(s), hoursForm)
		}
		f := strings.Fields(entry)
		if len(f) != 2 {
			return Hours{}, deskbot.Errorf(deskbot.EINVALID, "market hours entry %s is not days and one session; %s", strconv.Quote(entry), hoursForm)
		}
		first, last, err := parseDays(f[0])
		if err != nil {
			return Hours{}, deskbot.Errorf(deskbot.EINVALID, "market hours entry %s: %s; %s", strconv.Quote(entry), err, hoursForm)
		}
		sess, err := parseSession(f[1])
		if err != nil {
			return Hours{}, deskbot.Errorf(deskbot.EINVALID, "market hours entry %s: %s; %s", strconv.Quote(entry), err, hoursForm)
		}
		for d := first; ; d = (d + 1) % 7 {
			h.week[d] = append(h.week[d], sess)
			if d == last {
				break
			}
		}
	}
	for d := range h.week {
		h.week[d] = merge(h.week[d])
	}
	h.text = strings.TrimSpace(s)
	return h, nil
}

// dayNames are the only day names accepted, Monday first as the operator
// writes ranges.
var dayNames = []string{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}

// weekdayOf maps an index into dayNames to a time.Weekday.
func weekdayOf(i int) time.Weekday { return time.Weekday((i + 1) % 7) }

// parseDays reads "Mon" or "Mon-Fri". A range runs forward from Mon to
// Sun: "Fri-Mon" is refused rather than read as wrapping over the weekend,
// which is more likely a slip than a wish to trade on Sunday.
func parseDays(s string) (first, last time.Weekday, err error) {
	a, b, isRange := strings.Cut(s, "-")
	i := slices.Index(dayNames, a)
	if i < 0 {
		return 0, 0, fmt.Errorf("day %s is not one of Mon Tue Wed Thu Fri Sat Sun", strconv.Quote(a))
	}
	if !isRange {
		return weekdayOf(i), weekdayOf(i), nil
	}
	j := slices.Index(dayNames, b)
	if j < 0 {
		return 0, 0, fmt.Errorf("day %s is not one of Mon Tue Wed Thu Fri Sat Sun", strconv.Quote(b))
	}
	if j < i {
		return 0, 0, fmt.Errorf("days %s run backwards; write a range from Mon towards Sun, e.g. Mon-Fri", s)
	}
	return weekdayOf(i), weekdayOf(j), nil
}

// parseSession reads "09:15-15:30".
func parseSession(s string) (Session, error) {
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		return Session{}, fmt.Errorf("session %s must be an open and a close time, HH:MM-HH:MM", strconv.Quote(s))
	}
	open, err := parseClock(a)
	if err != nil {
		return Session{}, err
	}
	// "24:00" closes at midnight, so a market open all day ("00:00-24:00")
	// has no closed minute before it.
	closing := 24 * time.Hour
	if b != "24:00" {
		if closing, err = parseClock(b); err != nil {
			return Session{}, err
		}
	}
	if closing <= open {
		return Session{}, fmt.Errorf("session %s closes before it opens; the close must be later the same day (sessions past midnight are not supported)", s)
	}
	return Session{open, closing}, nil
}

// parseClock reads HH:MM, two digits each, so that "9:15" or "09:15:00"
// is refused rather than guessed at.
func parseClock(s string) (time.Duration, error) {
	bad := fmt.Errorf("time %s must be HH:MM on a 24-hour clock, e.g. 09:15", strconv.Quote(s))
	if len(s) != 5 || s[2] != ':' {
		return 0, bad
	}
	for _, i := range []int{0, 1, 3, 4} {
		if s[i] < '0' || s[i] > '9' {
			return 0, bad
		}
	}
	hh := int(s[0]-'0')*10 + int(s[1]-'0')
	mm := int(s[3]-'0')*10 + int(s[4]-'0')
	if hh > 23 || mm > 59 {
		return 0, bad
	}
	return time.Duration(hh)*time.Hour + time.Duration(mm)*time.Minute, nil
}

// merge sorts sessions and joins those that overlap or touch, so that an
// opening is a moment the market goes from closed to open.
func merge(list []Session) []Session {
	if len(list) == 0 {
		return nil
	}
	list = slices.Clone(list)
	slices.SortFunc(list, func(a, b Session) int { return int(a.Open - b.Open) })
	out := list[:1]
	for _, s := range list[1:] {
		last := &out[len(out)-1]
		if s.Open <= last.Close {
			last.Close = max(last.Close, s.Close)
			continue
		}
		out = append(out, s)
	}
	return slices.Clip(out)
}

// Holiday is a date off the weekly timetable: closed all day when it has
// no sessions, or open only in its sessions (a special session such as
// Muhurat trading on a Sunday).
type Holiday struct {
	Date     Date
	Sessions []Session
}

// ParseHolidays reads MARKET_HOLIDAYS: comma-separated dates YYYY-MM-DD,
// each closed all day, or a date with one session ("2026-11-08 18:00-19:00")
// that is open only then. A date given twice is refused: which entry was
// meant cannot be told.
func ParseHolidays(s string) ([]Holiday, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []Holiday
	seen := map[Date]bool{}
	for _, entry := range strings.Split(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			return nil, deskbot.Errorf(deskbot.EINVALID, "market holidays %s have an empty entry; %s", strconv.Quote(s), holidaysForm)
		}
		f := strings.Fields(entry)
		if len(f) > 2 {
			return nil, deskbot.Errorf(deskbot.EINVALID, "market holiday %s is not a date and at most one session; %s", strconv.Quote(entry), holidaysForm)
		}
		d, err := parseDate(f[0])
		if err != nil {
			return nil, deskbot.Errorf(deskbot.EINVALID, "market holiday %s: %s; %s", strconv.Quote(entry), err, holidaysForm)
		}
		if seen[d] {
			return nil, deskbot.Errorf(deskbot.EINVALID, "market holiday %s is given twice; give each date once (%s)", d, holidaysForm)
		}
		seen[d] = true
		h := Holiday{Date: d}
		if len(f) == 2 {
			sess, err := parseSession(f[1])
			if err != nil {
				return nil, deskbot.Errorf(deskbot.EINVALID, "market holiday %s: %s; %s", strconv.Quote(entry), err, holidaysForm)
			}
			h.Sessions = []Session{sess}
		}
		out = append(out, h)
	}
	return out, nil
}

func parseDate(s string) (Date, error) {
	t, err := time.ParseInLocation("2006-01-02", s, deskbot.IST)
	if err != nil || len(s) != len("2006-01-02") {
		return Date{}, fmt.Errorf("date %s must be a real date written YYYY-MM-DD, e.g. 2026-01-26", strconv.Quote(s))
	}
	return DateOf(t), nil
}

// Calendar says when the market is open: the weekly Hours, overridden on
// holiday dates. It is immutable and safe to share.
type Calendar struct {
	hours   Hours
	special map[Date][]Session // a holiday's sessions; none: closed all day
}

// NewCalendar joins the weekly hours and the holidays. A date given twice
// takes its last entry (ParseHolidays refuses that anyway).
func NewCalendar(h Hours, holidays []Holiday) *Calendar {
	c := &Calendar{hours: h, special: make(map[Date][]Session, len(holidays))}
	for _, hol := range holidays {
		c.special[hol.Date] = merge(hol.Sessions)
	}
	return c
}

// ParseCalendar is NewCalendar of ParseHours and ParseHolidays: the
// service's MARKET_HOURS and MARKET_HOLIDAYS.
func ParseCalendar(hours, holidays string) (*Calendar, error) {
	h, err := ParseHours(hours)
	if err != nil {
		return nil, err
	}
	hol, err := ParseHolidays(holidays)
	if err != nil {
		return nil, err
	}
	return NewCalendar(h, hol), nil
}

// sessions are the date's openings, sorted and disjoint.
func (c *Calendar) sessions(d Date) []Session {
	if s, ok := c.special[d]; ok {
		return s
	}
	return c.hours.week[d.Midnight().Weekday()]
}

// Open reports whether the market is open at t.
func (c *Calendar) Open(t time.Time) bool {
	d := DateOf(t)
	since := t.Sub(d.Midnight())
	for _, s := range c.sessions(d) {
		if s.Open <= since && since < s.Close {
			return true
		}
	}
	return false
}

// TradingDay reports whether the market opens at all on t's date in India:
// a holiday with a special session is one, a plain holiday is not.
func (c *Calendar) TradingDay(t time.Time) bool { return len(c.sessions(DateOf(t))) > 0 }

// nextHorizon bounds Next's search: a timetable with no opening in two
// years (every weekday session cancelled by holidays) has none.
const nextHorizon = 2 * 366

// Next is the next opening strictly after t, in IST: when the market is
// closed, when it opens; when it is open, when the following session opens.
// It is the zero time when there is no opening within two years.
func (c *Calendar) Next(t time.Time) time.Time {
	d := DateOf(t)
	for i := range nextHorizon {
		day := Date{d.Year, d.Month, d.Day + i}.Midnight() // time.Date normalises the day
		for _, s := range c.sessions(DateOf(day)) {
			if at := day.Add(s.Open); at.After(t) {
				return at
			}
		}
	}
	return time.Time{}
}

// lastClose is the latest session close at or before t, today or
// yesterday in India (older closes are too far back to matter to anyone
// asking); zero when there is none.
func (c *Calendar) lastClose(t time.Time) time.Time {
	d := DateOf(t)
	for i := range 2 {
		day := Date{d.Year, d.Month, d.Day - i}.Midnight()
		list := c.sessions(DateOf(day))
		for k := len(list) - 1; k >= 0; k-- {
			if at := day.Add(list[k].Close); !at.After(t) {
				return at
			}
		}
	}
	return time.Time{}
}
