package kitetest

import (
	"net/http"
	"slices"
	"strconv"
	"time"
)

// The fake's market data beyond quotes: historical candles (Kite's
// intervals, span caps and pace), holdings, and a count of requests per
// second for tests of our pace.

// HistoricalPerSecond is Kite's pace for historical candles; past it the
// fake answers 429, whatever SetLimits says.
const HistoricalPerSecond = 3

// HistoricalSpans is the longest span, in days, one historical request
// may cover per interval, as Kite caps it.
var HistoricalSpans = map[string]int{
	"minute": 60, "3minute": 100, "5minute": 100, "10minute": 100,
	"15minute": 200, "30minute": 200, "60minute": 400, "day": 2000,
}

// Candle is one candle the fake serves.
type Candle struct {
	At                     time.Time
	Open, High, Low, Close float64
	Volume, OI             int64
}

// Holding is one of a user's delivery holdings.
type Holding struct {
	Exchange, Tradingsymbol string
	Quantity, T1Quantity    int
	AveragePrice, LastPrice float64
}

// SetCandles makes candles the series of interval served for the
// instrument key ("NSE:INFY"); a request gets those within its span.
// It panics on an unknown instrument: a test bug.
func (s *Server) SetCandles(key, interval string, candles []Candle) {
	s.mu.Lock()
	defer s.mu.Unlock()
	inst := s.instruments[key]
	if inst == nil {
		panic("kitetest: SetCandles of unknown instrument " + key)
	}
	if s.candles == nil {
		s.candles = map[string][]Candle{}
	}
	s.candles[strconv.FormatUint(uint64(inst.Token), 10)+"/"+interval] = slices.Clone(candles)
}

// SetHoldings makes list the user's holdings.
func (s *Server) SetHoldings(userID string, list []Holding) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.accountLocked(userID).holdings = slices.Clone(list)
}

// MaxPerSecond is the most requests, of method ("" for any) on paths
// matching pattern (as Requests), that arrived within any one second by
// the server's clock: what a test of our pace asserts.
func (s *Server) MaxPerSecond(method, pattern string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var at []time.Time
	for _, c := range s.calls {
		if (method == "" || c.Method == method) && matchPath(pattern, c.Path) {
			at = append(at, c.At)
		}
	}
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	most := 0
	for i, j := 0, 0; j < len(at); j++ {
		for at[j].Sub(at[i]) >= time.Second {
			i++
		}
		most = max(most, j-i+1)
	}
	return most
}

// historical is GET /instruments/historical/{token}/{interval}?from=&to=
// (India time, "2006-01-02 15:04:05"), answering the candles set for it
// within the span: {"candles":[["2026-03-04T09:15:00+0530",o,h,l,c,v,oi]]}
// (oi only when oi=1). Kite's refusals: an unknown interval or token, a
// bad date, a span past the interval's cap.
func (s *Server) historical(w *recorder, r *http.Request, token, interval string) {
	days, ok := HistoricalSpans[interval]
	if !ok {
		inputError(w, "invalid interval")
		return
	}
	q := r.URL.Query()
	from, ferr := time.ParseInLocation(kiteTime, q.Get("from"), IST)
	to, terr := time.ParseInLocation(kiteTime, q.Get("to"), IST)
	if ferr != nil || terr != nil {
		inputError(w, "invalid from or to date")
		return
	}
	if to.Before(from) {
		inputError(w, "invalid from date: it is after the to date")
		return
	}
	if to.Sub(from) > time.Duration(days)*24*time.Hour {
		inputError(w, "interval exceeds max limit: %d days", days)
		return
	}
	tok, err := strconv.ParseUint(token, 10, 32)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil || s.instrumentByToken(uint32(tok)) == nil {
		inputError(w, "invalid token")
		return
	}
	oi := q.Get("oi") == "1"
	out := [][]any{}
	for _, c := range s.candles[token+"/"+interval] {
		if c.At.Before(from) || c.At.After(to) {
			continue
		}
		row := []any{c.At.In(IST).Format("2006-01-02T15:04:05-0700"), c.Open, c.High, c.Low, c.Close, c.Volume}
		if oi {
			row = append(row, c.OI)
		}
		out = append(out, row)
	}
	writeData(w, map[string]any{"candles": out})
}

// holdings is GET /portfolio/holdings.
func (s *Server) holdings(w *recorder, sess *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []map[string]any{}
	for _, h := range s.accountLocked(sess.userID).holdings {
		var tok uint32
		if inst := s.instruments[h.Exchange+":"+h.Tradingsymbol]; inst != nil {
			tok = inst.Token
		}
		out = append(out, map[string]any{
			"tradingsymbol": h.Tradingsymbol, "exchange": h.Exchange, "instrument_token": tok, "isin": "", "product": "CNC",
			"price": 0, "quantity": h.Quantity, "used_quantity": 0, "t1_quantity": h.T1Quantity, "realised_quantity": h.Quantity,
			"authorised_quantity": 0, "opening_quantity": h.Quantity, "collateral_quantity": 0, "collateral_type": "",
			"discrepancy": false, "average_price": h.AveragePrice, "last_price": h.LastPrice, "close_price": h.LastPrice,
			"pnl": round2((h.LastPrice - h.AveragePrice) * float64(h.Quantity+h.T1Quantity)), "day_change": 0, "day_change_percentage": 0,
		})
	}
	writeData(w, out)
}
