package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/argtext"
	"github.com/deskbot/deskbot/words"
)

// MaxCaption is Telegram's limit on a photo's caption, in characters.
const MaxCaption = 1024

// dayCaption is the day's figures in words, plain text: first a line per
// desk with its P&L (what a trader looks for), then a line per desk with
// its calls, decisions, tokens and halts, so a clip to MaxCaption cuts the
// details of the last desks before anyone's P&L.
func dayCaption(ds []DeskDay, now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "P&L of %s, at %s India time", dayTitle(now), words.Time(now))
	for _, d := range ds {
		fmt.Fprintf(&b, "\n%s %s: realised %s, open %s, %s", d.Desk, words.SignedRupees(d.PnL()),
			words.SignedRupees(d.Realised), words.SignedRupees(d.Open), plural(d.Trades, "trade"))
		if d.Partial {
			b.WriteString(" (earlier fills are gone from the journal)")
		}
		if d.Halt != nil {
			fmt.Fprintf(&b, "; HALTED by %s", d.Halt.Rule)
		}
	}
	b.WriteString("\n")
	for _, d := range ds {
		b.WriteString("\n" + details(d))
	}
	return argtext.Clip(b.String(), MaxCaption, "…")
}

// details is a desk's calls, decisions, tokens and halts on one line.
func details(d DeskDay) string {
	s := fmt.Sprintf("%s: %s held, %d allowed, %d denied, %d lapsed", d.Desk, plural(d.Held, "call"), d.Allowed, d.Denied, d.Lapsed)
	if d.Decided > 0 {
		s += "; median decision " + Duration(d.Median)
	}
	s += "; " + words.GroupedQuantity(float64(d.Tokens)) + " tokens"
	switch d.Halts {
	case 0:
		s += "; no halts"
	default:
		s += "; " + plural(d.Halts, "halt")
	}
	if d.Halt != nil {
		s += fmt.Sprintf(" (halted since %s: %s)", words.Time(d.Halt.At), d.Halt.Figures)
	}
	if d.AuditPartial {
		s += " (counts from the audit trail's last entries only)"
	}
	return s
}

// weekCaption is the week's realised P&L in words, plain text: a line per
// desk with its total first, then its days.
func weekCaption(ws []DeskWeek, days []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Realised P&L of the last five trading days, %s to %s", shortDay(days[0]), shortDay(days[len(days)-1]))
	for _, w := range ws {
		var parts []string
		for _, d := range w.Days {
			parts = append(parts, shortDay(d.Day)+" "+words.SignedRupees(d.Realised))
		}
		fmt.Fprintf(&b, "\n%s %s: %s", w.Desk, words.SignedRupees(w.Total()), strings.Join(parts, ", "))
		if w.Partial {
			b.WriteString(" (earlier fills are gone from the journal)")
		}
	}
	return argtext.Clip(b.String(), MaxCaption, "…")
}

// Duration is a wait in words a trader reads at a glance: "45s", "3m05s",
// "1h02m".
func Duration(d time.Duration) string {
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// dayTitle is now's India day as people write it: "Thu 3 Dec 2026".
func dayTitle(now time.Time) string { return now.In(deskbot.IST).Format("Mon 2 Jan 2006") }

// shortDay is a day (2006-01-02) as a bar's label: "Thu 3 Dec".
func shortDay(day string) string {
	t, err := time.ParseInLocation("2006-01-02", day, deskbot.IST)
	if err != nil {
		return day
	}
	return t.Format("Mon 2 Jan")
}
