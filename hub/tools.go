package hub

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/deskfs"
	"github.com/deskbot/deskbot/exchange"
	"github.com/deskbot/deskbot/words"
)

// The desks' market tools' bounds.
const (
	MaxQuoteSymbols = 50    // get_quote
	MaxLast         = 20000 // get_candles' last
	InlineCandles   = 30    // at most this many candles are shown in the answer; more go to a file
	MaxSearch       = 50    // search_instruments' limit
	candleDir       = "market"
)

// Tools returns the desks' market tools over h: get_quote, get_candles,
// search_instruments, get_option_chain and get_funds, in that order. Each
// asks in the calling desk's lane. A long candle series is written as CSV
// into the desk's folder under dataDir (deskfs.Dir), never outside it.
// They are read-only: unguarded unless APPROVAL_TOOLS names them.
func (h *Hub) Tools(dataDir string) []deskbot.Tool {
	return []deskbot.Tool{
		&tool{name: deskbot.ToolGetQuote, desc: getQuoteDesc, schema: getQuoteSchema,
			check: func(a json.RawMessage) error { _, err := quoteArgs(a); return err },
			run: func(ctx context.Context, desk string, a json.RawMessage) (deskbot.ToolResult, error) {
				syms, err := quoteArgs(a)
				if err != nil {
					return modelError(err)
				}
				qs, err := h.Desk(desk).Quotes(ctx, syms)
				if err != nil {
					return marketResult(err)
				}
				return deskbot.ToolResult{Text: QuoteText(syms, qs, h.cfg.Now())}, nil
			}},
		&tool{name: deskbot.ToolGetCandles, desc: getCandlesDesc, schema: getCandlesSchema,
			check: func(a json.RawMessage) error { _, err := candleArgs(a, h.cfg.Now()); return err },
			run: func(ctx context.Context, desk string, a json.RawMessage) (deskbot.ToolResult, error) {
				ca, err := candleArgs(a, h.cfg.Now())
				if err != nil {
					return modelError(err)
				}
				cs, err := h.Desk(desk).Candles(ctx, ca.q)
				if err != nil {
					return marketResult(err)
				}
				if ca.last > 0 && len(cs) > ca.last {
					cs = cs[len(cs)-ca.last:]
				}
				text, err := candlesText(deskfs.Dir(dataDir, desk), ca, cs)
				if err != nil {
					return marketResult(err)
				}
				return deskbot.ToolResult{Text: text}, nil
			}},
		&tool{name: deskbot.ToolSearchInstruments, desc: searchDesc, schema: searchSchema,
			check: func(a json.RawMessage) error { _, err := searchArgs(a); return err },
			run: func(ctx context.Context, desk string, a json.RawMessage) (deskbot.ToolResult, error) {
				q, err := searchArgs(a)
				if err != nil {
					return modelError(err)
				}
				ins, err := h.Desk(desk).SearchInstruments(ctx, q)
				if err != nil {
					return marketResult(err)
				}
				if len(ins) > q.Limit {
					ins = ins[:q.Limit]
				}
				return deskbot.ToolResult{Text: InstrumentsText(q, ins)}, nil
			}},
		&tool{name: deskbot.ToolGetOptionChain, desc: chainDesc, schema: chainSchema,
			check: func(a json.RawMessage) error { _, err := chainArgs(a); return err },
			run: func(ctx context.Context, desk string, a json.RawMessage) (deskbot.ToolResult, error) {
				ca, err := chainArgs(a)
				if err != nil {
					return modelError(err)
				}
				c, err := h.Desk(desk).OptionChain(ctx, ca.underlying, ca.expiry, ca.strikes)
				if err != nil {
					return marketResult(err)
				}
				return deskbot.ToolResult{Text: ChainText(c, h.cfg.Now())}, nil
			}},
		&tool{name: deskbot.ToolGetFunds, desc: fundsDesc, schema: noArgsSchema,
			check: func(a json.RawMessage) error { return noArgs(deskbot.ToolGetFunds, a) },
			run: func(ctx context.Context, desk string, a json.RawMessage) (deskbot.ToolResult, error) {
				if err := noArgs(deskbot.ToolGetFunds, a); err != nil {
					return modelError(err)
				}
				fs, err := h.Desk(desk).Funds(ctx)
				if err != nil {
					return marketResult(err)
				}
				return deskbot.ToolResult{Text: FundsText(fs, h.cfg.Now())}, nil
			}},
	}
}

