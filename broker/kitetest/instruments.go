package kitetest

import (
	"encoding/csv"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Instrument is one tradable instrument in the fake's list. Zero fields take
// the defaults noted.
type Instrument struct {
	Exchange      string // NSE, BSE, NFO, BFO, MCX, CDS
	Tradingsymbol string
	Name          string
	// Token is the instrument_token. Its low byte is the segment the
	// ticker decodes prices by (1 NSE cash, 2 NFO, 3 CDS, 4 BSE cash...),
	// as on Kite, so pick real-looking tokens (INFY is 408065).
	Token         uint32
	ExchangeToken uint32
	LastPrice     float64
	TickSize      float64 // 0 means 0.05
	LotSize       int     // 0 means 1
	Expiry        time.Time
	Strike        float64
	Type          string // instrument_type: EQ, FUT, CE, PE; "" means EQ
	Segment       string // "" means the exchange, or NFO-FUT / NFO-OPT for F&O types
	// The day's open, high and low, the previous close, the volume and
	// open interest that quotes and ticks carry; a zero price is the last
	// price.
	Open, High, Low, Close float64
	Volume, OI             int64
	// Circuit is the price band either side of the last price, as a
	// fraction: limit orders priced outside it are rejected as Kite's
	// circuit and price-band checks do. 0 means 0.2.
	Circuit float64
}

// Key is "EXCHANGE:TRADINGSYMBOL", the way Kite names an instrument in
// quotes.
func (i Instrument) Key() string { return i.Exchange + ":" + i.Tradingsymbol }

func (i Instrument) bands() (lower, upper float64) {
	c := i.Circuit
	if c == 0 {
		c = 0.2
	}
	return roundTick(i.LastPrice*(1-c), i.TickSize), roundTick(i.LastPrice*(1+c), i.TickSize)
}

// ohlc is the day's open, high, low and the previous close, each the
// last price where it is not set.
func (i *Instrument) ohlc() (o, h, l, c float64) {
	or := func(v float64) float64 {
		if v == 0 {
			return i.LastPrice
		}
		return v
	}
	return or(i.Open), or(i.High), or(i.Low), or(i.Close)
}

func withDefaults(i Instrument) Instrument {
	if i.TickSize == 0 {
		i.TickSize = 0.05
	}
	if i.LotSize == 0 {
		i.LotSize = 1
	}
	if i.Type == "" {
		i.Type = "EQ"
	}
	if i.Segment == "" {
		i.Segment = i.Exchange
		switch i.Type {
		case "FUT":
			i.Segment = i.Exchange + "-FUT"
		case "CE", "PE":
			i.Segment = i.Exchange + "-OPT"
		}
	}
	if i.ExchangeToken == 0 {
		i.ExchangeToken = i.Token >> 8
	}
	return i
}

// AddInstruments adds instruments to the list, replacing any with the same
// exchange and tradingsymbol.
func (s *Server) AddInstruments(list ...Instrument) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, i := range list {
		i = withDefaults(i)
		s.instruments[i.Key()] = &i
	}
}

// SetLTP moves an instrument's last price ("NSE:INFY"). GTTs whose
// trigger it reaches fire (gtt.go), their orders placed first; stop-loss orders
// whose trigger is crossed are triggered, resting orders that become
// marketable fill at their limit price, and ticker connections subscribed to
// the instrument get a tick. It panics on an unknown instrument: a test bug.
func (s *Server) SetLTP(key string, price float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	inst := s.instruments[key]
	if inst == nil {
		panic("kitetest: SetLTP of unknown instrument " + key)
	}
	inst.LastPrice = price
	s.fireGTTsLocked(inst)
	for _, o := range s.orders {
		if o.inst != inst {
			continue
		}
		switch o.Status {
		case StatusTriggerPending:
			s.triggerLocked(o)
		case StatusOpen:
			if !s.hold {
				s.matchLocked(o, false)
			}
		}
	}
	s.tickLocked(inst)
}

// LTP returns an instrument's last price.
func (s *Server) LTP(key string) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := s.instruments[key]; i != nil {
		return i.LastPrice
	}
	return 0
}

func (s *Server) instrumentByToken(tok uint32) *Instrument {
	for _, i := range s.instruments {
		if i.Token == tok {
			return i
		}
	}
	return nil
}

