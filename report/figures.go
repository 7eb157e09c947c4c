package report

import (
	"context"
	"slices"
	"sort"
	"time"

	"github.com/deskbot/deskbot"
)

// Deps are the ports the report reads.
type Deps struct {
	Broker deskbot.Broker
	Desks  deskbot.DeskStore
	Risk   deskbot.RiskStore // only PnLSamples is read
	Audit  deskbot.Auditor
	// TradingDay says whether t's India day trades (the operator's
	// calendar, MARKET_HOURS and MARKET_HOLIDAYS: a Saturday's special
	// session counts, a holiday does not); nil: Monday to Friday.
	TradingDay func(t time.Time) bool
}

// journalDepth is how many of a desk's last fills are read: as many as the
// paper broker's journal keeps, as the chat reads.
const journalDepth = 1000

// auditDepth is how many of the audit trail's last entries are read for a
// day's counts: a busy day of several desks is a few hundred.
const auditDepth = 10000

// DeskDay is one desk's figures for one India day.
type DeskDay struct {
	Desk     string
	Day      string  // 2006-01-02, India's
	Realised float64 // by the day's fills
	Open     float64 // of the open positions, at their last prices
	Trades   int     // the day's fills
	// Partial says the journal may no longer hold every fill of the day.
	Partial bool
	// Curve is the P&L through the day (realised plus open), oldest first,
	// the P&L now last.
	Curve []deskbot.PnLSample

	Held, Allowed, Denied, Lapsed int
	// Decided counts the decisions timed; Median is their median time from
	// hold to allow or deny.
	Decided int
	Median  time.Duration
	Tokens  int64 // the models' tokens of the day
	Halts   int   // halts of the day by a risk rule
	Halt    *deskbot.Halt
	// AuditPartial says the audit trail read may not reach back to the
	// day's start, so the counts may be short.
	AuditPartial bool
}

// PnL is the desk's P&L now: realised plus open.
func (d DeskDay) PnL() float64 { return deskbot.RoundPaise(d.Realised + d.Open) }

// days reads the figures of every desk for now's India day. The audit
// trail is read once for all desks.
func days(ctx context.Context, deps Deps, desks []string, now time.Time) ([]DeskDay, error) {
	day := deskbot.OrderDay(now)
	trail, err := deps.Audit.AuditTrail(ctx, auditDepth)
	if err != nil {
		return nil, err
	}
	auditPartial := len(trail) >= auditDepth && deskbot.OrderDay(trail[0].At) == day
	out := make([]DeskDay, 0, len(desks))
	for _, desk := range desks {
		d, err := deskDay(ctx, deps, desk, now)
		if err != nil {
			return nil, err
		}
		count(&d, trail)
		d.AuditPartial = auditPartial
		out = append(out, d)
	}
	return out, nil
}

func deskDay(ctx context.Context, deps Deps, desk string, now time.Time) (DeskDay, error) {
	d := DeskDay{Desk: desk, Day: deskbot.OrderDay(now)}
	trades, err := deps.Broker.Trades(ctx, desk, journalDepth)
	if err != nil {
		return d, err
	}
	book, err := deps.Broker.Book(ctx, desk)
	if err != nil {
		return d, err
	}
	d.Realised, d.Open, d.Trades, d.Partial = deskbot.DayPnL(trades, book, d.Day, len(trades) >= journalDepth)
	samples, err := deps.Risk.PnLSamples(ctx, desk, d.Day)
	if err != nil {
		return d, err
	}
	// The samples are the watcher's; the P&L now is this report's own last
	// point, so the curve ends where the caption's figures are.
	d.Curve = append(slices.Clip(samples), deskbot.PnLSample{At: now, PnL: d.PnL()})
	st, err := deps.Desks.DeskStatus(ctx, desk)
	if err != nil {
		return d, err
	}
	if st.TokensDay == d.Day {
		d.Tokens = st.Tokens
	}
	d.Halt = st.Halt
	return d, nil
}