const (
	getQuoteDesc = "Get the market's quote of up to 50 symbols: last price and when it traded, the day's open, high and low, the previous close, change, volume, open interest (F&O) and the best five bids and offers. " +
		"symbols are EXCHANGE:TRADINGSYMBOL as place_order takes them (INFY, NFO:NIFTY25DECFUT). Times are India time. Read-only."
	getCandlesDesc = "Get historical candles (open, high, low, close, volume) of one symbol. interval is minute, 3minute, 5minute, 10minute, 15minute, 30minute, 60minute or day. " +
		"Give either last (the most recent N candles) or from (and optionally to; default now), as YYYY-MM-DD or \"YYYY-MM-DD HH:MM\" India time. One call spans at most 60 days of minute candles, 100 of 3-10 minute, 200 of 15-30 minute, 400 of 60minute and 2,000 of day. " +
		"Up to 30 candles are shown in the answer; a longer series is written as CSV into your folder (file: a path inside your folder, default market/<symbol>_<interval>_<from>_<to>.csv) and the answer gives its path and a summary, so you can analyse it in your terminal. Read-only."
	searchDesc = "Search the instruments the market lists, by symbol or name (query), exchange (NSE, BSE, NFO, BFO, CDS, BCD, MCX), type (EQ, FUT, CE, PE), or an underlying's futures and options (underlying: NIFTY, BANKNIFTY, RELIANCE). " +
		"Each line gives the symbol to trade, its type, expiry, strike, lot size and tick size. limit: at most 50 (default 20). Read-only."
	chainDesc = "Get an option chain: the underlying's calls and puts of one expiry (YYYY-MM-DD; default the nearest), strikes around the money (strikes on each side, default 10, at most 25), each with last price, open interest and volume, with the underlying's price. Read-only."
	fundsDesc = "Get the account's margin by segment (equity, commodity): what is available to trade with and what open orders and positions use. The account is shared by every desk. Takes no arguments. Read-only."
)

var (
	symbolPattern  = `^((` + strings.Join(deskbot.Exchanges, "|") + `):)?[A-Z0-9][A-Z0-9&._/-]{0,31}$`
	noArgsSchema   = json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)
	getQuoteSchema = json.RawMessage(`{"type":"object","properties":{` +
		`"symbols":{"type":"array","minItems":1,"maxItems":50,"items":{"type":"string","pattern":"` + symbolPattern + `"},"description":"EXCHANGE:TRADINGSYMBOL in upper case, e.g. INFY or NFO:NIFTY25DECFUT; at most 50"}},` +
		`"required":["symbols"],"additionalProperties":false}`)
	getCandlesSchema = json.RawMessage(`{"type":"object","properties":{` +
		`"symbol":{"type":"string","pattern":"` + symbolPattern + `","description":"EXCHANGE:TRADINGSYMBOL, e.g. INFY"},` +
		`"interval":{"type":"string","enum":["minute","3minute","5minute","10minute","15minute","30minute","60minute","day"]},` +
		`"last":{"type":"integer","minimum":1,"maximum":20000,"description":"the most recent N candles (instead of from)"},` +
		`"from":{"type":"string","description":"YYYY-MM-DD or \"YYYY-MM-DD HH:MM\", India time"},` +
		`"to":{"type":"string","description":"YYYY-MM-DD or \"YYYY-MM-DD HH:MM\", India time; default now"},` +
		`"file":{"type":"string","description":"where to write a long series: a path inside your folder ending .csv"}},` +
		`"required":["symbol","interval"],"additionalProperties":false}`)
	searchSchema = json.RawMessage(`{"type":"object","properties":{` +
		`"query":{"type":"string","description":"part of a symbol or a name, e.g. INFY or Infosys"},` +
		`"exchange":{"type":"string","enum":["` + strings.Join(deskbot.Exchanges, `","`) + `"]},` +
		`"type":{"type":"string","enum":["EQ","FUT","CE","PE"]},` +
		`"underlying":{"type":"string","description":"list this underlying's futures and options, e.g. NIFTY"},` +
		`"limit":{"type":"integer","minimum":1,"maximum":50}},"additionalProperties":false}`)
	chainSchema = json.RawMessage(`{"type":"object","properties":{` +
		`"underlying":{"type":"string","description":"e.g. NIFTY, BANKNIFTY, RELIANCE"},` +
		`"expiry":{"type":"string","description":"YYYY-MM-DD; default the nearest"},` +
		`"strikes":{"type":"integer","minimum":1,"maximum":25,"description":"strikes on each side of the money; default 10"}},` +
		`"required":["underlying"],"additionalProperties":false}`)
)

