package kite

import (
	"context"
	"time"

	kiteconnect "github.com/zerodha/gokiteconnect/v4"

	"github.com/deskbot/deskbot"
)

// historicalPerSecond is Kite's pace for historical candles.
const historicalPerSecond = 3

// Quote is Kite's full quote (depth, OHLC, volume, open interest) of
// instruments keyed "EXCHANGE:TRADINGSYMBOL", at most 500 a request; an
// instrument Kite does not know is absent. Counted with the quotes: one
// a second.
func (c *Client) Quote(ctx context.Context, keys ...string) (kiteconnect.Quote, error) {
	if len(keys) == 0 {
		return kiteconnect.Quote{}, nil
	}
	var q kiteconnect.Quote
	if err := c.call(ctx, c.quoteLim, "quote read", func(k *kiteconnect.Client) (err error) {
		q, err = k.GetQuote(keys...)
		return err
	}); err != nil {
		return nil, err
	}
	return q, nil
}

// Historical is Kite's candles of the instrument token of one interval
// from from to to (sent as India time, as Kite reads them), with open
// interest. Three a second.
func (c *Client) Historical(ctx context.Context, token uint32, interval string, from, to time.Time) ([]kiteconnect.HistoricalData, error) {
	var out []kiteconnect.HistoricalData
	if err := c.call(ctx, c.histLim, "candles read", func(k *kiteconnect.Client) (err error) {
		out, err = k.GetHistoricalData(int(token), interval, from.In(deskbot.IST), to.In(deskbot.IST), false, true)
		return err
	}); err != nil {
		return nil, err
	}
	return out, nil
}

// Holdings is the account's delivery holdings at Kite.
func (c *Client) Holdings(ctx context.Context) (kiteconnect.Holdings, error) {
	var out kiteconnect.Holdings
	if err := c.call(ctx, c.callLim, "holdings read", func(k *kiteconnect.Client) (err error) {
		out, err = k.GetHoldings()
		return err
	}); err != nil {
		return nil, err
	}
	return out, nil
}