// count fills the desk's counts of the day from the audit trail: held
// calls, how they were decided or lapsed, the median time from hold to
// decision, and halts.
func count(d *DeskDay, trail []deskbot.AuditEntry) {
	held := map[string]time.Time{}
	decided := map[string]bool{}
	var waits []time.Duration
	for _, e := range trail {
		if e.Desk != d.Desk {
			continue
		}
		if e.Action == "hold" && e.RequestID != "" {
			held[e.RequestID] = e.At
		}
		if deskbot.OrderDay(e.At) != d.Day {
			continue
		}
		switch e.Action {
		case "hold":
			d.Held++
		case "allow_once", "always_allow":
			d.Allowed++
		case "deny":
			d.Denied++
		case "lapse":
			d.Lapsed++
		case "halt":
			if e.By == "risk" {
				d.Halts++
			}
		}
		switch e.Action {
		case "allow_once", "always_allow", "deny":
			// The first decision of a request is its time to decide; a
			// second approver's allow (four eyes) is not a new wait.
			if at, ok := held[e.RequestID]; ok && !decided[e.RequestID] {
				decided[e.RequestID] = true
				waits = append(waits, e.At.Sub(at))
			}
		}
	}
	d.Decided = len(waits)
	d.Median = median(waits)
}

// median of ds; 0 for none. An even count takes the mean of the middle two.
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// WeekDay is one desk's realised P&L on one trading day.
type WeekDay struct {
	Day      string // 2006-01-02, India's
	Realised float64
	Trades   int
}

// DeskWeek is one desk's last five trading days, oldest first.
type DeskWeek struct {
	Desk string
	Days []WeekDay
	// Partial says the journal may no longer hold every fill of the week.
	Partial bool
}

// Total is the week's realised P&L.
func (w DeskWeek) Total() float64 {
	var t float64
	for _, d := range w.Days {
		t += d.Realised
	}
	return deskbot.RoundPaise(t)
}

// TradingDays are the last n trading days up to now's day, oldest first,
// on the operator's calendar (trading; nil: Monday to Friday): today counts
// when it trades. A year without one is not searched past.
func TradingDays(now time.Time, n int, trading func(time.Time) bool) []string {
	if trading == nil {
		trading = func(t time.Time) bool {
			wd := t.In(deskbot.IST).Weekday()
			return wd != time.Saturday && wd != time.Sunday
		}
	}
	t := now.In(deskbot.IST)
	var out []string
	for i := 0; len(out) < n && i < 366; i++ {
		if trading(t) {
			out = append(out, t.Format("2006-01-02"))
		}
		t = t.AddDate(0, 0, -1)
	}
	slices.Reverse(out)
	return out
}

// weeks reads the last five trading days of every desk from its journal.
func weeks(ctx context.Context, deps Deps, desks []string, now time.Time) ([]DeskWeek, error) {
	days := TradingDays(now, 5, deps.TradingDay)
	if len(days) == 0 {
		return nil, deskbot.Errorf(deskbot.EINVALID, "No day of the last year trades on MARKET_HOURS and MARKET_HOLIDAYS.")
	}
	out := make([]DeskWeek, 0, len(desks))
	for _, desk := range desks {
		trades, err := deps.Broker.Trades(ctx, desk, journalDepth)
		if err != nil {
			return nil, err
		}
		w := DeskWeek{Desk: desk, Days: make([]WeekDay, len(days))}
		at := map[string]int{}
		for i, d := range days {
			w.Days[i].Day = d
			at[d] = i
		}
		for _, t := range trades {
			if i, ok := at[deskbot.OrderDay(t.At)]; ok {
				w.Days[i].Realised += t.RealisedPnL
				w.Days[i].Trades++
			}
		}
		for i := range w.Days {
			w.Days[i].Realised = deskbot.RoundPaise(w.Days[i].Realised)
		}
		w.Partial = len(trades) >= journalDepth && len(trades) > 0 && deskbot.OrderDay(trades[0].At) >= days[0]
		out = append(out, w)
	}
	return out, nil
}