// fields reads name's arguments, refusing any not in allowed.
func fields(name string, a json.RawMessage, allowed ...string) (map[string]json.RawMessage, error) {
	f, err := deskbot.ArgumentFields(name, a)
	if err != nil {
		return nil, err
	}
	for k := range f {
		ok := false
		for _, x := range allowed {
			ok = ok || k == x
		}
		if !ok {
			return nil, deskbot.Errorf(deskbot.EINVALID, "%s has no argument %s; it takes %s", name, strconv.QuoteToASCII(k), strings.Join(allowed, ", "))
		}
	}
	return f, nil
}

func noArgs(name string, a json.RawMessage) error {
	_, err := fields(name, a)
	if err != nil && deskbot.ErrorCode(err) == deskbot.EINVALID && strings.Contains(deskbot.ErrorMessage(err), "has no argument") {
		return deskbot.Errorf(deskbot.EINVALID, "%s takes no arguments; call it with {}", name)
	}
	return err
}

func str(name, key string, f map[string]json.RawMessage, dst *string) error {
	raw, ok := f[key]
	if !ok {
		return nil
	}
	if json.Unmarshal(raw, dst) != nil || len(*dst) > 200 {
		return deskbot.Errorf(deskbot.EINVALID, "%s's %s must be a short string", name, key)
	}
	return nil
}

func integer(name, key string, f map[string]json.RawMessage, lo, hi int, dst *int) error {
	raw, ok := f[key]
	if !ok {
		return nil
	}
	var n float64
	if json.Unmarshal(raw, &n) != nil || n != math.Trunc(n) || n < float64(lo) || n > float64(hi) {
		return deskbot.Errorf(deskbot.EINVALID, "%s's %s must be a whole number from %d to %d", name, key, lo, hi)
	}
	*dst = int(n)
	return nil
}

// symbol reads a symbol in its one spelling.
func symbol(s string) (string, error) {
	if err := deskbot.CheckSymbol(s); err != nil {
		return "", err
	}
	return deskbot.OneSpelling(s), nil
}

func quoteArgs(a json.RawMessage) ([]string, error) {
	f, err := fields(deskbot.ToolGetQuote, a, "symbols")
	if err != nil {
		return nil, err
	}
	var raw []string
	if json.Unmarshal(f["symbols"], &raw) != nil || len(raw) == 0 {
		return nil, deskbot.Errorf(deskbot.EINVALID, `get_quote needs symbols, a list of 1 to %d symbols, e.g. {"symbols":["INFY","NFO:NIFTY25DECFUT"]}`, MaxQuoteSymbols)
	}
	if len(raw) > MaxQuoteSymbols {
		return nil, deskbot.Errorf(deskbot.EINVALID, "get_quote takes at most %d symbols and was given %d: ask for the ones you need, in several calls if you must", MaxQuoteSymbols, len(raw))
	}
	syms := make([]string, 0, len(raw))
	for _, s := range raw {
		one, err := symbol(s)
		if err != nil {
			return nil, err
		}
		syms = append(syms, one)
	}
	return dedupe(syms), nil
}

type candleQuery struct {
	q    deskbot.CandleQuery
	last int
	file string
}

