package broker

import (
	"context"
	"hash/fnv"
	"math"
	"strings"
	"time"

	"github.com/deskbot/deskbot"
)

// StartPrices are the prices (rupees) the paper market's symbols start
// from at the walk's origin; a symbol not named here starts at
// DefaultStartPrice. They are round figures near where these instruments
// traded, so a demo reads sensibly; no desk can change them.
var StartPrices = map[string]float64{
	"RELIANCE":          1250,
	"TCS":               4000,
	"INFY":              1500,
	"HDFCBANK":          1700,
	"HDFC":              2700,
	"ICICIBANK":         1250,
	"SBIN":              800,
	"M&M":               3000,
	"BAJAJ-AUTO":        9000,
	"NIFTY24DECFUT":     24500,
	"BANKNIFTY24DECFUT": 52000,
	// The indices the paper market's index options are written on.
	"NIFTY 50":   24500,
	"NIFTY BANK": 52000,
}

const (
	// DefaultStartPrice is where a symbol without a start price starts.
	DefaultStartPrice = 1000.0
	// DefaultSeed fixes the service's paper market: every process on one
	// Redis sees the same prices at the same time.
	DefaultSeed = 20261201
	// DefaultVolatility scales the walk (Walk): prices move about 0.07% a
	// minute and 2.7% a day, and stay within about 7% of their start
	// price (one standard deviation) however long the service runs.
	DefaultVolatility = 0.0005
)

// walkWindow is the trailing window of the walk's move, in steps: a week
// of minutes.
const walkWindow = 7 * 24 * 60

// DefaultOrigin is when the paper market's walk starts: midnight at the
// start of 2026, India time. Before it every price is its start price.
var DefaultOrigin = time.Date(2026, 1, 1, 0, 0, 0, 0, deskbot.IST)

// walkLevels bounds the walk to 2^32 steps (thousands of years of
// minutes) past its origin; later times read the last step's price.
const walkLevels = 32

// Walk is a paper market no desk controls: each symbol's price starts at
// its start price at Origin and moves a step a minute, fixed by Seed. The
// log price is Volatility × (W(n+w) − W(n) − W(w)) for a Gaussian random
// walk W, n the minutes since Origin and w a week: the walk's move over a
// trailing week, so minute to minute it moves like a random walk, yet it
// hovers round its start price instead of drifting off over the months.
// A price is a function of the seed, the symbol and the time alone (W
// built the Lévy way, by Brownian-bridge midpoints), so every process
// agrees on it, nothing is stored, and a price costs a few dozen hashes
// whenever it is read. Prices are rounded to paise.
type Walk struct {
	Seed       uint64
	Origin     time.Time
	Start      map[string]float64 // nil: StartPrices
	Default    float64            // a symbol not in Start; 0: DefaultStartPrice
	Volatility float64            // per minute, of the log price; 0: DefaultVolatility
	Now        deskbot.Now        // nil: time.Now
	// Poll is how often StreamPrices looks at Now for the walk's next
	// step; 0: DefaultStreamPoll.
	Poll time.Duration
}

var _ deskbot.Market = (*Walk)(nil)

// DefaultMarket is the paper broker's market unless told otherwise.
func DefaultMarket(now deskbot.Now) *Walk {
	return &Walk{Seed: DefaultSeed, Origin: DefaultOrigin, Now: now}
}

// LastPrice is symbol's price now; the walk knows every symbol.
func (w *Walk) LastPrice(_ context.Context, symbol string) (deskbot.Price, bool, error) {
	now := time.Now
	if w.Now != nil {
		now = w.Now
	}
	t := now()
	return deskbot.Price{Value: w.Price(symbol, t), At: t}, true, nil
}

// Instrument is what the walk's market lists: every symbol of its own
// exchange, NSE, as shares (contract size 1), or as a future when its
// name says so ("NIFTY24DECFUT"), and its monthly options on NFO
// (options.go) until they expire. It lists nothing else on another
// exchange, whose contract it could not size.
func (w *Walk) Instrument(_ context.Context, symbol string) (deskbot.Instrument, error) {
	in, err := PaperInstrument(symbol)
	if err == nil && in.Option() && !w.now().Before(optionExpiry(in)) {
		return deskbot.Instrument{}, deskbot.Errorf(deskbot.EINVALID, "%s expired on %s: send a contract of a later expiry (search_instruments or get_option_chain lists them)", symbol, in.Expiry)
	}
	return in, err
}

func (w *Walk) now() time.Time {
	if w.Now != nil {
		return w.Now()
	}
	return time.Now()
}

