package kite

import (
	"context"

	"github.com/deskbot/deskbot"
)

var errNoData = deskbot.Errorf(deskbot.EUNAVAILABLE, "Kite's market data is not read by this build yet")

// Quotes is Kite's quote of each symbol.
func (d *Day) Quotes(ctx context.Context, symbols []string) (map[string]deskbot.Quote, error) {
	return nil, errNoData
}

// Candles is Kite's historical candles for q.
func (d *Day) Candles(ctx context.Context, q deskbot.CandleQuery) ([]deskbot.Candle, error) {
	return nil, errNoData
}

// SearchInstruments searches the day's instrument list.
func (d *Day) SearchInstruments(ctx context.Context, q deskbot.InstrumentQuery) ([]deskbot.Instrument, error) {
	return nil, errNoData
}

// OptionChain is underlying's options of expiry at Kite.
func (d *Day) OptionChain(ctx context.Context, underlying, expiry string, strikes int) (deskbot.OptionChain, error) {
	return deskbot.OptionChain{}, errNoData
}

// StreamPrices is Kite's ticker in quote mode.
func (d *Day) StreamPrices(ctx context.Context, symbols <-chan []string, fn func(deskbot.Tick)) error {
	return errNoData
}

// Quotes is Kite's quotes (Day.Quotes).
func (b *Broker) Quotes(ctx context.Context, symbols []string) (map[string]deskbot.Quote, error) {
	return b.day.Quotes(ctx, symbols)
}

// Candles is Kite's candles (Day.Candles).
func (b *Broker) Candles(ctx context.Context, q deskbot.CandleQuery) ([]deskbot.Candle, error) {
	return b.day.Candles(ctx, q)
}

// SearchInstruments searches the day's list (Day.SearchInstruments).
func (b *Broker) SearchInstruments(ctx context.Context, q deskbot.InstrumentQuery) ([]deskbot.Instrument, error) {
	return b.day.SearchInstruments(ctx, q)
}

// OptionChain is Kite's chain (Day.OptionChain).
func (b *Broker) OptionChain(ctx context.Context, underlying, expiry string, strikes int) (deskbot.OptionChain, error) {
	return b.day.OptionChain(ctx, underlying, expiry, strikes)
}

// StreamPrices is Kite's ticker (Day.StreamPrices).
func (b *Broker) StreamPrices(ctx context.Context, symbols <-chan []string, fn func(deskbot.Tick)) error {
	return b.day.StreamPrices(ctx, symbols, fn)
}

// Funds is the account's margins at Kite.
func (b *Broker) Funds(ctx context.Context) ([]deskbot.SegmentFunds, error) {
	return nil, errNoData
}

// Holdings is the account's holdings at Kite.
func (b *Broker) Holdings(ctx context.Context) ([]deskbot.Holding, error) {
	return nil, errNoData
}
