package broker

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/deskbot/deskbot"
)

// DefaultPaperCash is the paper account's cash: what its equity segment
// has to trade with before any position uses it.
const DefaultPaperCash = 1_00_00_000.0

// Reading returns p answering desks' reads of the market (quotes,
// candles, instruments, chains, live prices) from src: the service's
// paper broker on Kite's prices reads Kite's market. NewPaper's reads its
// walk.
func (p *Paper) Reading(src MarketSource) *Paper {
	q := *p
	q.data = src
	return &q
}

// Accounting returns p keeping the paper account of desks: its funds and
// holdings are theirs together (Funds, Holdings). Without it the account
// holds nothing.
func (p *Paper) Accounting(desks []string) *Paper {
	q := *p
	q.desks = slices.Clone(desks)
	return &q
}

// Quotes is the market's quotes of symbols.
func (p *Paper) Quotes(ctx context.Context, symbols []string) (map[string]deskbot.Quote, error) {
	return p.data.Quotes(ctx, symbols)
}

// Candles is the market's candles for q.
func (p *Paper) Candles(ctx context.Context, q deskbot.CandleQuery) ([]deskbot.Candle, error) {
	return p.data.Candles(ctx, q)
}

// SearchInstruments is what the market lists matching q.
func (p *Paper) SearchInstruments(ctx context.Context, q deskbot.InstrumentQuery) ([]deskbot.Instrument, error) {
	return p.data.SearchInstruments(ctx, q)
}

// OptionChain is the market's chain of underlying's options of expiry.
func (p *Paper) OptionChain(ctx context.Context, underlying, expiry string, strikes int) (deskbot.OptionChain, error) {
	return p.data.OptionChain(ctx, underlying, expiry, strikes)
}

// StreamPrices is the market's live prices.
func (p *Paper) StreamPrices(ctx context.Context, symbols <-chan []string, fn func(deskbot.Tick)) error {
	return p.data.StreamPrices(ctx, symbols, fn)
}

// Funds is the paper account's equity segment: DefaultPaperCash, less
// what its desks' open positions use, each counted whole at its last
// price (the paper account is a cash account: no leverage, a short's
// value set aside like a long's). Its commodity segment is empty.
func (p *Paper) Funds(ctx context.Context) ([]deskbot.SegmentFunds, error) {
	var used float64
	for _, desk := range p.desks {
		b, err := p.Book(ctx, desk)
		if err != nil {
			return nil, err
		}
		for _, pos := range b.Positions {
			used += abs(pos.Quantity) * max(pos.ContractSize, 1) * pos.LastPrice
		}
	}
	used = deskbot.RoundPaise(used)
	return []deskbot.SegmentFunds{
		{Segment: "equity", Available: deskbot.RoundPaise(DefaultPaperCash - used), Used: used},
		{Segment: "commodity"},
	}, nil
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// Holdings is the shares the paper account's desks hold long, together
// by symbol (their average cost weighted by quantity), at the last price.
// The paper book keeps no product, so every long share position counts
// as delivery.
func (p *Paper) Holdings(ctx context.Context) ([]deskbot.Holding, error) {
	by := map[string]*deskbot.Holding{}
	for _, desk := range p.desks {
		b, err := p.Book(ctx, desk)
		if err != nil {
			return nil, err
		}
		for _, pos := range b.Positions {
			if pos.Quantity <= 0 || pos.Quantity != float64(int64(pos.Quantity)) {
				continue
			}
			if in, err := p.Instrument(ctx, pos.Symbol); err != nil || in.Type != deskbot.InstrumentEQ {
				continue
			}
			h := by[pos.Symbol]
			if h == nil {
				h = &deskbot.Holding{Symbol: pos.Symbol}
				by[pos.Symbol] = h
			}
			q := int64(pos.Quantity)
			h.AvgPrice = (h.AvgPrice*float64(h.Quantity) + pos.AvgPrice*float64(q)) / float64(h.Quantity+q)
			h.Quantity += q
			h.LastPrice = pos.LastPrice
		}
	}
	out := make([]deskbot.Holding, 0, len(by))
	for _, s := range slices.Sorted(maps.Keys(by)) {
		h := *by[s]
		h.AvgPrice = deskbot.RoundPaise(h.AvgPrice)
		out = append(out, h)
	}
	return out, nil
}

// MarketOnly is the market data of a market that knows only last prices
// and instruments (a test's tape, a paper broker built on another
// deskbot.Market): quotes carry the last price alone, search finds a
// symbol by its exact name, and candles and option chains are refused
// with words saying so. Its stream polls the last prices.
type MarketOnly struct {
	Market deskbot.Market
	Poll   time.Duration // 0: DefaultStreamPoll
}

var _ MarketSource = MarketOnly{}

// Quotes is each symbol's last price.
func (m MarketOnly) Quotes(ctx context.Context, symbols []string) (map[string]deskbot.Quote, error) {
	out := make(map[string]deskbot.Quote, len(symbols))
	for _, s := range symbols {
		if _, err := m.Market.Instrument(ctx, s); err != nil {
			return nil, err
		}
		p, ok, err := m.Market.LastPrice(ctx, s)
		if err != nil {
			return nil, err
		}
		q := deskbot.Quote{Symbol: deskbot.OneSpelling(s)}
		if ok {
			q.Last = p
		}
		out[s] = q
	}
	return out, nil
}

// Candles: this market keeps none.
func (m MarketOnly) Candles(ctx context.Context, q deskbot.CandleQuery) ([]deskbot.Candle, error) {
	return nil, deskbot.Errorf(deskbot.EUNAVAILABLE, "this market keeps no candles; get_quote gives the last price")
}

// SearchInstruments finds the instrument named exactly q.Text.
func (m MarketOnly) SearchInstruments(ctx context.Context, q deskbot.InstrumentQuery) ([]deskbot.Instrument, error) {
	in, err := m.Market.Instrument(ctx, strings.TrimSpace(q.Text))
	if err != nil {
		return nil, nil
	}
	return []deskbot.Instrument{in}, nil
}

// OptionChain: this market lists no chains.
func (m MarketOnly) OptionChain(ctx context.Context, underlying, expiry string, strikes int) (deskbot.OptionChain, error) {
	return deskbot.OptionChain{}, deskbot.Errorf(deskbot.EUNAVAILABLE, "this market lists no option chains")
}

// StreamPrices polls the followed symbols' last prices and calls fn with
// each one that changed (and each new symbol's first).
func (m MarketOnly) StreamPrices(ctx context.Context, symbols <-chan []string, fn func(deskbot.Tick)) error {
	poll := m.Poll
	if poll <= 0 {
		poll = DefaultStreamPoll
	}
	tk := time.NewTicker(poll)
	defer tk.Stop()
	var follow []string
	last := map[string]float64{}
	look := func() {
		for _, s := range follow {
			p, ok, err := m.Market.LastPrice(ctx, s)
			if err != nil || !ok || !(p.Value > 0) || last[s] == p.Value {
				continue
			}
			last[s] = p.Value
			fn(deskbot.Tick{Symbol: s, Price: p})
		}
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case set, ok := <-symbols:
			if !ok {
				symbols = nil
				continue
			}
			follow = slices.Compact(slices.Sorted(slices.Values(set)))
			for s := range last {
				if !slices.Contains(follow, s) {
					delete(last, s)
				}
			}
			look()
		case <-tk.C:
			look()
		}
	}
}
