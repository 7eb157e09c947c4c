package words

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/deskbot/deskbot"
)

// ShownState is how a desk's state reads to people, in the chat's /desks
// and on the desks page alike: a paused desk reads "paused", with the turn
// still in flight after a pause named beside it.
func ShownState(st deskbot.DeskStatus) string {
	state := string(st.State)
	if state == "" {
		state = string(deskbot.DeskIdle)
	}
	if st.Paused {
		state = string(deskbot.DeskPaused)
		if st.Halt != nil {
			state = "halted by " + st.Halt.Rule
		}
		if st.State != "" && st.State != deskbot.DeskIdle && st.State != deskbot.DeskPaused {
			state += ", " + string(st.State) // a turn in flight finishes after a pause
		}
	}
	return state
}

// Day is the trading day t falls on, India's date ("2026-11-30"): "today"
// in the chat is always India's today.
func Day(t time.Time) string { return deskbot.OrderDay(t) }

// TokensToday is what the desk's models spent in India's day of now, as
// its turns counted it: "12,345".
func TokensToday(st deskbot.DeskStatus, now time.Time) string {
	n := int64(0)
	if st.TokensDay == Day(now) {
		n = st.Tokens
	}
	return GroupedQuantity(float64(n))
}

// OpenPnL is what a book's open positions would realise at their last
// prices.
func OpenPnL(b deskbot.Book) float64 {
	var open float64
	for _, p := range b.Positions {
		open += p.UnrealisedPnL()
	}
	return open
}

// TodayPnL renders a desk's P&L for the day on one line, in rupees:
//
//	Today: realised +₹1,234.50, open -₹190.00
//
// realised is what today's fills realised. Without a journal to read them
// from (known false) it says so and gives what the book has, the P&L
// realised to date; partial says the journal may no longer hold all of
// today's fills.
func TodayPnL(realised float64, known, partial bool, b deskbot.Book) string {
	open := "open " + SignedRupees(OpenPnL(b))
	switch {
	case !known:
		return "Today: realised not known (no trade journal to read), " + open + "; realised to date " + SignedRupees(b.RealisedPnL)
	case partial:
		return "Today: realised " + SignedRupees(realised) + " (from the fills the journal still keeps; earlier ones today are gone), " + open
	}
	return "Today: realised " + SignedRupees(realised) + ", " + open
}

// PositionLine renders an open position for people, its open P&L in
// rupees, with its last price as given (the market's with its age:
// PositionLast): "RELIANCE: long 6, avg 100.00, last 110.00, open +₹60.00".
func PositionLine(p deskbot.Position, last string) string {
	if math.Round(p.Quantity*1e8) == 0 {
		return fmt.Sprintf("%s: flat, last %s", p.Symbol, last)
	}
	return fmt.Sprintf("%s: %s, avg %s, last %s, open %s", p.Symbol, Holding(p.Quantity),
		GroupedPrice(p.AvgPrice), last, SignedRupees(p.UnrealisedPnL()))
}

// TradeLine renders a fill of the desk's journal with its India time:
// "14:01 BUY 10 RELIANCE @ 100.00, realised +₹0.00". The price is the
// fill's, not a limit, so the words are a fill's, not FormatOrder's.
func TradeLine(f deskbot.Fill, at time.Time) string {
	return Time(at) + " " + strings.ToUpper(f.Side) + " " + GroupedQuantity(f.Quantity) + " " + f.Symbol + " @ " + GroupedPrice(f.Price) + ", realised " + SignedRupees(f.RealisedPnL)
}

// ModelOutageNote is the note under which a desk's agent records, while no
// model of its chain answers, when that outage began (RFC 3339). The agent
// writes and clears it; the chat reads it.
func ModelOutageNote(desk string) string { return "agent:unreachable:" + desk }

// ModelOutage says that a desk reaches none of its models, since the time
// its note records; a note that does not read as a time still says it.
func ModelOutage(note string) string {
	since := ""
	if t, err := time.Parse(time.RFC3339, strings.TrimSpace(note)); err == nil {
		since = " since " + Time(t) + " IST"
	}
	return "⚠️ None of its models answers" + since + ": its messages wait in its queue until one does."
}

// The wording of a desk's history, which the agent writes for its model
// and the chat reads a desk's last turn from: a trigger opens with its
// India time (TriggerClock), and the note of a turn that called tools with
// ToolsNote, the calls joined by "; ", then ")\n" and the turn's words.
const ToolsNote = "(Tools I used: "

// NoReplyNote and CappedNote close the note of a turn that ended without
// words: for the model; the chat says them in its own (NoReplyWords,
// CappedWords).
const (
	NoReplyNote = "(No reply.)"
	CappedNote  = "(The turn was cut off at the step cap.)"
)

// NoReplyWords and CappedWords are a desk's last words in /desk when its
// turn ended without any.
const (
	NoReplyWords = "none (it ended its turn without a word)."
	CappedWords  = "none: its turn was cut off at its cap of model steps."
)

// TriggerClock opens a trigger in a desk's history: "[14:05 India time] ".
func TriggerClock(at time.Time) string { return "[" + Time(at) + " India time] " }

// TriggerClockPattern matches TriggerClock's words, the time as its group.
const TriggerClockPattern = `^\[(\d{2}:\d{2}) India time\] `