// candleArgs reads get_candles' arguments as a query of India time.
func candleArgs(a json.RawMessage, now time.Time) (candleQuery, error) {
	const name = deskbot.ToolGetCandles
	var c candleQuery
	f, err := fields(name, a, "symbol", "interval", "last", "from", "to", "file")
	if err != nil {
		return c, err
	}
	var sym, from, to string
	if err := str(name, "symbol", f, &sym); err != nil {
		return c, err
	}
	if sym == "" {
		return c, deskbot.Errorf(deskbot.EINVALID, "get_candles needs symbol, e.g. INFY")
	}
	if c.q.Symbol, err = symbol(sym); err != nil {
		return c, err
	}
	if err := str(name, "interval", f, &c.q.Interval); err != nil {
		return c, err
	}
	if _, ok := exchange.CandleSpans[c.q.Interval]; !ok {
		return c, deskbot.Errorf(deskbot.EINVALID, "get_candles needs interval, one of %s; %s is not one", strings.Join(exchange.Intervals, ", "), strconv.QuoteToASCII(c.q.Interval))
	}
	if err := integer(name, "last", f, 1, MaxLast, &c.last); err != nil {
		return c, err
	}
	for _, x := range []struct {
		k string
		v *string
	}{{"from", &from}, {"to", &to}, {"file", &c.file}} {
		if err := str(name, x.k, f, x.v); err != nil {
			return c, err
		}
	}
	if (c.last > 0) == (from != "") {
		return c, deskbot.Errorf(deskbot.EINVALID, "get_candles needs either last (the most recent N candles) or from (a date), not both and not neither")
	}
	c.q.To = now.Truncate(time.Minute)
	if to != "" {
		if c.q.To, err = indiaTime("to", to, true); err != nil {
			return c, err
		}
	}
	if from != "" {
		if c.q.From, err = indiaTime("from", from, false); err != nil {
			return c, err
		}
	} else {
		c.q.From = lastFrom(c.q.Interval, c.last, c.q.To)
	}
	if c.file != "" && (!strings.HasSuffix(c.file, ".csv") || !validFile(c.file)) {
		return c, deskbot.Errorf(deskbot.EINVALID, "file %s must be a path inside your folder ending .csv, e.g. market/infy.csv", strconv.QuoteToASCII(c.file))
	}
	return c, exchange.CheckCandles(c.q)
}

// validFile is a relative path of plain characters that stays where it
// is written (deskfs.Create checks it again on the disk).
func validFile(p string) bool {
	if len(p) > 200 || strings.HasPrefix(p, "/") {
		return false
	}
	for _, part := range strings.Split(p, "/") {
		if part == "" || part == "." || part == ".." {
			return false
		}
	}
	for _, r := range p {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-/", r)) {
			return false
		}
	}
	return true
}

// indiaTime reads a date or a date and time as India time; a date alone
// as to is the end of that day.
func indiaTime(key, s string, end bool) (time.Time, error) {
	if t, err := time.ParseInLocation("2006-01-02 15:04", s, deskbot.IST); err == nil {
		return t, nil
	}
	t, err := time.ParseInLocation("2006-01-02", s, deskbot.IST)
	if err != nil {
		return time.Time{}, deskbot.Errorf(deskbot.EINVALID, "%s must be YYYY-MM-DD or \"YYYY-MM-DD HH:MM\" (India time), e.g. 2026-12-01 or \"2026-12-01 09:15\"; %s is neither", key, strconv.QuoteToASCII(s))
	}
	if end {
		t = t.Add(24*time.Hour - time.Minute)
	}
	return t, nil
}

// lastFrom is a start early enough for last candles of interval before
// to, through nights, weekends and holidays (375 minutes a session, 5
// sessions in 7 days, a week's margin), within the interval's cap.
func lastFrom(interval string, last int, to time.Time) time.Time {
	mins := map[string]int{"minute": 1, "3minute": 3, "5minute": 5, "10minute": 10, "15minute": 15, "30minute": 30, "60minute": 60}[interval]
	var days int
	if mins == 0 {
		days = last*7/5 + 10
	} else {
		perDay := max(1, 375/mins)
		days = (last+perDay-1)/perDay*7/5 + 7
	}
	d := time.Duration(min(days, exchange.CandleSpans[interval])) * 24 * time.Hour
	return to.Add(-d)
}

// marketResult hands a mistake the model can fix back to it and any
// other failure up.
func marketResult(err error) (deskbot.ToolResult, error) {
	switch deskbot.ErrorCode(err) {
	case deskbot.EINVALID, deskbot.ENOTFOUND, deskbot.EUNAVAILABLE:
		return modelError(err)
	}
	return deskbot.ToolResult{}, err
}

