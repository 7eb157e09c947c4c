package words_test

import (
	"strings"
	"testing"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/words"
)

func TestNumbers(t *testing.T) {
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"money positive", words.Money(40), "+₹40.00"},
		{"money negative rounds half away from zero", words.Money(-12.375), "-₹12.38"},
		{"money float noise", words.Money(0.1 + 0.2), "+₹0.30"},
		{"money never negative zero", words.Money(-0.001), "+₹0.00"},
		{"money grouped the Indian way", words.Money(1234567.5), "+₹12,34,567.50"},
		{"money a crore", words.Money(-10000000), "-₹1,00,00,000.00"},
		{"rupees", words.Rupees(1225625), "₹12,25,625.00"},
		{"rupees negative", words.Rupees(-1250.5), "-₹1,250.50"},
		{"rupees under a thousand", words.Rupees(999.999), "₹1,000.00"},
		{"price whole", words.Price(2500), "2500.00"},
		{"price one decimal", words.Price(104.5), "104.50"},
		{"price fractional average", words.Price(100.0 / 3), "33.3333"},
		{"price below a rupee", words.Price(0.0525), "0.0525"},
		{"price grouped", words.GroupedPrice(1604.36), "1,604.36"},
		{"price grouped, lakhs", words.GroupedPrice(100000), "1,00,000.00"},
		{"price grouped keeps its decimals", words.GroupedPrice(24512.5), "24,512.50"},
		{"price grouped, four decimals", words.GroupedPrice(1604.3625), "1,604.3625"},
		{"quantity whole", words.Quantity(10), "10"},
		{"quantity float noise", words.Quantity(0.1 + 0.2), "0.3"},
		{"quantity grouped", words.GroupedQuantity(100000), "1,00,000"},
		// One message, one way: the book a fill tells reads as the order.
		{"a position", words.FormatPosition(deskbot.Position{Symbol: "INFY", Quantity: 10, AvgPrice: 1604.36, LastPrice: 1604.36}),
			"INFY: long 10, avg 1,604.36, last 1,604.36, unrealised +₹0.00"},
		{"a fill", words.FormatFill(deskbot.Fill{Order: deskbot.Order{Symbol: "INFY", Side: deskbot.Buy, Quantity: 10, Price: 1604.36}}),
			"bought 10 INFY @ 1,604.36 (realised +₹0.00)"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}

func TestFormatBook(t *testing.T) {
	tests := []struct {
		name string
		book deskbot.Book
		want string
	}{
		{"empty", deskbot.Book{}, "No open positions. Realised P&L to date +₹0.00."},
		{"flat with history", deskbot.Book{RealisedPnL: -45.5}, "No open positions. Realised P&L to date -₹45.50."},
		{"long and short", deskbot.Book{Positions: []deskbot.Position{
			pos("INFY", 6, 100, 110, 40), pos("SBIN", -5, 90, 92.25, -100)}, RealisedPnL: -60},
			"INFY: long 6, avg 100.00, last 110.00, unrealised +₹60.00\n" +
				"SBIN: short 5, avg 90.00, last 92.25, unrealised -₹11.25\n" +
				"Total: unrealised +₹48.75, realised -₹60.00, net -₹11.25"},
	}
	for _, tt := range tests {
		if got := words.FormatBook(tt.book); got != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, got, tt.want)
		}
	}
}

func TestFormatFlatten(t *testing.T) {
	tests := []struct {
		name string
		r    deskbot.FlattenReport
		want string
	}{
		{"nothing open", deskbot.FlattenReport{}, "Nothing to flatten: the desk had no open positions."},
		{"one position", deskbot.FlattenReport{Closed: []deskbot.Fill{{Order: sell("INFY", 6, 110), RealisedPnL: 60}}, RealisedPnL: 60},
			"Flattened 1 position: sold 6 INFY @ 110.00 (realised +₹60.00). Realised P&L +₹60.00."},
		{"long and short", deskbot.FlattenReport{Closed: []deskbot.Fill{
			{Order: sell("INFY", 6, 110), RealisedPnL: 60}, {Order: buy("SBIN", 5, 92.25), RealisedPnL: -11.25}}, RealisedPnL: 48.75},
			"Flattened 2 positions: sold 6 INFY @ 110.00 (realised +₹60.00), bought 5 SBIN @ 92.25 (realised -₹11.25). Realised P&L +₹48.75."},
	}
	for _, tt := range tests {
		if got := words.FormatFlatten(tt.r); got != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, got, tt.want)
		}
	}
}

func pos(sym string, q, avg, last, realised float64) deskbot.Position {
	return deskbot.Position{Symbol: sym, Quantity: q, AvgPrice: avg, LastPrice: last, RealisedPnL: realised}
}
func buy(sym string, q, px float64) deskbot.Order {
	return deskbot.Order{Symbol: sym, Side: deskbot.Buy, Quantity: q, Price: px}
}

func sell(sym string, q, px float64) deskbot.Order {
	return deskbot.Order{Symbol: sym, Side: deskbot.Sell, Quantity: q, Price: px}
}

