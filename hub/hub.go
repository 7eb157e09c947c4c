package hub

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/retry"
)

// Kite's limits, the defaults of Config.
const (
	DefaultQuoteEvery  = time.Second // quote family: 1 a second
	DefaultMaxQuote    = 500         // instruments in one quote request
	DefaultMaxLTP      = 1000        // instruments in one LTP request
	DefaultStreamCap   = 3 * 3000    // 3 connections × 3,000 instruments
	DefaultHistEvery   = time.Second / 3
	DefaultFresh       = time.Second // a quote this young is served as it is
	DefaultCandleFresh = time.Minute // a span reaching today is kept this long
	DefaultPollEvery   = 3 * time.Second
	// MaxLaneWaiting is how many asks one lane may have waiting at once.
	MaxLaneWaiting = 20
)

// approvers is the lane of the hub's own methods: the approvers' view and
// the service's, served first.
const approvers = ""

// Config is what a hub stands on.
type Config struct {
	// Market answers quotes, candles, instruments, funds and holdings.
	Market deskbot.MarketData
	// Prices answers last prices (LTP) and instruments (the symbols a
	// desk names are checked against it before they join a request).
	Prices deskbot.Market
	// Stream is the broker's live prices; nil polls only.
	Stream deskbot.PriceStream
	// DataDir keeps the candles of past days (DATA_DIR); "" keeps none.
	DataDir string
	Now     func() time.Time
	Log     *slog.Logger

	QuoteEvery, HistEvery, Fresh, CandleFresh, PollEvery time.Duration
	MaxQuote, MaxLTP, StreamCap                          int
}

func (c *Config) defaults() {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	set := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	set(&c.QuoteEvery, DefaultQuoteEvery)
	set(&c.HistEvery, DefaultHistEvery)
	set(&c.Fresh, DefaultFresh)
	set(&c.CandleFresh, DefaultCandleFresh)
	set(&c.PollEvery, DefaultPollEvery)
	seti := func(n *int, v int) {
		if *n <= 0 {
			*n = v
		}
	}
	seti(&c.MaxQuote, DefaultMaxQuote)
	seti(&c.MaxLTP, DefaultMaxLTP)
	seti(&c.StreamCap, DefaultStreamCap)
}

// Hub is the process's one view of the market. Its own methods are the
// approvers' lane; Desk gives each desk its own.
type Hub struct {
	cfg Config

	mu sync.Mutex
	// What the hub holds: full quotes with when they were fetched, and
	// last prices from the stream or the LTP polls.
	quotes map[string]held
	last   map[string]deskbot.Price
	// fetched is when the hub last heard each last price.
	fetched map[string]time.Time
	// Waiting asks, by lane, and the lanes with asks in the order they
	// are served.
	lanes map[string][]*ask
	ring  []string
	// The followed symbols: by who, and how many reasons each has.
	follows  map[string][]string
	followed map[string]int
	cursor   int // where the next poll of followed symbols starts
	lastPoll time.Time
	streamed map[string]bool // what the stream holds while it runs
	streamCh chan []string

	// Option chains: asked (by key), queued by lane, and held for Fresh.
	chainsAsked map[string]*chainAsk
	chainQ      map[string][]*chainAsk
	chainRing   []string
	chainsHeld  map[string]heldChain
	chainNext   bool // the next slot goes to a chain when one waits

	wake      chan struct{}
	streaming atomic.Bool
	requests  atomic.Int64 // quote-family requests made, for tests and ops

	subsMu sync.RWMutex
	subs   map[int]func(deskbot.Tick)
	subID  int

	candles candleCache
}

type held struct {
	q  deskbot.Quote
	at time.Time // when the hub fetched it
}

// New builds a hub; Run makes it ask the broker.
func New(cfg Config) *Hub {
	cfg.defaults()
	h := &Hub{
		cfg: cfg, quotes: map[string]held{}, last: map[string]deskbot.Price{}, fetched: map[string]time.Time{},
		lanes: map[string][]*ask{}, follows: map[string][]string{}, followed: map[string]int{},
		streamed: map[string]bool{}, chainsAsked: map[string]*chainAsk{}, chainQ: map[string][]*chainAsk{}, chainsHeld: map[string]heldChain{}, wake: make(chan struct{}, 1), subs: map[int]func(deskbot.Tick){},
	}
	h.candles.init(h)
	return h
}

