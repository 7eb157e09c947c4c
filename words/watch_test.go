package words

import (
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
)

// An approver reads the last price beside the order's own, with its age
// when the message is drawn; a price older than PRICE_MAX_AGE is never
// shown as current.
func TestLastPriceLine(t *testing.T) {
	now := time.Date(2026, 12, 4, 9, 0, 0, 0, deskbot.IST)
	limit := deskbot.Order{Symbol: "INFY", Side: deskbot.Buy, Quantity: 10, Price: 1649.27, Type: deskbot.OrderLimit}
	market := deskbot.Order{Symbol: "INFY", Side: deskbot.Buy, Quantity: 10, Type: deskbot.OrderMarket}
	slm := deskbot.Order{Symbol: "INFY", Side: deskbot.Sell, Quantity: 10, TriggerPrice: 1500, Type: deskbot.OrderSLM}
	p := deskbot.Price{Value: 1604.35, At: now.Add(-12 * time.Second)}
	for _, tc := range []struct {
		name string
		o    deskbot.Order
		p    deskbot.Price
		want string
	}{
		{"limit above", limit, p, "LTP 1,604.35 · 12 s ago; your limit is 2.8% above"},
		{"at market", market, p, "LTP 1,604.35 · 12 s ago"},
		{"trigger below", slm, p, "LTP 1,604.35 · 12 s ago; your trigger is 6.5% below"},
		{"stale", limit, deskbot.Price{Value: 1604.35, At: now.Add(-3 * time.Minute)}, "LTP 1,604.35 · stale: 3 min old, older than 1m0s; your limit is 2.8% above that stale price"},
		{"none", limit, deskbot.Price{}, "LTP not known: the market gave no last price for INFY when the order was read"},
	} {
		if got := LastPriceLine(tc.o, tc.p, now, time.Minute); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

// A held option order shows its underlying's price too, from the one
// reading of the order, and the LTP line only when the words are drawn
// with a time.
func TestTradingWordsShowLastPrice(t *testing.T) {
	now := time.Date(2026, 12, 4, 9, 0, 0, 0, deskbot.IST)
	args := []byte(`{"symbol":"NFO:NIFTY25DEC24000CE","side":"sell","quantity":75,"price":120}`)
	o, err := deskbot.ParseOrder(args)
	if err != nil {
		t.Fatal(err)
	}
	s := &deskbot.SizedOrder{Order: o, Price: 120, Market: deskbot.Price{Value: 118.5, At: now.Add(-5 * time.Second)}, Underlying: 24010,
		Instrument: deskbot.Instrument{Symbol: "NFO:NIFTY25DEC24000CE", Type: deskbot.InstrumentCE, ContractSize: 1, Underlying: "NSE:NIFTY 50"}}
	r := &deskbot.Request{State: deskbot.StateOpen, Content: deskbot.PermissionContent{ToolName: deskbot.ToolPlaceOrder, Arguments: args, Order: s}}
	got := strings.Join(TradingWords(r, Live{Now: now, MaxAge: time.Minute}), "\n")
	for _, want := range []string{"LTP 118.50 · 5 s ago; your limit is 1.3% above", "Underlying NSE:NIFTY 50 24,010.00 · 5 s ago"} {
		if !strings.Contains(got, want) {
			t.Errorf("words lack %q:\n%s", want, got)
		}
	}
	if got := strings.Join(TradingWords(r, Live{}), "\n"); strings.Contains(got, "LTP") {
		t.Errorf("drawn without a time, the words show an LTP:\n%s", got)
	}
}

// A position's last price reads with its age, stale past maxAge, and the
// book's own marked as the broker's when the market has none.
func TestPositionLast(t *testing.T) {
	now := time.Date(2026, 12, 4, 14, 2, 0, 0, deskbot.IST)
	for _, tc := range []struct {
		p    deskbot.Price
		ok   bool
		want string
	}{
		{deskbot.Price{Value: 1604.35, At: now.Add(-12 * time.Second)}, true, "1,604.35 · 12 s ago"},
		{deskbot.Price{Value: 1604.35, At: now.Add(-60 * time.Second)}, true, "1,604.35 · 1 min ago"},
		{deskbot.Price{Value: 1604.35, At: now.Add(-3 * time.Minute)}, true, "1,604.35 · stale, 3 min old"},
		{deskbot.Price{}, false, "1,500.00 · broker's"},
		{deskbot.Price{Value: 1604.35}, true, "1,500.00 · broker's"},
	} {
		if got := PositionLast(1500, tc.p, tc.ok, now, time.Minute); got != tc.want {
			t.Errorf("PositionLast(%v, %v) = %q, want %q", tc.p, tc.ok, got, tc.want)
		}
	}
}