func TestTradingWords(t *testing.T) {
	book := deskbot.Book{RealisedPnL: 40, Positions: []deskbot.Position{
		{Symbol: "RELIANCE", Quantity: 6, AvgPrice: 100, LastPrice: 110},
		{Symbol: "NIFTY24DECFUT", Quantity: -20, AvgPrice: 24500, LastPrice: 24512.5},
	}}
	sell := deskbot.Order{Symbol: "NIFTY24DECFUT", Side: deskbot.Sell, Quantity: 50, Price: 24512.5}
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"rupees lakhs", words.Rupees(1225625), "₹12,25,625.00"},
		{"rupees crores", words.Rupees(123456789.5), "₹12,34,56,789.50"},
		{"rupees thousands", words.Rupees(1250.5), "₹1,250.50"},
		{"rupees hundreds", words.Rupees(999), "₹999.00"},
		{"rupees negative", words.Rupees(-1250.5), "-₹1,250.50"},
		{"rupees rounds to the paisa", words.Rupees(0.005), "₹0.01"},
		{"signed profit", words.SignedRupees(40), "+₹40.00"},
		{"signed loss", words.SignedRupees(-100000), "-₹1,00,000.00"},
		{"signed never negative zero", words.SignedRupees(-0.001), "+₹0.00"},
		{"grouped price", words.GroupedPrice(24512.5), "24,512.50"},
		{"grouped price keeps 4 decimals", words.GroupedPrice(123456.0525), "1,23,456.0525"},
		{"grouped quantity", words.GroupedQuantity(100000), "1,00,000"},
		{"order", words.FormatOrder(sell), "SELL 50 NIFTY24DECFUT LIMIT @ 24,512.50"},
		{"holding long", words.Holding(6), "long 6"},
		{"holding short", words.Holding(-50), "short 50"},
		{"holding flat despite float noise", words.Holding(0.1 + 0.2 - 0.3), "flat"},
		{"summary without book", words.OrderSummary(sell, nil, 0), "SELL 50 NIFTY24DECFUT LIMIT @ 24,512.50, notional ₹12,25,625.00"},
		{"summary adds to a short", words.OrderSummary(sell, &book, 0), "SELL 50 NIFTY24DECFUT LIMIT @ 24,512.50, notional ₹12,25,625.00, position after: short 70"},
		{"summary from flat", words.OrderSummary(sell, &deskbot.Book{}, 0), "SELL 50 NIFTY24DECFUT LIMIT @ 24,512.50, notional ₹12,25,625.00, position after: short 50"},
		{"summary closes", words.OrderSummary(deskbot.Order{Symbol: "RELIANCE", Side: deskbot.Sell, Quantity: 6, Price: 110}, &book, 0), "SELL 6 RELIANCE LIMIT @ 110.00, notional ₹660.00, position after: flat"},
		{"book pnl", words.BookPnL(book), "realised +₹40.00, open -₹190.00"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, tt.got, tt.want)
		}
	}
	got := words.FlattenPlan(book)
	want := []string{
		"SELL 6 RELIANCE MARKET (closes long 6 at about ₹110.00, open +₹60.00)",
		"BUY 20 NIFTY24DECFUT MARKET (closes short 20 at about ₹24,512.50, open -₹250.00)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("FlattenPlan: got %q, want %q", got, want)
	}
	if got := words.FlattenPlan(deskbot.Book{}); len(got) != 0 {
		t.Errorf("FlattenPlan of an empty book: got %q, want nothing", got)
	}
}

// A flatten's words describe what it would do while it waits; once it is
// decided or lapsed they say nothing the book of now could contradict.
func TestFlattenWordsFollowTheRequest(t *testing.T) {
	book := &deskbot.Book{Positions: []deskbot.Position{{Symbol: "RELIANCE", Quantity: 6, AvgPrice: 100, LastPrice: 110}}}
	tests := []struct {
		state deskbot.RequestState
		book  *deskbot.Book
		want  string
	}{
		{deskbot.StateOpen, book, "Would close 1:\n• SELL 6 RELIANCE MARKET (closes long 6 at about ₹110.00, open +₹60.00)\nDesk P&L: realised +₹0.00, open +₹60.00"},
		{deskbot.StateOpen, nil, "Closes every open position of the desk (its book could not be read just now)."},
		{deskbot.StateRunning, nil, ""},
		{deskbot.StateRan, nil, ""},
		{deskbot.StateRan, book, ""},
		{deskbot.StateDenied, nil, ""},
		{deskbot.StateLapsed, nil, ""},
	}
	for _, tt := range tests {
		r := &deskbot.Request{State: tt.state, Content: deskbot.PermissionContent{ToolName: deskbot.ToolFlattenDesk}}
		if got := strings.Join(words.TradingWords(r, words.Live{Book: tt.book}), "\n"); got != tt.want {
			t.Errorf("%s with book %v: got %q, want %q", tt.state, tt.book != nil, got, tt.want)
		}
	}
}

// A signed amount laid out for a screen cannot break after its sign: the
// sign and the ₹ are joined, and nothing else of the text changes.
func TestOnOneLineKeepsASignWithItsRupee(t *testing.T) {
	tests := []struct{ in, want string }{
		{"realised " + words.SignedRupees(0), "realised +\u2060₹0.00"},
		{"P&L " + words.SignedRupees(-50100), "P&L -\u2060₹50,100.00"},
		{"limit ₹20,00,000.00", "limit ₹20,00,000.00"},
		{"BUY 10 INFY @ 1,650.00", "BUY 10 INFY @ 1,650.00"},
	}
	for _, tt := range tests {
		if got := words.OnOneLine(tt.in); got != tt.want {
			t.Errorf("OnOneLine(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
