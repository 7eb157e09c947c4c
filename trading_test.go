package deskbot_test

import (
	"strings"
	"testing"

	"github.com/deskbot/deskbot"
)

func TestNumbers(t *testing.T) {
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"money positive", deskbot.Money(40), "+40.00"},
		{"money negative rounds half away from zero", deskbot.Money(-12.375), "-12.38"},
		{"money float noise", deskbot.Money(0.1 + 0.2), "+0.30"},
		{"money never negative zero", deskbot.Money(-0.001), "+0.00"},
		{"price whole", deskbot.Price(2500), "2500.00"},
		{"price one decimal", deskbot.Price(104.5), "104.50"},
		{"price fractional average", deskbot.Price(100.0 / 3), "33.3333"},
		{"price below a rupee", deskbot.Price(0.0525), "0.0525"},
		{"quantity whole", deskbot.Quantity(10), "10"},
		{"quantity float noise", deskbot.Quantity(0.1 + 0.2), "0.3"},
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
		{"empty", deskbot.Book{}, "No open positions. Realised P&L to date +0.00."},
		{"flat with history", deskbot.Book{RealisedPnL: -45.5}, "No open positions. Realised P&L to date -45.50."},
		{"long and short", deskbot.Book{Positions: []deskbot.Position{
			pos("INFY", 6, 100, 110, 40), pos("SBIN", -5, 90, 92.25, -100)}, RealisedPnL: -60},
			"INFY: long 6, avg 100.00, last 110.00, unrealised +60.00\n" +
				"SBIN: short 5, avg 90.00, last 92.25, unrealised -11.25\n" +
				"Total: unrealised +48.75, realised -60.00, net -11.25"},
	}
	for _, tt := range tests {
		if got := deskbot.FormatBook(tt.book); got != tt.want {
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
			"Flattened 1 position: sold 6 INFY @ 110.00 (realised +60.00). Realised P&L +60.00."},
		{"long and short", deskbot.FlattenReport{Closed: []deskbot.Fill{
			{Order: sell("INFY", 6, 110), RealisedPnL: 60}, {Order: buy("SBIN", 5, 92.25), RealisedPnL: -11.25}}, RealisedPnL: 48.75},
			"Flattened 2 positions: sold 6 INFY @ 110.00 (realised +60.00), bought 5 SBIN @ 92.25 (realised -11.25). Realised P&L +48.75."},
	}
	for _, tt := range tests {
		if got := deskbot.FormatFlatten(tt.r); got != tt.want {
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
		{"rupees lakhs", deskbot.Rupees(1225625), "₹12,25,625.00"},
		{"rupees crores", deskbot.Rupees(123456789.5), "₹12,34,56,789.50"},
		{"rupees thousands", deskbot.Rupees(1250.5), "₹1,250.50"},
		{"rupees hundreds", deskbot.Rupees(999), "₹999.00"},
		{"rupees negative", deskbot.Rupees(-1250.5), "-₹1,250.50"},
		{"rupees rounds to the paisa", deskbot.Rupees(0.005), "₹0.01"},
		{"signed profit", deskbot.SignedRupees(40), "+₹40.00"},
		{"signed loss", deskbot.SignedRupees(-100000), "-₹1,00,000.00"},
		{"signed never negative zero", deskbot.SignedRupees(-0.001), "+₹0.00"},
		{"grouped price", deskbot.GroupedPrice(24512.5), "24,512.50"},
		{"grouped price keeps 4 decimals", deskbot.GroupedPrice(123456.0525), "1,23,456.0525"},
		{"grouped quantity", deskbot.GroupedQuantity(100000), "1,00,000"},
		{"order", deskbot.FormatOrder(sell), "SELL 50 NIFTY24DECFUT @ 24,512.50"},
		{"holding long", deskbot.Holding(6), "long 6"},
		{"holding short", deskbot.Holding(-50), "short 50"},
		{"holding flat despite float noise", deskbot.Holding(0.1 + 0.2 - 0.3), "flat"},
		{"summary without book", deskbot.OrderSummary(sell, nil), "SELL 50 NIFTY24DECFUT @ 24,512.50, notional ₹12,25,625.00"},
		{"summary adds to a short", deskbot.OrderSummary(sell, &book), "SELL 50 NIFTY24DECFUT @ 24,512.50, notional ₹12,25,625.00, position after: short 70"},
		{"summary from flat", deskbot.OrderSummary(sell, &deskbot.Book{}), "SELL 50 NIFTY24DECFUT @ 24,512.50, notional ₹12,25,625.00, position after: short 50"},
		{"summary closes", deskbot.OrderSummary(deskbot.Order{Symbol: "RELIANCE", Side: deskbot.Sell, Quantity: 6, Price: 110}, &book), "SELL 6 RELIANCE @ 110.00, notional ₹660.00, position after: flat"},
		{"book pnl", deskbot.BookPnL(book), "realised +₹40.00, open -₹190.00"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, tt.got, tt.want)
		}
	}
	got := deskbot.FlattenPlan(book)
	want := []string{
		"SELL 6 RELIANCE @ 110.00 (closes long 6, open +₹60.00)",
		"BUY 20 NIFTY24DECFUT @ 24,512.50 (closes short 20, open -₹250.00)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("FlattenPlan: got %q, want %q", got, want)
	}
	if got := deskbot.FlattenPlan(deskbot.Book{}); len(got) != 0 {
		t.Errorf("FlattenPlan of an empty book: got %q, want nothing", got)
	}
}
