// Package brokertest holds what tests of the broker's users share: a
// market at prices a test sets. It is imported only from _test files.
package brokertest

import (
	"context"
	"sync"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker"
)

// Quotes is a market at the prices its holder sets, each until set again:
// a test's market. A symbol never set
// has no price, and the paper broker does not trade it. The zero value is
// an empty market, safe for concurrent use.
type Quotes struct {
	mu sync.Mutex
	px map[string]float64
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

// LastPrice is the price last set for symbol.
func (q *Quotes) LastPrice(_ context.Context, symbol string) (float64, bool, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	px, ok := q.px[symbol]
	return px, ok, nil
}
