package deskbot

import (
	"context"
	"strconv"
	"time"
)

// What a desk and an approver see of the market, through the broker: the
// broker's access token never reaches a sandbox, so a desk cannot fetch
// the market's data itself. One account serves every desk, so they share
// one view of it (a hub per process, MarketData in front of the broker's),
// and the broker's request limits are never exceeded by us.

// Depth is one level of an order book's best five: a price, the quantity
// resting there and how many orders make it up.
type Depth struct {
	Price    float64 `json:"price"`
	Quantity int64   `json:"quantity"`
	Orders   int     `json:"orders"`
}

// Quote is what the market says of one instrument now. Last carries when
// the market had it; a price of 0 or less is no price (Price.Usable).
type Quote struct {
	Symbol string `json:"symbol"` // its one spelling (SymbolOf)
	Last   Price  `json:"last"`
	// The day's open, high and low, and the previous session's close.
	Open  float64 `json:"open"`
	High  float64 `json:"high"`
	Low   float64 `json:"low"`
	Close float64 `json:"close"`
	// Change is the last price's change from Close, in rupees; ChangePct
	// the same in percent of Close (0 when Close is 0).
	Change    float64 `json:"change"`
	ChangePct float64 `json:"change_pct"`
	Volume    int64   `json:"volume"`
	// OpenInterest is a future's or option's open contracts (units, as
	// Kite counts them); 0 for shares.
	OpenInterest int64   `json:"open_interest,omitempty"`
	Bids         []Depth `json:"bids,omitempty"` // best first, at most five
	Asks         []Depth `json:"asks,omitempty"` // best first, at most five
}

// Candle intervals, as Kite's historical API names them.
const (
	IntervalMinute   = "minute"
	Interval3Minute  = "3minute"
	Interval5Minute  = "5minute"
	Interval10Minute = "10minute"
	Interval15Minute = "15minute"
	Interval30Minute = "30minute"
	Interval60Minute = "60minute"
	IntervalDay      = "day"
)

// Candle is one interval's open, high, low, close and volume, At being
// the interval's start (India time).
type Candle struct {
	At           time.Time `json:"at"`
	Open         float64   `json:"open"`
	High         float64   `json:"high"`
	Low          float64   `json:"low"`
	Close        float64   `json:"close"`
	Volume       int64     `json:"volume"`
	OpenInterest int64     `json:"open_interest,omitempty"`
}

// CandleQuery asks for symbol's candles of one interval from From to To
// (both inclusive, India time).
type CandleQuery struct {
	Symbol   string
	Interval string // one of the Interval* names
	From, To time.Time
}

// InstrumentQuery searches the instruments a market lists. Text matches a
// symbol or a name (case-insensitive); Exchange ("NSE", "NFO", ...) and
// Type (one of the Instrument* types) narrow it when set; Underlying
// lists one underlying's derivatives ("NIFTY", "RELIANCE"). At most Limit
// are returned (a market caps it too).
type InstrumentQuery struct {
	Text       string
	Exchange   string
	Type       string
	Underlying string
	Limit      int
}

// ChainSide is one option of a chain's strike.
type ChainSide struct {
	Symbol       string `json:"symbol"`
	Last         Price  `json:"last"`
	OpenInterest int64  `json:"open_interest"`
	Volume       int64  `json:"volume"`
}

// ChainStrike is one strike of an option chain with its call and put
// (either may be absent where the market lists only one).
type ChainStrike struct {
	Strike float64    `json:"strike"`
	Call   *ChainSide `json:"call,omitempty"`
	Put    *ChainSide `json:"put,omitempty"`
}

// OptionChain is an underlying's options of one expiry: the strikes
// around the money, lowest first, with the underlying's price they are
// around.
type OptionChain struct {
	Underlying      string        `json:"underlying"`
	UnderlyingPrice Price         `json:"underlying_price"`
	Expiry          string        `json:"expiry"` // 2006-01-02
	Strikes         []ChainStrike `json:"strikes"`
}

// SegmentFunds is one segment's margin ("equity", "commodity"): what is
// available to trade with and what open orders and positions use.
type SegmentFunds struct {
	Segment   string  `json:"segment"`
	Available float64 `json:"available"`
	Used      float64 `json:"used"`
}