var (
	_ deskbot.MarketData = (*Hub)(nil)
	_ deskbot.Feed       = (*Hub)(nil)
	_ deskbot.Market     = (*Hub)(nil)
	_ deskbot.MarketData = (*Lane)(nil)
)

// Run serves the hub until ctx ends: the quote scheduler, the candle
// scheduler and the stream.
func (h *Hub) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() { h.quoteLoop(ctx) })
	wg.Go(func() { h.candles.loop(ctx) })
	if h.cfg.Stream != nil {
		wg.Go(func() { h.streamLoop(ctx) })
	}
	wg.Wait()
	return nil
}

// Requests is how many quote-family requests the hub has made.
func (h *Hub) Requests() int64 { return h.requests.Load() }

// Lane is one desk's view of the market: its asks wait in its own queue.
type Lane struct {
	h    *Hub
	name string
}

// Desk is desk's lane.
func (h *Hub) Desk(desk string) *Lane { return &Lane{h: h, name: "desk:" + desk} }

// Quotes is each of symbols' quote (the approvers' lane).
func (h *Hub) Quotes(ctx context.Context, symbols []string) (map[string]deskbot.Quote, error) {
	return h.quotesFor(ctx, approvers, symbols)
}

// Quotes is each of symbols' quote, asked in the desk's lane.
func (l *Lane) Quotes(ctx context.Context, symbols []string) (map[string]deskbot.Quote, error) {
	return l.h.quotesFor(ctx, l.name, symbols)
}

// LastPrice is symbol's last price (deskbot.Market), the approvers' lane.
func (h *Hub) LastPrice(ctx context.Context, symbol string) (deskbot.Price, bool, error) {
	ps, err := h.lastPrices(ctx, approvers, []string{symbol})
	if err != nil {
		return deskbot.Price{}, false, err
	}
	p, ok := ps[symbol]
	return p, ok, nil
}

// LastPrices is the last price of each of symbols (deskbot.Market), the
// approvers' lane.
func (h *Hub) LastPrices(ctx context.Context, symbols []string) (map[string]float64, error) {
	ps, err := h.lastPrices(ctx, approvers, symbols)
	if err != nil {
		return nil, err
	}
	out := make(map[string]float64, len(ps))
	for s, p := range ps {
		out[s] = p.Value
	}
	return out, nil
}

// Instrument is the broker's.
func (h *Hub) Instrument(ctx context.Context, symbol string) (deskbot.Instrument, error) {
	return h.cfg.Prices.Instrument(ctx, symbol)
}

// Candles is q's candles, the approvers' lane.
func (h *Hub) Candles(ctx context.Context, q deskbot.CandleQuery) ([]deskbot.Candle, error) {
	return h.candles.get(ctx, approvers, q)
}

// Candles is q's candles, asked in the desk's lane.
func (l *Lane) Candles(ctx context.Context, q deskbot.CandleQuery) ([]deskbot.Candle, error) {
	return l.h.candles.get(ctx, l.name, q)
}

// SearchInstruments is the broker's (its instrument list is read once a
// day and searched in memory: no request of a limited family).
func (h *Hub) SearchInstruments(ctx context.Context, q deskbot.InstrumentQuery) ([]deskbot.Instrument, error) {
	return h.cfg.Market.SearchInstruments(ctx, q)
}

// SearchInstruments is the broker's.
func (l *Lane) SearchInstruments(ctx context.Context, q deskbot.InstrumentQuery) ([]deskbot.Instrument, error) {
	return l.h.SearchInstruments(ctx, q)
}

// OptionChain is the broker's, approvers' lane.
func (h *Hub) OptionChain(ctx context.Context, underlying, expiry string, strikes int) (deskbot.OptionChain, error) {
	return h.optionChain(ctx, approvers, underlying, expiry, strikes)
}

// OptionChain is the broker's, read in a slot of the quote scheduler in
// the desk's lane (a chain is a quote request at the broker).
func (l *Lane) OptionChain(ctx context.Context, underlying, expiry string, strikes int) (deskbot.OptionChain, error) {
	return l.h.optionChain(ctx, l.name, underlying, expiry, strikes)
}

// Funds is the broker's, fetched at most once per Fresh for everyone.
func (h *Hub) Funds(ctx context.Context) ([]deskbot.SegmentFunds, error) {
	return h.candles.funds(ctx)
}

// Funds is the hub's.
func (l *Lane) Funds(ctx context.Context) ([]deskbot.SegmentFunds, error) { return l.h.Funds(ctx) }