// instrumentsCSV is GET /instruments and GET /instruments/{exchange}: a CSV
// dump, header first, as Kite serves it.
func (s *Server) instrumentsCSV(w *recorder, exchange string) {
	s.mu.Lock()
	var list []Instrument
	for _, i := range s.instruments {
		if exchange == "" || i.Exchange == exchange {
			list = append(list, *i)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(list, func(a, b Instrument) int { return strings.Compare(a.Key(), b.Key()) })
	w.Header().Set("Content-Type", "text/csv")
	w.WriteHeader(http.StatusOK)
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"instrument_token", "exchange_token", "tradingsymbol", "name", "last_price", "expiry", "strike", "tick_size", "lot_size", "instrument_type", "segment", "exchange"})
	for _, i := range list {
		expiry := ""
		if !i.Expiry.IsZero() {
			expiry = i.Expiry.In(IST).Format("2006-01-02")
		}
		_ = cw.Write([]string{
			strconv.FormatUint(uint64(i.Token), 10),
			strconv.FormatUint(uint64(i.ExchangeToken), 10),
			i.Tradingsymbol, i.Name,
			num(i.LastPrice), expiry, num(i.Strike), num(i.TickSize),
			strconv.Itoa(i.LotSize), i.Type, i.Segment, i.Exchange,
		})
	}
	cw.Flush()
}

// quote is GET /quote, /quote/ltp and /quote/ohlc with i=EXCHANGE:SYMBOL or
// i=<instrument_token>, repeated. Unknown instruments are left out of the
// answer, as on Kite. Note that gokiteconnect v4.4.0's GetLTP and GetOHLC
// both call /quote, not their own paths.
func (s *Server) quote(w *recorder, r *http.Request) {
	ids := r.URL.Query()["i"]
	if len(ids) == 0 {
		inputError(w, "No instruments given.")
		return
	}
	if len(ids) > 500 {
		inputError(w, "Too many instruments: at most 500.")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now().In(IST).Format(kiteTime)
	out := map[string]any{}
	for _, id := range ids {
		inst := s.instruments[id]
		if inst == nil {
			if tok, err := strconv.ParseUint(id, 10, 32); err == nil {
				inst = s.instrumentByToken(uint32(tok))
			}
		}
		if inst == nil {
			continue
		}
		o, h, l, c := inst.ohlc()
		ohlc := map[string]any{"open": o, "high": h, "low": l, "close": c}
		switch r.URL.Path {
		case "/quote/ltp":
			out[id] = map[string]any{"instrument_token": inst.Token, "last_price": inst.LastPrice}
		case "/quote/ohlc":
			out[id] = map[string]any{"instrument_token": inst.Token, "last_price": inst.LastPrice, "ohlc": ohlc}
		default:
			lower, upper := inst.bands()
			empty := make([]map[string]any, 5)
			for k := range empty {
				empty[k] = map[string]any{"price": 0, "quantity": 0, "orders": 0}
			}
			out[id] = map[string]any{
				"instrument_token": inst.Token, "timestamp": now, "last_trade_time": now,
				"last_price": inst.LastPrice, "last_quantity": 0, "buy_quantity": 0, "sell_quantity": 0,
				"volume": inst.Volume, "average_price": inst.LastPrice, "oi": inst.OI, "oi_day_high": inst.OI, "oi_day_low": inst.OI,
				"net_change": round2(inst.LastPrice - c), "lower_circuit_limit": lower, "upper_circuit_limit": upper,
				"ohlc": ohlc, "depth": map[string]any{"buy": empty, "sell": empty},
			}
		}
	}
	writeData(w, out)
}

// num writes a number as Kite's CSV does: no exponent, no trailing zeros.
func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// onTick reports whether v is a whole multiple of tick, allowing for the
// binary fractions a decimal price becomes.
func onTick(v, tick float64) bool {
	q := v / tick
	return math.Abs(q-math.Round(q)) < 1e-6
}

func roundTick(v, tick float64) float64 {
	if tick == 0 {
		tick = 0.05
	}
	r := math.Round(v/tick) * tick
	// Trim the binary noise so answers read like Kite's.
	out, _ := strconv.ParseFloat(fmt.Sprintf("%.4f", r), 64)
	return out
}