func modelError(err error) (deskbot.ToolResult, error) {
	return deskbot.ToolResult{Text: deskbot.ErrorMessage(err), IsError: true}, nil
}

// clock is when, as the market tools write it: "14:02 India time" (with
// the date when it is not now's India day).
func clock(t, now time.Time) string {
	if t.In(deskbot.IST).Format("2006-01-02") != now.In(deskbot.IST).Format("2006-01-02") {
		return t.In(deskbot.IST).Format("Mon 2 Jan 2006") + " " + words.Time(t) + " India time"
	}
	return words.Time(t) + " India time"
}

// QuoteText is what get_quote answers.
func QuoteText(symbols []string, qs map[string]deskbot.Quote, now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Quotes at %s:\n", clock(now, now))
	for _, s := range symbols {
		q, ok := qs[s]
		if !ok {
			fmt.Fprintf(&b, "%s: no quote (the market gave none)\n", s)
			continue
		}
		if q.Last.Value > 0 {
			fmt.Fprintf(&b, "%s: last %s, traded %s (%s ago)", s, words.GroupedPrice(q.Last.Value), clock(q.Last.At, now), age(now.Sub(q.Last.At)))
		} else {
			fmt.Fprintf(&b, "%s: no trade yet (last price 0)", s)
		}
		fmt.Fprintf(&b, "; change %s (%+.2f%%) from the previous close %s; open %s, high %s, low %s; volume %s",
			signed(q.Change), q.ChangePct, words.GroupedPrice(q.Close), words.GroupedPrice(q.Open), words.GroupedPrice(q.High), words.GroupedPrice(q.Low), whole(q.Volume))
		if q.OpenInterest > 0 {
			fmt.Fprintf(&b, "; open interest %s", whole(q.OpenInterest))
		}
		b.WriteString("\n")
		for _, side := range []struct {
			name string
			d    []deskbot.Depth
		}{{"bids", q.Bids}, {"offers", q.Asks}} {
			if len(side.d) == 0 {
				continue
			}
			parts := make([]string, len(side.d))
			for i, d := range side.d {
				parts[i] = fmt.Sprintf("%s × %s", words.GroupedPrice(d.Price), whole(d.Quantity))
			}
			fmt.Fprintf(&b, "  %s: %s\n", side.name, strings.Join(parts, ", "))
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func signed(x float64) string {
	if x >= 0 {
		return "+" + words.GroupedPrice(x)
	}
	return words.GroupedPrice(x)
}

func age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", max(0, int(d.Seconds())))
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h", int(d.Hours()))
	}
	return fmt.Sprintf("%d days", int(d.Hours()/24))
}

// candlesText shows a few candles whole, or writes a long series as CSV
// into the desk's folder and summarises it.
func candlesText(dir string, c candleQuery, cs []deskbot.Candle) (string, error) {
	span := fmt.Sprintf("%s to %s India time", stamp(c.q.From), stamp(c.q.To))
	if len(cs) == 0 {
		return fmt.Sprintf("No %s %s candles from %s: the market was closed then, or the instrument did not trade.", c.q.Symbol, c.q.Interval, span), nil
	}
	oi := false
	for _, k := range cs {
		oi = oi || k.OpenInterest > 0
	}
	header := "time,open,high,low,close,volume"
	if oi {
		header += ",oi"
	}
	row := func(k deskbot.Candle) string {
		r := fmt.Sprintf("%s,%s,%s,%s,%s,%d", stamp(k.At), num(k.Open), num(k.High), num(k.Low), num(k.Close), k.Volume)
		if oi {
			r += fmt.Sprintf(",%d", k.OpenInterest)
		}
		return r
	}
	if len(cs) <= InlineCandles && c.file == "" {
		var b strings.Builder
		fmt.Fprintf(&b, "%d %s %s candles, %s to %s India time (time is each candle's start, India time):\n%s\n", len(cs), c.q.Symbol, c.q.Interval, stamp(cs[0].At), stamp(cs[len(cs)-1].At), header)
		for _, k := range cs {
			b.WriteString(row(k) + "\n")
		}
		return strings.TrimSuffix(b.String(), "\n"), nil
	}
	rel := c.file
	if rel == "" {
		name := strings.NewReplacer(":", "_", "&", "_", "/", "_").Replace(c.q.Symbol)
		rel = fmt.Sprintf("%s/%s_%s_%s_%s.csv", candleDir, name, c.q.Interval, c.q.From.In(deskbot.IST).Format("20060102"), c.q.To.In(deskbot.IST).Format("20060102"))
	}
	f, err := deskfs.Create(dir, rel)
	if err != nil {
		return "", err
	}
	w := bufio.NewWriter(f)
	w.WriteString(header + "\n")
	for _, k := range cs {
		w.WriteString(row(k) + "\n")
	}
	err = w.Flush()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", deskbot.Errorf(deskbot.EUNAVAILABLE, "the candles could not be written to %s: %v", rel, err)
	}
	hi, lo := cs[0], cs[0]
	var vol int64
	for _, k := range cs {
		if k.High > hi.High {
			hi = k
		}
		if k.Low < lo.Low {
			lo = k
		}
		vol += k.Volume
	}
	first, last := cs[0], cs[len(cs)-1]
	chg := 0.0
	if first.Open > 0 {
		chg = (last.Close - first.Open) / first.Open * 100
	}
	return fmt.Sprintf("Wrote %d %s %s candles (%s to %s India time) to %s in your folder; columns %s (time is each candle's start, India time). "+
		"First open %s, last close %s (%+.2f%%); high %s at %s, low %s at %s; volume %s. Analyse the file in your terminal.",
		len(cs), c.q.Symbol, c.q.Interval, stamp(first.At), stamp(last.At), rel, header,
		words.GroupedPrice(first.Open), words.GroupedPrice(last.Close), chg,
		words.GroupedPrice(hi.High), stamp(hi.At), words.GroupedPrice(lo.Low), stamp(lo.At), whole(vol)), nil
}

