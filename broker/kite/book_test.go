package kite

import (
	"context"
	"fmt"
	"github.com/deskbot/deskbot/deskbottest"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/broker/kitetest"
	"github.com/deskbot/deskbot/store/storetest"
)

type fixedMarket float64

func (m fixedMarket) LastPrice(context.Context, string) (deskbot.Price, bool, error) {
	return deskbot.Price{Value: float64(m), At: time.Now()}, true, nil
}

func (m fixedMarket) Instrument(_ context.Context, symbol string) (deskbot.Instrument, error) {
	return broker.PaperInstrument(symbol)
}

func (m fixedMarket) LastPrices(ctx context.Context, symbols []string) (map[string]float64, error) {
	return broker.EachPrice(ctx, m, symbols)
}

// Kite takes one quote call a second: a desk's book is priced in one call
// (Kite's /quote takes up to 500 instruments), not one a position, which
// would make a book of n positions take n seconds (/desks reads every
// desk's book within its 30 s handler, and a flatten would wait as long).
func TestBookOfManyPositionsIsOneQuoteCall(t *testing.T) {
	kt := mustFake(t)
	const n = 8
	for i := 0; i < n; i++ {
		kt.AddInstruments(kitetest.Instrument{Exchange: "NSE", Tradingsymbol: fmt.Sprintf("STOCK%d", i), Name: "S", Token: uint32(1000001 + 256*i), LastPrice: 100, TickSize: 0.05, LotSize: 1})
	}
	st := storetest.MustOpen(t)
	l, _ := mustLoginOn(t, kt, st, nil)
	d := NewDay(l.kite, l, nil, []string{"NSE"}, time.Now, nil)
	loginAs(t, l, kt, deskbot.Person{ID: 1, Name: "Asha"})

	setup := broker.NewPaperMarket(st, time.Now, fixedMarket(100)).Checking(func(deskbot.Order) error { return nil })
	for i := 0; i < n; i++ {
		if _, err := setup.PlaceOrder(t.Context(), "main", deskbottest.NewKey(), deskbot.Order{Symbol: fmt.Sprintf("NSE:STOCK%d", i), Side: deskbot.Buy, Quantity: 1, Price: 100}); err != nil {
			t.Fatal(err)
		}
	}
	p := broker.NewPaperMarket(st, time.Now, d)
	start := time.Now()
	b, err := p.Book(ctxFor(t, 30*time.Second), "main")
	took := time.Since(start)
	if err != nil || len(b.Positions) != n {
		t.Fatalf("book: %d positions, %v", len(b.Positions), err)
	}
	if took > 3*time.Second {
		t.Errorf("a book of %d positions took %s to read; want one quote call", n, took.Round(100*time.Millisecond))
	}
}