func optionExpiry(in deskbot.Instrument) time.Time {
	d, _ := time.ParseInLocation("2006-01-02", in.Expiry, deskbot.IST)
	return d.Add(15*time.Hour + 30*time.Minute)
}

// PaperInstrument is what a paper market without the broker's instrument
// list says symbol is (Walk.Instrument): an NSE share or future, or one
// of its NFO monthly options (expired or not).
func PaperInstrument(symbol string) (deskbot.Instrument, error) {
	if o, ok := parseOption(symbol); ok {
		lot := paperLots[o.name]
		if lot == 0 {
			lot = 1
		}
		return deskbot.Instrument{Symbol: o.symbol(), Type: o.typ, ContractSize: 1, LotSize: lot, TickSize: 0.05,
			Strike: o.strike, Expiry: o.expiry.Format("2006-01-02"), Underlying: o.underlying()}, nil
	}
	ex, ts := deskbot.InstrumentOf(symbol)
	if ex != deskbot.DefaultExchange {
		return deskbot.Instrument{}, deskbot.Errorf(deskbot.EINVALID, "%s is on %s, but this paper market lists NSE's symbols only, so its contract size is not known: send an NSE symbol", symbol, ex)
	}
	in := deskbot.Instrument{Symbol: deskbot.SymbolOf(ex, ts), Type: deskbot.InstrumentEQ, ContractSize: 1, TickSize: 0.05, LotSize: 1}
	if strings.HasSuffix(ts, "FUT") {
		in.Type = deskbot.InstrumentFUT
	}
	return in, nil
}

// LastPrices is each symbol's price now.
func (w *Walk) LastPrices(ctx context.Context, symbols []string) (map[string]float64, error) {
	return EachPrice(ctx, w, symbols)
}

// EachPrice is LastPrices for a market that reads one symbol at a time as
// cheaply as several.
func EachPrice(ctx context.Context, m deskbot.Market, symbols []string) (map[string]float64, error) {
	out := make(map[string]float64, len(symbols))
	for _, s := range symbols {
		p, ok, err := m.LastPrice(ctx, s)
		if err != nil {
			return nil, err
		}
		if ok && p.Value > 0 {
			out[s] = p.Value
		}
	}
	return out, nil
}

// Price is symbol's price at t: an option's is its value on its
// underlying's price at t (options.go).
func (w *Walk) Price(symbol string, t time.Time) float64 {
	if o, ok := parseOption(symbol); ok {
		// Valued at the minute's start: the price steps once a minute.
		t = t.Truncate(time.Minute)
		return optionPrice(o, w.Price(o.underlying(), t), t)
	}
	start, ok := w.Start[symbol]
	if w.Start == nil {
		start, ok = StartPrices[symbol]
	}
	if !ok {
		start = w.Default
		if start <= 0 {
			start = DefaultStartPrice
		}
	}
	vol := w.Volatility
	if vol <= 0 {
		vol = DefaultVolatility
	}
	var step uint64
	if d := t.Sub(w.Origin); d > 0 {
		step = min(uint64(d/time.Minute), 1<<walkLevels-walkWindow)
	}
	h := fnv.New64a()
	h.Write([]byte(symbol))
	key := h.Sum64() ^ w.Seed
	x := bridge(key, step+walkWindow) - bridge(key, step) - bridge(key, walkWindow)
	p := start * math.Exp(vol*x)
	// A tick never rounds to nothing: a price is always above 0.
	return max(deskbot.RoundPaise(p), 0.01)
}

// bridge is W(n) of a standard random walk (W(0) = 0, unit variance a
// step) fixed by key: W at 2^walkLevels is drawn first, then each dyadic
// midpoint given its ends, descending to n. Each midpoint is drawn from
// its own index, so W(n) is the same walk for every n.
func bridge(key, n uint64) float64 {
	lo, hi := uint64(0), uint64(1)<<walkLevels
	wlo, whi := 0.0, gauss(key, hi)*math.Sqrt(float64(hi))
	for hi-lo > 1 && n != lo && n != hi {
		mid := lo + (hi-lo)/2
		wmid := (wlo+whi)/2 + gauss(key, mid)*math.Sqrt(float64(hi-lo))/2
		if n < mid {
			hi, whi = mid, wmid
		} else {
			lo, wlo = mid, wmid
		}
	}
	if n == hi {
		return whi
	}
	return wlo
}

// gauss is a standard normal draw fixed by (key, i): two splitmix64
// uniforms through Box-Muller.
func gauss(key, i uint64) float64 {
	a := splitmix(key ^ splitmix(i))
	b := splitmix(a)
	u1 := (float64(a>>11) + 0.5) / (1 << 53) // in (0, 1): the log is finite
	u2 := float64(b>>11) / (1 << 53)
	return math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