// Holding is shares the account holds in its demat (delivery), with their
// average cost and last price.
type Holding struct {
	Symbol    string  `json:"symbol"`
	Quantity  int64   `json:"quantity"`
	AvgPrice  float64 `json:"avg_price"`
	LastPrice float64 `json:"last_price"`
}

// MarketData is what a desk and an approver may read of the market. The
// broker answers it (Kite through its official client, the paper broker
// from the walk it fills at); the hub stands in front of it, shared by
// every desk. Bad input (an unknown or expired symbol, a span past the
// market's cap, an interval it lacks) is EINVALID with words that tell the
// model what to fix; the market being unreachable is EUNAVAILABLE.
type MarketData interface {
	// Quotes is each of symbols' quote, read together. A symbol the market
	// does not list is EINVALID naming it.
	Quotes(ctx context.Context, symbols []string) (map[string]Quote, error)
	// Candles is q's candles, oldest first.
	Candles(ctx context.Context, q CandleQuery) ([]Candle, error)
	// SearchInstruments lists the instruments matching q, best match
	// first; for an underlying, its futures and options (their expiries
	// and strikes are in each Instrument).
	SearchInstruments(ctx context.Context, q InstrumentQuery) ([]Instrument, error)
	// OptionChain is underlying's options of expiry ("" for the nearest),
	// the strikes around the money: at most strikes on each side of it.
	OptionChain(ctx context.Context, underlying, expiry string, strikes int) (OptionChain, error)
	// Funds is the account's margin by segment.
	Funds(ctx context.Context) ([]SegmentFunds, error)
	// Holdings is the account's delivery holdings.
	Holdings(ctx context.Context) ([]Holding, error)
}

// Tick is a new last price of a symbol the hub follows.
type Tick struct {
	Symbol string `json:"symbol"`
	Price  Price  `json:"price"`
}

// PriceStream is a broker's live prices: Kite's ticker (quote mode), the
// paper market's walk as it steps. Every Broker is one, so no wrapper can
// hide it and leave the hub polling where a stream exists.
type PriceStream interface {
	// StreamPrices calls fn with each new last price of the symbols last
	// received on symbols (a new set replaces the old: subscribed to and
	// unsubscribed from as it changes) until ctx ends or the stream breaks;
	// the error says why, and the hub then polls quotes until it can
	// stream again. fn must not block for long.
	StreamPrices(ctx context.Context, symbols <-chan []string, fn func(Tick)) error
}

// Feed is the hub's live prices: the ticker's when it is connected, else
// quotes polled for every symbol followed. Who follows what is named, so
// each reason to price a symbol (a desk's watches, its book, its open
// orders, a held order an approver is shown) adds and drops its own.
type Feed interface {
	// Follow sets the symbols who wants priced (replacing who's earlier
	// set; an empty set drops who).
	Follow(ctx context.Context, who string, symbols []string) error
	// Ticks calls fn with every new price of a followed symbol until ctx
	// ends; fn must not block for long (it runs on the hub's goroutine).
	Ticks(ctx context.Context, fn func(Tick)) error
}

// Watch directions: the market rising above a level or falling below it.
const (
	WatchAbove = "above"
	WatchBelow = "below"
)

// DefaultMaxWatches is MAX_WATCHES' default: how many watches one desk
// may have at once.
const DefaultMaxWatches = 50

// Watch is a desk's standing ask to be woken when symbol's price crosses
// Level in Direction; it fires once, with Note, into the desk's inbox.
type Watch struct {
	ID        string    `json:"id"`
	Desk      string    `json:"desk"`
	Symbol    string    `json:"symbol"`
	Direction string    `json:"direction"` // WatchAbove or WatchBelow
	Level     float64   `json:"level"`
	Note      string    `json:"note,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// Crossed reports whether price p has crossed w's level.
func (w Watch) Crossed(p float64) bool {
	if !(p > 0) {
		return false
	}
	if w.Direction == WatchAbove {
		return p >= w.Level
	}
	return p <= w.Level
}

// CheckSymbol refuses, in words for the model, a symbol not spelled as an
// order's must be (the symbol rule place_order applies).
func CheckSymbol(symbol string) error {
	if !validSymbol(symbol) {
		return Errorf(EINVALID, "%s is not a symbol: %s", strconv.QuoteToASCII(symbol), symbolRule)
	}
	return nil
}
