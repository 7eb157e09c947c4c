package broker_test

import (
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker"
)

// On the default paper broker (BROKER=paper, its own prices) a symbol may
// now carry an exchange, so one stock has up to eight spellings (RELIANCE,
// NSE:RELIANCE, BSE:RELIANCE, MCX:RELIANCE...), each its own position with
// its own per-symbol position limit, and each priced by its own random walk
// from another start: the same stock bought at ₹1,250 and sold at another
// price under another spelling. The paper broker, which trades on no
// exchange, must refuse the prefix (or treat it as the same instrument).
func TestPaperRefusesAnExchangeItDoesNotTradeOn(t *testing.T) {
	rdb, key := mustRedis(t)
	p := broker.NewPaper(rdb, key, func() time.Time { return t0 })
	for _, sym := range []string{"NSE:RELIANCE", "BSE:RELIANCE", "MCX:RELIANCE"} {
		o := deskbot.Order{Symbol: sym, Side: deskbot.Buy, Quantity: 1, Price: 1e6}
		if err := p.Check(o); err == nil {
			plain, _, _ := p.LastPrice(t.Context(), "RELIANCE")
			other, _, _ := p.LastPrice(t.Context(), sym)
			t.Errorf("the paper broker takes %s as another instrument than RELIANCE (priced %.2f, not %.2f)", sym, other.Value, plain.Value)
		}
	}
}
