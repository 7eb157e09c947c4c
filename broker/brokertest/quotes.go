// Package brokertest holds what tests of the broker's users share: a
// market at prices a test sets. It is imported only from _test files.
package brokertest

import (
	"context"
	"sync"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker"
)

// Quotes is a market at the prices its holder sets, each until set again:
// a test's market. A symbol never set
// has no price, and the paper broker does not trade it. The zero value is
// an empty market, safe for concurrent use.
type Quotes struct {
	Now deskbot.Now // when a price was had, unless SetAt says; nil: time.Now

	mu  sync.Mutex
	px  map[string]float64
	at  map[string]time.Time
	ins map[string]deskbot.Instrument

	reads int
}

// Reads is how many prices were read (LastPrice) so far.
func (q *Quotes) Reads() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.reads
}

var _ deskbot.Market = (*Quotes)(nil)

// Set makes price symbol's market price.
func (q *Quotes) Set(symbol string, price float64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.px == nil {
		q.px = map[string]float64{}
	}
	q.px[symbol] = price
}

// LastPrices is the prices last set for symbols.
func (q *Quotes) LastPrices(ctx context.Context, symbols []string) (map[string]float64, error) {
	return broker.EachPrice(ctx, q, symbols)
}

// LastPrice is the price last set for symbol, as of now (or of when
// SetAt said); a price of 0 or less is none, as a market reports it.
func (q *Quotes) LastPrice(_ context.Context, symbol string) (deskbot.Price, bool, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.reads++
	px, ok := q.px[symbol]
	at, dated := q.at[symbol]
	if !dated {
		at = time.Now()
		if q.Now != nil {
			at = q.Now()
		}
	}
	return deskbot.Price{Value: px, At: at}, ok && px > 0, nil
}

// SetAt makes price symbol's market price as of at (a stale price).
func (q *Quotes) SetAt(symbol string, price float64, at time.Time) {
	q.Set(symbol, price)
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.at == nil {
		q.at = map[string]time.Time{}
	}
	q.at[symbol] = at
}

// Instrument is what SetInstrument said of symbol, else a paper market's
// (broker.PaperInstrument: NSE shares).
func (q *Quotes) Instrument(_ context.Context, symbol string) (deskbot.Instrument, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if in, ok := q.ins[deskbot.OneSpelling(symbol)]; ok {
		return in, nil
	}
	return broker.PaperInstrument(symbol)
}

// SetInstrument makes in what the market says in.Symbol is.
func (q *Quotes) SetInstrument(in deskbot.Instrument) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.ins == nil {
		q.ins = map[string]deskbot.Instrument{}
	}
	q.ins[in.Symbol] = in
}
