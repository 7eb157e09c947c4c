package words

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/argtext"
)

// The words of a desk's price watches (deskbot.Watch): the listing in
// /desk and on the desks page, what watch_price and cancel_watch answer,
// and the trigger a desk is woken with.

// MaxWatchNote bounds a watch's note: it is the desk's own text, read back
// to it once when the watch fires and shown to people in listings, so a
// line stays a line.
const MaxWatchNote = 200

// WatchNote is a note as it is kept: on one line, clipped.
func WatchNote(note string) string {
	return argtext.Clip(strings.Join(strings.Fields(note), " "), MaxWatchNote, "…")
}

// WatchLine is one watch as people and its desk read it:
//
//	w3f2a1c9d04 · NSE:INFY above 1,600.00 · "breakout" · set 14:02
func WatchLine(w deskbot.Watch) string {
	s := w.ID + " · " + w.Symbol + " " + w.Direction + " " + GroupedPrice(w.Level)
	if w.Note != "" {
		s += " · \"" + w.Note + "\""
	}
	return argtext.Show(s + " · set " + Time(w.CreatedAt))
}

// WatchSet is watch_price's answer.
func WatchSet(w deskbot.Watch, n, max int) string {
	return fmt.Sprintf("Watching %s: you will be woken once, with your note, when %s trades %s %s (watch id %s; %d of your %d watches). cancel_watch with that id drops it.",
		w.Symbol, w.Symbol, onOrWord(w.Direction), GroupedPrice(w.Level), w.ID, n, max)
}

func onOrWord(dir string) string {
	if dir == deskbot.WatchAbove {
		return "at or above"
	}
	return "at or below"
}

// WatchCancelled is cancel_watch's answer.
func WatchCancelled(w deskbot.Watch) string {
	return "Cancelled watch " + w.ID + ": " + w.Symbol + " " + w.Direction + " " + GroupedPrice(w.Level) + "."
}

// WatchAlreadyCrossed is watch_price's refusal of a level the market has
// already crossed: a watch fires on a crossing still to come.
func WatchAlreadyCrossed(w deskbot.Watch, p deskbot.Price) string {
	return fmt.Sprintf("%s is already %s %s: its last price is %s (%s India time). A watch wakes you when the market crosses a level it has not reached yet; act on the price now, or watch another level.",
		w.Symbol, w.Direction, GroupedPrice(w.Level), GroupedPrice(p.Value), p.At.In(deskbot.IST).Format("15:04:05"))
}

// WatchTrigger is what a desk is woken with when one of its watches
// fires: the crossing, the price and its time, and the desk's own note.
func WatchTrigger(w deskbot.Watch, p deskbot.Price) deskbot.Trigger {
	text := fmt.Sprintf("Your watch %s fired: %s traded %s at %s (%s India time), crossing your level %s %s. The watch is gone now; set another with watch_price if you want one.",
		w.ID, w.Symbol, GroupedPrice(p.Value), GroupedPrice(p.Value), p.At.In(deskbot.IST).Format("15:04:05"), w.Direction, GroupedPrice(w.Level))
	if w.Note != "" {
		text += "\nYour note: " + w.Note
	}
	return deskbot.Trigger{Desk: w.Desk, Kind: deskbot.TriggerWatch, Text: text, From: "market", CreatedAt: p.At}
}

// Age is how long ago at was, as a person says it: "12 s ago", "3 min
// ago", "2 h ago".
func Age(now, at time.Time) string {
	d := max(now.Sub(at), 0)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s ago", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d/time.Minute))
	default:
		return fmt.Sprintf("%d h ago", int(d/time.Hour))
	}
}

// LastPriceLine is the market's last price beside a held order's own, as
// an approver reads it, with its age counted at now (when the message is
// drawn):
//
//	LTP 1,604.35 · 12 s ago; your limit is 2.8% above
//
// A price older than maxAge is shown as stale, never as current:
//
//	LTP 1,604.35 · stale: 3 min old, older than 60 s; your limit is 2.8% above it
//
// p is the price read when the order was sized (deskbot.SizedOrder.Market);
// "" when it has none.
func LastPriceLine(o deskbot.Order, p deskbot.Price, now time.Time, maxAge time.Duration) string {
	if !(p.Value > 0) || p.At.IsZero() {
		return "LTP not known: the market gave no last price for " + o.Symbol + " when the order was read"
	}
	s := "LTP " + GroupedPrice(p.Value) + " · "
	stale := maxAge > 0 && now.Sub(p.At) > maxAge
	if stale {
		s += "stale: " + strings.TrimSuffix(Age(now, p.At), " ago") + " old, older than " + maxAge.String()
	} else {
		s += Age(now, p.At)
	}
	var own float64
	var name string
	switch o.Kind() {
	case deskbot.OrderLimit, deskbot.OrderSL:
		own, name = o.Price, "limit"
	case deskbot.OrderSLM:
		own, name = o.TriggerPrice, "trigger"
	}
	if own > 0 {
		pct := (own - p.Value) / p.Value * 100
		s += fmt.Sprintf("; your %s is ", name)
		switch {
		case math.Abs(pct) < 0.05:
			s += "at it"
		case pct > 0:
			s += fmt.Sprintf("%.1f%% above", pct)
		default:
			s += fmt.Sprintf("%.1f%% below", -pct)
		}
		if stale {
			s += " that stale price"
		}
	}
	return s
}

// UnderlyingLine is an option's underlying's price beside it: "Underlying
// NSE:NIFTY 50 24,010.00 · 5 s ago", stale as LastPriceLine says.
func UnderlyingLine(in deskbot.Instrument, p deskbot.Price, now time.Time, maxAge time.Duration) string {
	if !(p.Value > 0) || p.At.IsZero() {
		return "Underlying " + in.Underlying + ": no price known"
	}
	if maxAge > 0 && now.Sub(p.At) > maxAge {
		return "Underlying " + in.Underlying + " " + GroupedPrice(p.Value) + " · stale: " + strings.TrimSuffix(Age(now, p.At), " ago") + " old"
	}
	return "Underlying " + in.Underlying + " " + GroupedPrice(p.Value) + " · " + Age(now, p.At)
}

// PositionLast is a shown position's last price with its age: "1,604.35 ·
// 12 s ago", "1,604.35 · stale, 3 min old" when older than maxAge (the same
// rule as LastPriceLine), or the book's own price marked as the broker's
// when the market has none (ok false).
func PositionLast(book float64, p deskbot.Price, ok bool, now time.Time, maxAge time.Duration) string {
	if !ok || !(p.Value > 0) || p.At.IsZero() {
		return GroupedPrice(book) + " · broker's"
	}
	if maxAge > 0 && now.Sub(p.At) > maxAge {
		return GroupedPrice(p.Value) + " · stale, " + strings.TrimSuffix(Age(now, p.At), " ago") + " old"
	}
	return GroupedPrice(p.Value) + " · " + Age(now, p.At)
}