// whole is a count with Indian digit grouping: "12,34,567".
func whole(n int64) string { return strings.TrimSuffix(words.GroupedPrice(float64(n)), ".00") }

func num(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

func searchArgs(a json.RawMessage) (deskbot.InstrumentQuery, error) {
	const name = deskbot.ToolSearchInstruments
	q := deskbot.InstrumentQuery{Limit: 20}
	f, err := fields(name, a, "query", "exchange", "type", "underlying", "limit")
	if err != nil {
		return q, err
	}
	for _, x := range []struct {
		k string
		v *string
	}{{"query", &q.Text}, {"exchange", &q.Exchange}, {"type", &q.Type}, {"underlying", &q.Underlying}} {
		if err := str(name, x.k, f, x.v); err != nil {
			return q, err
		}
	}
	if err := integer(name, "limit", f, 1, MaxSearch, &q.Limit); err != nil {
		return q, err
	}
	if strings.TrimSpace(q.Text) == "" && q.Underlying == "" {
		return q, deskbot.Errorf(deskbot.EINVALID, `search_instruments needs query (part of a symbol or name, e.g. "INFY") or underlying (e.g. "NIFTY")`)
	}
	if q.Exchange != "" && !contains(deskbot.Exchanges, q.Exchange) {
		return q, deskbot.Errorf(deskbot.EINVALID, "exchange must be one of %s", strings.Join(deskbot.Exchanges, ", "))
	}
	if q.Type != "" && !contains([]string{deskbot.InstrumentEQ, deskbot.InstrumentFUT, deskbot.InstrumentCE, deskbot.InstrumentPE}, q.Type) {
		return q, deskbot.Errorf(deskbot.EINVALID, "type must be one of EQ, FUT, CE, PE")
	}
	return q, nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

// InstrumentsText is what search_instruments answers.
func InstrumentsText(q deskbot.InstrumentQuery, ins []deskbot.Instrument) string {
	if len(ins) == 0 {
		return "No instruments match. Try part of the symbol (INFY), the company's name, or an underlying (NIFTY) without an exchange."
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d instruments (symbol to trade, type, details):\n", len(ins))
	for _, in := range ins {
		fmt.Fprintf(&b, "%s %s", in.Symbol, in.Type)
		if in.Expiry != "" {
			fmt.Fprintf(&b, ", expiry %s", in.Expiry)
		}
		if in.Option() {
			fmt.Fprintf(&b, ", strike %s", words.GroupedPrice(in.Strike))
		}
		if in.LotSize > 0 {
			fmt.Fprintf(&b, ", lot %d", in.LotSize)
		}
		if in.TickSize > 0 {
			fmt.Fprintf(&b, ", tick %s", num(in.TickSize))
		}
		if in.Underlying != "" {
			fmt.Fprintf(&b, ", underlying %s", in.Underlying)
		}
		b.WriteString("\n")
	}
	if len(ins) == q.Limit {
		fmt.Fprintf(&b, "(the first %d; narrow the search with exchange, type or underlying, or raise limit up to %d)\n", q.Limit, MaxSearch)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

type chainQuery struct {
	underlying, expiry string
	strikes            int
}

func chainArgs(a json.RawMessage) (chainQuery, error) {
	const name = deskbot.ToolGetOptionChain
	c := chainQuery{strikes: 10}
	f, err := fields(name, a, "underlying", "expiry", "strikes")
	if err != nil {
		return c, err
	}
	if err := str(name, "underlying", f, &c.underlying); err != nil {
		return c, err
	}
	if err := str(name, "expiry", f, &c.expiry); err != nil {
		return c, err
	}
	if err := integer(name, "strikes", f, 1, MaxChainStrikes, &c.strikes); err != nil {
		return c, err
	}
	if c.underlying == "" {
		return c, deskbot.Errorf(deskbot.EINVALID, `get_option_chain needs underlying, e.g. "NIFTY"`)
	}
	if err := deskbot.CheckSymbol(c.underlying); err != nil {
		return c, err
	}
	if c.expiry != "" {
		if _, err := time.Parse("2006-01-02", c.expiry); err != nil {
			return c, deskbot.Errorf(deskbot.EINVALID, "expiry must be a date YYYY-MM-DD (search_instruments with underlying lists the expiries); %s is not", strconv.QuoteToASCII(c.expiry))
		}
	}
	return c, nil
}

// ChainText is what get_option_chain answers.
func ChainText(c deskbot.OptionChain, now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s options expiring %s, prices at %s", c.Underlying, c.Expiry, clock(now, now))
	if c.UnderlyingPrice.Value > 0 {
		fmt.Fprintf(&b, "; the underlying last traded at %s (%s)", words.GroupedPrice(c.UnderlyingPrice.Value), clock(c.UnderlyingPrice.At, now))
	}
	b.WriteString(".\nstrike | call: last, open interest, volume, symbol | put: last, open interest, volume, symbol\n")
	side := func(s *deskbot.ChainSide) string {
		if s == nil {
			return "none"
		}
		last := "no trade"
		if s.Last.Value > 0 {
			last = words.GroupedPrice(s.Last.Value)
		}
		return fmt.Sprintf("%s, OI %s, vol %s, %s", last, whole(s.OpenInterest), whole(s.Volume), s.Symbol)
	}
	for _, k := range c.Strikes {
		fmt.Fprintf(&b, "%s | %s | %s\n", words.GroupedPrice(k.Strike), side(k.Call), side(k.Put))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// FundsText is what get_funds answers.
func FundsText(fs []deskbot.SegmentFunds, now time.Time) string {
	if len(fs) == 0 {
		return fmt.Sprintf("The account's funds at %s: the broker reports no segments.", clock(now, now))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "The account's funds at %s (shared by every desk):\n", clock(now, now))
	for _, f := range fs {
		fmt.Fprintf(&b, "%s: available %s, used %s\n", f.Segment, words.Rupees(f.Available), words.Rupees(f.Used))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// tool is one market tool: check refuses arguments (before the gate
// holds a call and when it runs), run runs them.
type tool struct {
	name, desc string
	schema     json.RawMessage
	check      func(json.RawMessage) error
	run        func(ctx context.Context, desk string, a json.RawMessage) (deskbot.ToolResult, error)
}

var _ deskbot.Tool = (*tool)(nil)

func (t *tool) Name() string                           { return t.name }
func (t *tool) Description() string                    { return t.desc }
func (t *tool) Schema() json.RawMessage                { return t.schema }
func (t *tool) CheckArguments(a json.RawMessage) error { return t.check(a) }
func (t *tool) Run(ctx context.Context, desk string, a json.RawMessage) (deskbot.ToolResult, error) {
	return t.run(ctx, desk, a)
}
