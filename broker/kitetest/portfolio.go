package kitetest

import (
	"encoding/json"
	"math"
	"mime"
	"net/http"
	"slices"
	"strings"
)

// Margins here are a rough model, enough for tests of "can I afford it" and
// "what is blocked": MIS blocks a fifth of the value (leverage 5), CNC the
// whole value, NRML 15% for futures and written options and the whole
// premium for bought options. The real figures come from SPAN files.
func marginRate(inst *Instrument, product, txn string) float64 {
	switch product {
	case "MIS":
		return 0.2
	case "NRML":
		if (inst.Type == "CE" || inst.Type == "PE") && txn == "BUY" {
			return 1
		}
		return 0.15
	}
	return 1
}

type position struct {
	inst                       *Instrument
	product                    string
	buyQty, sellQty            int
	buyValue, sellValue        float64
	multiplier, lastPrice, avg float64
}

func (p *position) net() int { return p.buyQty - p.sellQty }

// positionsLocked aggregates a user's trades by instrument and product.
// Every position is a day position: the fake has no previous days.
func (s *Server) positionsLocked(userID string) []*position {
	var out []*position
	find := func(inst *Instrument, product string) *position {
		for _, p := range out {
			if p.inst == inst && p.product == product {
				return p
			}
		}
		p := &position{inst: inst, product: product, multiplier: 1}
		out = append(out, p)
		return p
	}
	for _, t := range s.accountLocked(userID).trades {
		p := find(t.order.inst, t.product)
		if t.order.TransactionType == "BUY" {
			p.buyQty += t.qty
			p.buyValue += float64(t.qty) * t.price
		} else {
			p.sellQty += t.qty
			p.sellValue += float64(t.qty) * t.price
		}
	}
	for _, p := range out {
		p.lastPrice = p.inst.LastPrice
		switch n := p.net(); {
		case n > 0:
			p.avg = p.buyValue / float64(p.buyQty)
		case n < 0:
			p.avg = p.sellValue / float64(p.sellQty)
		}
	}
	return out
}

// marginForLocked is what an order blocks: nothing for the part that
// closes an open position.
func (s *Server) marginForLocked(o *order) float64 {
	qty := o.PendingQuantity()
	for _, p := range s.positionsLocked(o.UserID) {
		if p.inst != o.inst || p.product != o.Product {
			continue
		}
		n := p.net()
		if (n > 0 && o.TransactionType == "SELL") || (n < 0 && o.TransactionType == "BUY") {
			qty = max(0, qty-absInt(n))
		}
	}
	price := o.Price
	if price == 0 {
		price = max(o.TriggerPrice, o.inst.LastPrice)
	}
	return float64(qty) * price * marginRate(o.inst, o.Product, o.TransactionType)
}

// utilisedLocked is what open positions and open orders other than except
// block.
func (s *Server) utilisedLocked(userID string, except *order) float64 {
	var used float64
	for _, p := range s.positionsLocked(userID) {
		side := "BUY"
		if p.net() < 0 {
			side = "SELL"
		}
		used += float64(absInt(p.net())) * p.avg * marginRate(p.inst, p.product, side)
	}
	for _, o := range s.orders {
		if o != except && o.UserID == userID && cancellable(o.Status) {
			used += s.marginForLocked(o)
		}
	}
	return used
}

func (s *Server) availableLocked(userID string, except *order) float64 {
	return s.accountLocked(userID).funds - s.utilisedLocked(userID, except)
}

