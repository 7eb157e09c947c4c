package broker_test

import (
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/broker/brokertest"
)

// On the default paper broker (BROKER=paper, its own prices) a symbol may
// now carry an exchange, so one stock has up to eight spellings (RELIANCE,
// NSE:RELIANCE, BSE:RELIANCE, MCX:RELIANCE...), each its own position with
// its own per-symbol position limit, and each priced by its own random walk
// from another start: the same stock bought at ₹1,250 and sold at another
// price under another spelling. The paper broker, which trades on no
// exchange, must refuse the prefix (or treat it as the same instrument).
func TestPaperRefusesAnExchangeItDoesNotTradeOn(t *testing.T) {
	st := mustStore(t)
	p := broker.NewPaper(st, func() time.Time { return t0 })
	for _, sym := range []string{"NSE:RELIANCE", "BSE:RELIANCE", "MCX:RELIANCE"} {
		o := deskbot.Order{Symbol: sym, Side: deskbot.Buy, Quantity: 1, Price: 1e6}
		if err := p.Check(o); err == nil {
			plain, _, _ := p.LastPrice(t.Context(), "RELIANCE")
			other, _, _ := p.LastPrice(t.Context(), sym)
			t.Errorf("the paper broker takes %s as another instrument than RELIANCE (priced %.2f, not %.2f)", sym, other.Value, plain.Value)
		}
	}
}

// A USDINR contract is $1,000: the book's P&L and the journal's count the
// whole contract, so the risk rules that read them (max_daily_loss,
// max_drawdown) see a loss of ₹5,000 where the price moved 50 paise on
// ten contracts, not ₹5.
func TestBookCountsPnLByContractSize(t *testing.T) {
	st := mustStore(t)
	q := &brokertest.Quotes{}
	q.SetInstrument(deskbot.Instrument{Symbol: "CDS:USDINR26DECFUT", Type: deskbot.InstrumentFUT, ContractSize: 1000, LotSize: 1, TickSize: 0.0025})
	q.Set("CDS:USDINR26DECFUT", 83.5)
	p := broker.NewPaperMarket(st, func() time.Time { return t0 }, q).Checking(deskbot.CheckOrder)
	if _, err := p.PlaceOrder(t.Context(), "main", "k1", deskbot.Order{Symbol: "CDS:USDINR26DECFUT", Side: deskbot.Buy, Quantity: 10, Type: deskbot.OrderMarket, Product: deskbot.ProductNRML}); err != nil {
		t.Fatal(err)
	}
	q.Set("CDS:USDINR26DECFUT", 83)
	b, err := p.Book(t.Context(), "main")
	if err != nil || len(b.Positions) != 1 {
		t.Fatalf("book %+v, %v", b, err)
	}
	if got, want := b.Positions[0].UnrealisedPnL(), -5000.0; got != want {
		t.Errorf("open P&L = %v, want %v", got, want)
	}
	if _, err := p.PlaceOrder(t.Context(), "main", "k2", deskbot.Order{Symbol: "CDS:USDINR26DECFUT", Side: deskbot.Sell, Quantity: 10, Type: deskbot.OrderMarket, Product: deskbot.ProductNRML}); err != nil {
		t.Fatal(err)
	}
	trades, err := p.Trades(t.Context(), "main", 10)
	if err != nil || len(trades) != 2 {
		t.Fatalf("trades %+v, %v", trades, err)
	}
	if got, want := trades[1].RealisedPnL, -5000.0; got != want {
		t.Errorf("realised by the closing fill = %v, want %v", got, want)
	}
	if b, _ := p.Book(t.Context(), "main"); b.RealisedPnL != -5000 {
		t.Errorf("book's realised P&L = %v, want -5000", b.RealisedPnL)
	}
}
