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
