package hub

import (
	"context"
	"math"
	"slices"
	"strings"

	"github.com/deskbot/deskbot"
)

// MaxChainStrikes is how many strikes on each side of the money a chain
// may show.
const MaxChainStrikes = 25

// optionChain builds underlying's chain of expiry from the broker's
// instruments and the hub's quotes (asked in lane), so a chain costs the
// quote budget through the hub like any quote.
func (h *Hub) optionChain(ctx context.Context, lane, underlying, expiry string, strikes int) (deskbot.OptionChain, error) {
	if strikes <= 0 {
		strikes = 10
	}
	if strikes > MaxChainStrikes {
		return deskbot.OptionChain{}, deskbot.Errorf(deskbot.EINVALID, "strikes may be at most %d on each side of the money; ask for fewer", MaxChainStrikes)
	}
	var opts []deskbot.Instrument
	for _, typ := range []string{deskbot.InstrumentCE, deskbot.InstrumentPE} {
		in, err := h.cfg.Market.SearchInstruments(ctx, deskbot.InstrumentQuery{Underlying: underlying, Type: typ, Limit: 100000})
		if err != nil {
			return deskbot.OptionChain{}, err
		}
		opts = append(opts, in...)
	}
	if len(opts) == 0 {
		return deskbot.OptionChain{}, deskbot.Errorf(deskbot.EINVALID, "%q has no options listed: give an underlying as search_instruments names it (NIFTY, BANKNIFTY, RELIANCE)", underlying)
	}
	today := h.cfg.Now().In(deskbot.IST).Format("2006-01-02")
	var expiries []string
	for _, o := range opts {
		if o.Expiry >= today && !slices.Contains(expiries, o.Expiry) {
			expiries = append(expiries, o.Expiry)
		}
	}
	slices.Sort(expiries)
	if expiry == "" {
		if len(expiries) == 0 {
			return deskbot.OptionChain{}, deskbot.Errorf(deskbot.EINVALID, "%q has no options that have not expired", underlying)
		}
		expiry = expiries[0]
	} else if !slices.Contains(expiries, expiry) {
		shown := expiries[:min(len(expiries), 6)]
		return deskbot.OptionChain{}, deskbot.Errorf(deskbot.EINVALID, "%s has no options expiring %q: its expiries are %s (YYYY-MM-DD)", underlying, expiry, strings.Join(shown, ", "))
	}
	bySide := map[float64]*deskbot.ChainStrike{}
	var under string
	for _, o := range opts {
		if o.Expiry != expiry {
			continue
		}
		under = o.Underlying
		s := bySide[o.Strike]
		if s == nil {
			s = &deskbot.ChainStrike{Strike: o.Strike}
			bySide[o.Strike] = s
		}
		side := &deskbot.ChainSide{Symbol: o.Symbol}
		if o.Type == deskbot.InstrumentCE {
			s.Call = side
		} else {
			s.Put = side
		}
	}
	chain := deskbot.OptionChain{Underlying: underlying, Expiry: expiry}
	var price float64
	if under != "" {
		qs, err := h.quotesFor(ctx, lane, []string{under})
		if err != nil {
			return deskbot.OptionChain{}, err
		}
		chain.UnderlyingPrice = qs[under].Last
		price = chain.UnderlyingPrice.Value
	}
	all := make([]float64, 0, len(bySide))
	for k := range bySide {
		all = append(all, k)
	}
	slices.Sort(all)
	// The money: the strike nearest the underlying's price (the middle
	// strike when there is no price).
	atm := len(all) / 2
	if price > 0 {
		best := math.Inf(1)
		for i, k := range all {
			if d := math.Abs(k - price); d < best {
				best, atm = d, i
			}
		}
	}
	lo, hi := max(0, atm-strikes), min(len(all), atm+strikes+1)
	var syms []string
	for _, k := range all[lo:hi] {
		s := bySide[k]
		for _, side := range []*deskbot.ChainSide{s.Call, s.Put} {
			if side != nil {
				syms = append(syms, side.Symbol)
			}
		}
	}
	qs, err := h.quotesFor(ctx, lane, syms)
	if err != nil {
		return deskbot.OptionChain{}, err
	}
	for _, k := range all[lo:hi] {
		s := bySide[k]
		for _, side := range []*deskbot.ChainSide{s.Call, s.Put} {
			if side == nil {
				continue
			}
			q := qs[side.Symbol]
			side.Last, side.OpenInterest, side.Volume = q.Last, q.OpenInterest, q.Volume
		}
		chain.Strikes = append(chain.Strikes, *s)
	}
	return chain, nil
}
