package words_test

import (
	"testing"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/words"
)

// A modification reads as the order as it stands with each change shown
// as it is → as it becomes.
func TestFormatChange(t *testing.T) {
	limit := deskbot.Order{Symbol: "INFY", Side: deskbot.Buy, Quantity: 10, Price: 1500, Type: deskbot.OrderLimit}
	sl := deskbot.Order{Symbol: "NFO:NIFTY26DECFUT", Side: deskbot.Sell, Quantity: 50, Price: 24000, TriggerPrice: 24010, Type: deskbot.OrderSL, Product: deskbot.ProductNRML}
	with := func(o deskbot.Order, f func(*deskbot.Order)) deskbot.Order { f(&o); return o }
	for _, tc := range []struct {
		name     string
		from, to deskbot.Order
		want     string
	}{
		{"price", limit, with(limit, func(o *deskbot.Order) { o.Price = 1490 }), "BUY 10 INFY LIMIT 1,500.00 → 1,490.00"},
		{"quantity", limit, with(limit, func(o *deskbot.Order) { o.Quantity = 1000 }), "BUY 10 → 1,000 INFY LIMIT 1,500.00"},
		{"to market", limit, with(limit, func(o *deskbot.Order) { o.Type, o.Price = deskbot.OrderMarket, 0 }), "BUY 10 INFY LIMIT 1,500.00 → MARKET"},
		{"trigger", sl, with(sl, func(o *deskbot.Order) { o.TriggerPrice = 24020 }), "SELL 50 NFO:NIFTY26DECFUT SL 24,000.00 trigger 24,010.00 → 24,020.00 · NRML"},
		{"to SL-M", sl, with(sl, func(o *deskbot.Order) { o.Type, o.Price = deskbot.OrderSLM, 0 }), "SELL 50 NFO:NIFTY26DECFUT SL 24,000.00 trigger 24,010.00 → SL-M trigger 24,010.00 · NRML"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := words.FormatChange(tc.from, tc.to); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
