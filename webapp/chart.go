package webapp

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strings"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/words"
)

// Charts are SVG drawn here, from numbers only: no desk text goes into
// them, and what text they hold (rupees, times) is escaped all the same.
// Colours come from the stylesheet's classes (the CSP allows no inline
// style), so they follow Telegram's theme.

const (
	chartW, chartH   = 360.0, 170.0
	padL, padR       = 64.0, 10.0
	padT, padB       = 12.0, 24.0
	sessionOpenHour  = 9
	sessionOpenMin   = 0
	sessionCloseHour = 15
	sessionCloseMin  = 30
)

type point struct {
	t time.Time
	v float64
}

// dayChart is the desk's P&L through today (India time): realised P&L
// summed fill by fill, then the open P&L at its last prices now, drawn
// dashed, since it is not yet money.
func dayChart(trades []deskbot.Trade, unrealised float64, now time.Time) template.HTML {
	now = now.In(deskbot.IST)
	y, m, d := now.Date()
	open := time.Date(y, m, d, sessionOpenHour, sessionOpenMin, 0, 0, deskbot.IST)
	end := time.Date(y, m, d, sessionCloseHour, sessionCloseMin, 0, 0, deskbot.IST)
	if now.After(end) {
		end = now
	}
	start := open
	day := deskbot.OrderDay(now)
	pts := []point{{start, 0}}
	var sum float64
	for _, t := range trades {
		if deskbot.OrderDay(t.At) != day {
			continue
		}
		at := t.At
		if at.Before(start) {
			start = at
			pts[0].t = at
		}
		sum += t.RealisedPnL
		pts = append(pts, point{at, sum})
	}
	last := point{now, sum}
	withOpen := point{now, sum + unrealised}
	lo, hi := 0.0, 0.0
	for _, p := range append(pts, last, withOpen) {
		lo, hi = math.Min(lo, p.v), math.Max(hi, p.v)
	}
	if hi-lo < 1 {
		hi, lo = hi+1, lo-1
	}
	x := func(t time.Time) float64 {
		return padL + (chartW-padL-padR)*float64(t.Sub(start))/float64(max(end.Sub(start), time.Minute))
	}
	yv := func(v float64) float64 { return padT + (chartH-padT-padB)*(hi-v)/(hi-lo) }

	var b strings.Builder
	svgOpen(&b, "P&L today: realised "+words.SignedRupees(sum)+", with open positions "+words.SignedRupees(sum+unrealised))
	axes(&b, lo, hi, yv)
	// A step line: P&L changes only at fills.
	var path strings.Builder
	fmt.Fprintf(&path, "M%.1f %.1f", x(pts[0].t), yv(pts[0].v))
	for _, p := range pts[1:] {
		fmt.Fprintf(&path, " H%.1f V%.1f", x(p.t), yv(p.v))
	}
	fmt.Fprintf(&path, " H%.1f", x(last.t))
	fmt.Fprintf(&b, `<path class="line" d="%s"/>`, path.String())
	fmt.Fprintf(&b, `<path class="line open" d="M%.1f %.1f V%.1f"/>`, x(last.t), yv(last.v), yv(withOpen.v))
	fmt.Fprintf(&b, `<circle class="dot" cx="%.1f" cy="%.1f" r="3"/>`, x(withOpen.t), yv(withOpen.v))
	// The first and last labels hang inward, so neither is cut at an edge.
	for i, t := range []time.Time{start, time.Date(y, m, d, 12, 0, 0, 0, deskbot.IST), end} {
		anchor := [...]string{"start", "middle", "end"}[i]
		fmt.Fprintf(&b, `<text class="label" x="%.1f" y="%.1f" text-anchor="%s">%s</text>`, x(t), chartH-6, anchor, esc(t.Format("15:04")))
	}
	b.WriteString("</svg>")
	return template.HTML(b.String())
}

// daysChart is realised P&L per India day over the given trading days
// (report.TradingDays: the operator's calendar, as /pnl week counts them),
// today last, as bars from zero.
func daysChart(trades []deskbot.Trade, days []string) template.HTML {
	n := len(days)
	if n == 0 {
		return ""
	}
	sums := map[string]float64{}
	for _, t := range trades {
		sums[deskbot.OrderDay(t.At)] += t.RealisedPnL
	}
	lo, hi := 0.0, 0.0
	for _, d := range days {
		lo, hi = math.Min(lo, sums[d]), math.Max(hi, sums[d])
	}
	if hi-lo < 1 {
		hi, lo = hi+1, lo-1
	}
	yv := func(v float64) float64 { return padT + (chartH-padT-padB)*(hi-v)/(hi-lo) }
	slot := (chartW - padL - padR) / float64(n)
	var b strings.Builder
	svgOpen(&b, fmt.Sprintf("Realised P&L over the last %d trading days", n))
	axes(&b, lo, hi, yv)
	for i, d := range days {
		v := sums[d]
		top, bottom := yv(math.Max(v, 0)), yv(math.Min(v, 0))
		class := "bar up"
		if v < 0 {
			class = "bar down"
		}
		bx := padL + slot*float64(i) + slot*0.15
		fmt.Fprintf(&b, `<rect class="%s" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%s %s</title></rect>`,
			class, bx, top, slot*0.7, math.Max(bottom-top, 1), esc(d), esc(words.SignedRupees(v)))
		t, _ := time.ParseInLocation("2006-01-02", d, deskbot.IST)
		fmt.Fprintf(&b, `<text class="label" x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, bx+slot*0.35, chartH-6, esc(t.Format("Mon 2")))
	}
	b.WriteString("</svg>")
	return template.HTML(b.String())
}

func svgOpen(b *strings.Builder, label string) {
	fmt.Fprintf(b, `<svg class="chart" viewBox="0 0 %.0f %.0f" role="img" aria-label="%s" xmlns="http://www.w3.org/2000/svg"><title>%s</title>`, chartW, chartH, esc(label), esc(label))
}

// axes draws the zero line and the top and bottom values.
func axes(b *strings.Builder, lo, hi float64, yv func(float64) float64) {
	fmt.Fprintf(b, `<line class="zero" x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"/>`, padL, chartW-padR, yv(0), yv(0))
	for _, v := range []float64{hi, lo} {
		fmt.Fprintf(b, `<text class="label" x="%.1f" y="%.1f" text-anchor="end">%s</text>`, padL-4, yv(v)+4, esc(words.SignedRupees(v)))
	}
}

func esc(s string) string { return html.EscapeString(s) }
