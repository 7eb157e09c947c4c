package words_test

import (
	"slices"
	"testing"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/words"
)

// An approver reads a GTT in trading words: each leg with its trigger's
// distance from the last price.
func TestGTTWords(t *testing.T) {
	g := deskbot.GTT{Symbol: "INFY", Side: deskbot.Sell, Quantity: 10, Product: "CNC",
		Stop: deskbot.GTTLeg{Trigger: 1450, Price: 1445}, Target: &deskbot.GTTLeg{Trigger: 1600, Price: 1595}}
	got := words.GTTWords(g, 1498)
	want := []string{
		"GTT stop-loss SELL 10 INFY trigger 1,450.00 (−3.2% from 1,498.00) limit 1,445.00",
		"GTT target SELL 10 INFY trigger 1,600.00 (+6.8% from 1,498.00) limit 1,595.00 (one cancels the other)",
		"Product CNC; kept at the broker until it fires, is deleted or expires",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
	if got, want := words.GTTLegWords(g, g.Stop, false, 0), "stop-loss SELL 10 INFY trigger 1,450.00 limit 1,445.00"; got != want {
		t.Errorf("without a last price: got %q, want %q", got, want)
	}
}

// A held place_gtt reads in trading words from its arguments, the desk's
// product filling in, with the position it may close; arguments the words
// could misstate get none.
func TestTradingWordsOfAGTT(t *testing.T) {
	r := &deskbot.Request{State: deskbot.StateOpen, Content: deskbot.PermissionContent{ToolName: deskbot.ToolPlaceGTT,
		Arguments: []byte(`{"symbol":"NSE:INFY","side":"sell","quantity":10,"stop_trigger":1450,"stop_price":1445}`)}}
	book := &deskbot.Book{Positions: []deskbot.Position{{Symbol: "INFY", Quantity: 10, AvgPrice: 1490, LastPrice: 1498}}}
	got := words.TradingWords(r, words.Live{Book: book, Product: "CNC", LastPrice: 1498})
	want := []string{
		"GTT stop-loss SELL 10 INFY trigger 1,450.00 (−3.2% from 1,498.00) limit 1,445.00",
		"Product CNC; kept at the broker until it fires, is deleted or expires",
		"Position now: long 10 (a GTT may only close it)",
		"Desk P&L: " + words.BookPnL(*book),
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
	r.Content.Arguments = []byte(`{"symbol":"INFY","side":"sell","quantity":10,"stop_trigger":1450.12345,"stop_price":1445}`)
	if got := words.TradingWords(r, words.Live{Book: book}); got != nil {
		t.Errorf("a trigger the words would round: got %q, want no words", got)
	}
}
