// Package hub owns the one market hub of a process: every desk and every
// approver reads the market through it, so one broker account's request
// limits are shared fairly and never exceeded by us.
//
// What it does:
//   - Quotes and last prices (deskbot.MarketData's Quotes, deskbot.Market's
//     LastPrice and LastPrices) are served from what the hub holds while it
//     is fresh; what is missing is queued and fetched by one scheduler
//     goroutine that makes one request of the quote family at a time, each
//     at least QuoteEvery (Kite: 1 a second) after the previous one's
//     answer (so network delays cannot bunch two at Kite), of up to
//     MaxQuote instruments (500) or,
//     when only last prices are wanted, MaxLTP (1,000). Every desk asking
//     within that second rides on the same request.
//   - Fair share: each desk has its own queue (a lane); the approvers' lane
//     (the hub's own methods) is served first, then the followed symbols'
//     poll when it is due, then the desks' lanes one symbol each in turn
//     (max-min fair), so a desk asking thousands of symbols takes its share
//     of a request and no more.
//   - Live prices (deskbot.Feed): who follows what is named; the union is
//     streamed from the broker's PriceStream (at most StreamCap symbols:
//     Kite's 3 connections × 3,000) and, while the stream is down or for
//     what it cannot hold, polled through the same quote scheduler.
//   - Candles: HistEvery apart, paced the same way (Kite: 3 a second), desks' lanes in
//     turn; a span that ended before today's India day is kept as a file
//     under DATA_DIR/market/candles forever (history does not change), a
//     span reaching today in memory for CandleFresh; identical asks in
//     flight share one request.
//
// Concurrency: every method is safe for concurrent use. State is under
// one mutex, never held across a request to the broker. The quote and
// candle schedulers are the only goroutines that ask the broker for
// quotes and candles; Run starts them and the stream, and stops them with
// its context. Ticks' callbacks run on the goroutine that delivers the
// price (the stream's or the scheduler's) and must not block.
package hub
