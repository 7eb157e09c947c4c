// The words a desk team reads about money: books, fills and flattens, for
// the desk's model (broker tools) and for people (the bot) alike.

package deskbot

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// FormatBook renders a book for a model or a person: one line per open
// position, then the totals.
//
//	RELIANCE: long 6, avg 100.00, last 110.00, unrealised +60.00
//	Total: unrealised +60.00, realised +40.00, net +100.00
func FormatBook(b Book) string {
	if len(b.Positions) == 0 {
		return "No open positions. Realised P&L to date " + Money(b.RealisedPnL) + "."
	}
	var sb strings.Builder
	var unrealised float64
	for _, p := range b.Positions {
		sb.WriteString(FormatPosition(p))
		sb.WriteByte('\n')
		unrealised += p.UnrealisedPnL()
	}
	fmt.Fprintf(&sb, "Total: unrealised %s, realised %s, net %s",
		Money(unrealised), Money(b.RealisedPnL), Money(unrealised+b.RealisedPnL))
	return sb.String()
}

// FormatPosition renders one position on one line.
func FormatPosition(p Position) string {
	if p.Quantity == 0 {
		return fmt.Sprintf("%s: flat, last %s", p.Symbol, Price(p.LastPrice))
	}
	dir := "long"
	if p.Quantity < 0 {
		dir = "short"
	}
	return fmt.Sprintf("%s: %s %s, avg %s, last %s, unrealised %s", p.Symbol, dir,
		Quantity(math.Abs(p.Quantity)), Price(p.AvgPrice), Price(p.LastPrice), Money(p.UnrealisedPnL()))
}

// FormatFill renders a fill as "bought 10 RELIANCE @ 100.00 (realised +0.00)".
func FormatFill(f Fill) string {
	return fmt.Sprintf("%s %s %s @ %s (realised %s)", pastTense(f.Side),
		Quantity(f.Quantity), f.Symbol, Price(f.Price), Money(f.RealisedPnL))
}

// FormatFlatten renders a flatten on one line, for /flatten and for the text
// the desk is told.
func FormatFlatten(r FlattenReport) string {
	if len(r.Closed) == 0 {
		return "Nothing to flatten: the desk had no open positions."
	}
	parts := make([]string, len(r.Closed))
	for i, f := range r.Closed {
		parts[i] = FormatFill(f)
	}
	noun := "positions"
	if len(r.Closed) == 1 {
		noun = "position"
	}
	return fmt.Sprintf("Flattened %d %s: %s. Realised P&L %s.",
		len(r.Closed), noun, strings.Join(parts, ", "), Money(r.RealisedPnL))
}

func pastTense(side string) string {
	switch side {
	case Buy:
		return "bought"
	case Sell:
		return "sold"
	}
	return side
}

// Money renders an amount signed, in paise: "+40.00", "-12.50", "+0.00".
func Money(x float64) string { return fmt.Sprintf("%+.2f", Paise(x)) }

// Price renders a price with at least 2 and at most 4 decimals, so that
// sub-rupee prices and fractional averages stay readable.
func Price(x float64) string {
	r := math.Round(x*1e4) / 1e4
	if r == 0 {
		r = 0 // no "-0.00"
	}
	s := strconv.FormatFloat(r, 'f', -1, 64)
	dot := strings.IndexByte(s, '.')
	switch {
	case dot < 0:
		return s + ".00"
	case len(s)-dot-1 < 2:
		return s + "0"
	}
	return s
}

// Quantity renders a quantity without float noise: "10", "0.3".
func Quantity(x float64) string {
	return strconv.FormatFloat(math.Round(x*1e8)/1e8, 'f', -1, 64)
}

// Paise rounds an amount of money to 2 decimals (half away from zero), never
// returning negative zero.
func Paise(x float64) float64 {
	r := math.Round(x*100) / 100
	if r == 0 {
		return 0
	}
	return r
}