func absInt(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

func round2(f float64) float64 { return math.Round(f*100) / 100 }

// positions is GET /portfolio/positions.
func (s *Server) positions(w *recorder, sess *session) {
	s.mu.Lock()
	ps := s.positionsLocked(sess.userID)
	out := make([]map[string]any, 0, len(ps))
	for _, p := range ps {
		n := p.net()
		pnl := round2(p.sellValue - p.buyValue + float64(n)*p.lastPrice*p.multiplier)
		unrealised := round2(float64(n) * (p.lastPrice - p.avg))
		var buyPrice, sellPrice float64
		if p.buyQty > 0 {
			buyPrice = p.buyValue / float64(p.buyQty)
		}
		if p.sellQty > 0 {
			sellPrice = p.sellValue / float64(p.sellQty)
		}
		out = append(out, map[string]any{
			"tradingsymbol": p.inst.Tradingsymbol, "exchange": p.inst.Exchange, "instrument_token": p.inst.Token,
			"product": p.product, "quantity": n, "overnight_quantity": 0, "multiplier": p.multiplier,
			"average_price": p.avg, "close_price": 0, "last_price": p.lastPrice,
			"value": round2(p.sellValue - p.buyValue), "pnl": pnl, "m2m": pnl,
			"unrealised": unrealised, "realised": round2(pnl - unrealised),
			"buy_quantity": p.buyQty, "buy_price": buyPrice, "buy_value": p.buyValue, "buy_m2m": p.buyValue,
			"sell_quantity": p.sellQty, "sell_price": sellPrice, "sell_value": p.sellValue, "sell_m2m": p.sellValue,
			"day_buy_quantity": p.buyQty, "day_buy_price": buyPrice, "day_buy_value": p.buyValue,
			"day_sell_quantity": p.sellQty, "day_sell_price": sellPrice, "day_sell_value": p.sellValue,
		})
	}
	s.mu.Unlock()
	writeData(w, map[string]any{"net": out, "day": out})
}

// userMargins is GET /user/margins and GET /user/margins/{segment}.
func (s *Server) userMargins(w *recorder, sess *session, segment string) {
	s.mu.Lock()
	funds := s.accountLocked(sess.userID).funds
	used := s.utilisedLocked(sess.userID, nil)
	s.mu.Unlock()
	seg := func(cash, used float64) map[string]any {
		return map[string]any{
			"enabled": true,
			"net":     round2(cash - used),
			"available": map[string]any{
				"adhoc_margin": 0, "cash": cash, "opening_balance": cash, "live_balance": round2(cash - used),
				"collateral": 0, "intraday_payin": 0,
			},
			"utilised": map[string]any{
				"debits": round2(used), "exposure": 0, "m2m_realised": 0, "m2m_unrealised": 0,
				"option_premium": 0, "payout": 0, "span": 0, "holding_sales": 0, "turnover": 0,
				"liquid_collateral": 0, "stock_collateral": 0, "delivery": 0,
			},
		}
	}
	all := map[string]any{"equity": seg(funds, used), "commodity": seg(0, 0)}
	switch segment {
	case "":
		writeData(w, all)
	case "equity", "commodity":
		writeData(w, all[segment])
	default:
		inputError(w, "Invalid segment `%s`.", segment)
	}
}

// orderMargins is POST /margins/orders: a JSON array of orders, answered
// with what each would block.
func (s *Server) orderMargins(w *recorder, r *http.Request, sess *session) {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct != "application/json" {
		inputError(w, "Content-Type must be application/json.")
		return
	}
	var in []struct {
		Exchange        string  `json:"exchange"`
		Tradingsymbol   string  `json:"tradingsymbol"`
		TransactionType string  `json:"transaction_type"`
		Variety         string  `json:"variety"`
		Product         string  `json:"product"`
		OrderType       string  `json:"order_type"`
		Quantity        float64 `json:"quantity"`
		Price           float64 `json:"price"`
		TriggerPrice    float64 `json:"trigger_price"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		inputError(w, "Invalid JSON body: an array of orders.")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []map[string]any{}
	for _, p := range in {
		inst := s.instruments[p.Exchange+":"+p.Tradingsymbol]
		switch {
		case inst == nil:
			inputError(w, "Invalid `tradingsymbol`: no instrument %s:%s.", p.Exchange, p.Tradingsymbol)
			return
		case p.TransactionType != "BUY" && p.TransactionType != "SELL":
			inputError(w, "Invalid `transaction_type`.")
			return
		case !slices.Contains([]string{"MIS", "CNC", "NRML"}, p.Product):
			inputError(w, "Invalid `product`.")
			return
		case !slices.Contains([]string{"MARKET", "LIMIT", "SL", "SL-M"}, p.OrderType):
			inputError(w, "Invalid `order_type`.")
			return
		case p.Quantity <= 0 || math.Mod(p.Quantity, float64(inst.LotSize)) != 0:
			inputError(w, "Quantity should be a multiple of lot size (%d).", inst.LotSize)
			return
		}
		o := &order{Order: Order{UserID: sess.userID, TransactionType: p.TransactionType, OrderType: p.OrderType,
			Product: p.Product, Quantity: int(p.Quantity), Price: p.Price, TriggerPrice: p.TriggerPrice}, inst: inst}
		if p.OrderType == "MARKET" || p.OrderType == "SL-M" {
			o.Price = 0
		}
		total := round2(s.marginForLocked(o))
		typ := "equity"
		if inst.Exchange == "MCX" {
			typ = "commodity"
		}
		m := map[string]any{
			"type": typ, "tradingsymbol": inst.Tradingsymbol, "exchange": inst.Exchange,
			"span": 0.0, "exposure": 0.0, "option_premium": 0.0, "additional": 0, "bo": 0, "cash": 0,
			"var": 0.0, "pnl": map[string]any{"realised": 0, "unrealised": 0},
			"leverage": round2(1 / marginRate(inst, p.Product, p.TransactionType)),
			"charges":  map[string]any{"total": 0, "gst": map[string]any{"total": 0}},
			"total":    total,
		}
		switch {
		case (inst.Type == "CE" || inst.Type == "PE") && p.TransactionType == "BUY":
			m["option_premium"] = total
		case strings.HasSuffix(inst.Segment, "-FUT") || strings.HasSuffix(inst.Segment, "-OPT"):
			m["span"], m["exposure"] = round2(total*0.7), round2(total*0.3)
		default:
			m["var"] = total
		}
		out = append(out, m)
	}
	writeData(w, out)
}
