package words_test

import (
	"regexp"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/words"
)

func TestDeskViewWords(t *testing.T) {
	book := deskbot.Book{RealisedPnL: 1234.5, Positions: []deskbot.Position{
		{Symbol: "NIFTY24DECFUT", Quantity: -50, AvgPrice: 24500, LastPrice: 24512.5},
	}}
	at := time.Date(2026, 11, 30, 18, 40, 0, 0, time.UTC) // 00:10 IST on 1 December
	tests := []struct{ name, got, want string }{
		{"today", words.TodayPnL(1234.5, true, false, book), "Today: realised +₹1,234.50, open -₹625.00"},
		{"today, a loss", words.TodayPnL(-100000, true, false, deskbot.Book{}), "Today: realised -₹1,00,000.00, open +₹0.00"},
		{"today without a journal", words.TodayPnL(0, false, false, book), "Today: realised not known (no trade journal to read), open -₹625.00; realised to date +₹1,234.50"},
		{"today from a full journal", words.TodayPnL(60, true, true, deskbot.Book{}), "Today: realised +₹60.00 (from the fills the journal still keeps; earlier ones today are gone), open +₹0.00"},
		{"position short", words.PositionLine(book.Positions[0], words.GroupedPrice(book.Positions[0].LastPrice)), "NIFTY24DECFUT: short 50, avg 24,500.00, last 24,512.50, open -₹625.00"},
		{"position flat", words.PositionLine(deskbot.Position{Symbol: "INFY", LastPrice: 1500}, words.GroupedPrice(1500)), "INFY: flat, last 1,500.00"},
		{"trade in India time", words.TradeLine(deskbot.Fill{Order: deskbot.Order{Symbol: "RELIANCE", Side: deskbot.Sell, Quantity: 3, Price: 120}, RealisedPnL: 60}, at), "00:10 SELL 3 RELIANCE @ 120.00, realised +₹60.00"},
		{"India's day, not UTC's", words.Day(at), "2026-12-01"},
		{"outage key", words.ModelOutageNote("alpha"), "agent:unreachable:alpha"},
		{"outage since", words.ModelOutage("2026-11-30T18:25:00Z"), "⚠️ None of its models answers since 23:55 IST: its messages wait in its queue until one does."},
		{"outage of unknown start", words.ModelOutage("garbled"), "⚠️ None of its models answers: its messages wait in its queue until one does."},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}

// The chat finds a trigger's time with the pattern the agent's words are
// written to: the two cannot drift apart.
func TestTriggerClockMatchesItsPattern(t *testing.T) {
	at := time.Date(2026, 12, 4, 8, 35, 0, 0, time.UTC) // 14:05 India time
	m := regexp.MustCompile(words.TriggerClockPattern).FindStringSubmatch(words.TriggerClock(at) + "Message from Asha")
	if m == nil {
		t.Fatalf("pattern %q does not match %q", words.TriggerClockPattern, words.TriggerClock(at))
	}
	if got, want := m[1], "14:05"; got != want {
		t.Errorf("time found = %q, want %q", got, want)
	}
}