// Holdings is the broker's, fetched at most once per Fresh for everyone.
func (h *Hub) Holdings(ctx context.Context) ([]deskbot.Holding, error) {
	return h.candles.holdings(ctx)
}

// Holdings is the hub's.
func (l *Lane) Holdings(ctx context.Context) ([]deskbot.Holding, error) { return l.h.Holdings(ctx) }

// Follow sets the symbols who wants priced live.
func (h *Hub) Follow(ctx context.Context, who string, symbols []string) error {
	symbols = dedupe(symbols)
	h.mu.Lock()
	for _, s := range h.follows[who] {
		if h.followed[s]--; h.followed[s] <= 0 {
			delete(h.followed, s)
		}
	}
	if len(symbols) == 0 {
		delete(h.follows, who)
	} else {
		h.follows[who] = symbols
	}
	for _, s := range symbols {
		h.followed[s]++
	}
	h.pushStreamLocked()
	h.mu.Unlock()
	h.poke()
	return nil
}

// Ticks calls fn with every new price of a followed symbol until ctx
// ends.
func (h *Hub) Ticks(ctx context.Context, fn func(deskbot.Tick)) error {
	h.subsMu.Lock()
	h.subID++
	id := h.subID
	h.subs[id] = fn
	h.subsMu.Unlock()
	<-ctx.Done()
	h.subsMu.Lock()
	delete(h.subs, id)
	h.subsMu.Unlock()
	return nil
}

// emit hands t to every Ticks callback.
func (h *Hub) emit(t deskbot.Tick) {
	h.subsMu.RLock()
	defer h.subsMu.RUnlock()
	for _, fn := range h.subs {
		fn(t)
	}
}

// streamSet is the followed symbols the stream is to hold, at most
// StreamCap, in a stable order. Called with mu held.
func (h *Hub) streamSetLocked() []string {
	set := make([]string, 0, len(h.followed))
	for s := range h.followed {
		set = append(set, s)
	}
	sortStrings(set)
	if len(set) > h.cfg.StreamCap {
		set = set[:h.cfg.StreamCap]
	}
	return set
}

// pushStreamLocked hands the stream the current set, replacing one it
// has not taken yet. Called with mu held.
func (h *Hub) pushStreamLocked() {
	if h.streamCh == nil {
		return
	}
	set := h.streamSetLocked()
	select {
	case <-h.streamCh:
	default:
	}
	h.streamCh <- set
	h.streamed = make(map[string]bool, len(set))
	for _, s := range set {
		h.streamed[s] = true
	}
}

// streamLoop streams the followed symbols from the broker, starting again
// after a break; while it is down the quote scheduler polls them.
func (h *Hub) streamLoop(ctx context.Context) {
	b := retry.Backoff{Min: time.Second, Max: time.Minute}
	for ctx.Err() == nil {
		ch := make(chan []string, 1)
		h.mu.Lock()
		h.streamCh = ch
		h.pushStreamLocked()
		h.mu.Unlock()
		h.streaming.Store(true)
		started := time.Now()
		err := h.cfg.Stream.StreamPrices(ctx, ch, h.onTick)
		h.streaming.Store(false)
		h.mu.Lock()
		h.streamCh, h.streamed = nil, map[string]bool{}
		h.mu.Unlock()
		h.poke()
		if ctx.Err() != nil {
			return
		}
		if time.Since(started) > time.Minute {
			b.Reset()
		}
		h.cfg.Log.Warn("market stream broke; polling quotes until it is back", "err", err)
		if retry.Sleep(ctx, b.Next()) != nil {
			return
		}
	}
}

// onTick keeps a streamed price and hands it on.
func (h *Hub) onTick(t deskbot.Tick) {
	if !(t.Price.Value > 0) {
		return
	}
	h.mu.Lock()
	old := h.last[t.Symbol]
	if !t.Price.At.Before(old.At) {
		h.last[t.Symbol] = t.Price
	}
	_, followed := h.followed[t.Symbol]
	h.mu.Unlock()
	if followed && t.Price != old {
		h.emit(t)
	}
}

func (h *Hub) poke() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

func sortStrings(s []string) { slices.Sort(s) }

func dedupe(symbols []string) []string {
	out := make([]string, 0, len(symbols))
	seen := make(map[string]bool, len(symbols))
	for _, s := range symbols {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
