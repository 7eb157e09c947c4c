package kitetest

// Kite's GTT ("good till triggered") endpoints, as the official client
// speaks them: POST /gtt/triggers and PUT /gtt/triggers/{id} take a form
// of type ("single" or "two-leg"), condition (JSON: exchange,
// tradingsymbol, last_price, trigger_values) and orders (JSON: one LIMIT
// order per trigger); GET /gtt/triggers lists the user's GTTs, GET and
// DELETE /gtt/triggers/{id} read and delete one. A GTT fires when SetLTP
// moves its instrument's price across a trigger: its leg's order is
// placed as Kite places it (untagged, variety regular, validity DAY) and
// the order's id is written into the leg's result, where Kite writes it.

import (
	"encoding/json"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"
)

// GTT statuses as Kite writes them.
const (
	GTTActive    = "active"
	GTTTriggered = "triggered"
	GTTDeleted   = "deleted"
	GTTCancelled = "cancelled"
	GTTExpired   = "expired"
	GTTRejected  = "rejected"
	GTTDisabled  = "disabled"
)

// GTT is the fake's view of a GTT, for assertions.
type GTT struct {
	ID            int
	UserID        string
	Type          string // "single" or "two-leg"
	Exchange      string
	Tradingsymbol string
	Triggers      []float64
	Legs          []GTTLeg
	Status        string
	// FiredOrder is the id of the order the GTT placed when it fired.
	FiredOrder string
}

// GTTLeg is one leg's LIMIT order.
type GTTLeg struct {
	TransactionType string
	Product         string
	Quantity        int
	Price           float64
}

type gtt struct {
	GTT
	inst      *Instrument
	createdLP float64 // last_price the condition was made at: a single trigger's side
	created   time.Time
	updated   time.Time
	firedLeg  int // -1 until it fires
	firedAt   time.Time
}

// GTTs returns every user's GTTs in creation order.
func (s *Server) GTTs() []GTT {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]GTT, len(s.gtts))
	for i, g := range s.gtts {
		out[i] = g.GTT
		out[i].Triggers = slices.Clone(g.Triggers)
		out[i].Legs = slices.Clone(g.Legs)
	}
	return out
}

// gttCondition and gttOrder are the JSON the client sends.
type gttCondition struct {
	Exchange      string     `json:"exchange"`
	Tradingsymbol string     `json:"tradingsymbol"`
	LastPrice     *float64   `json:"last_price"`
	TriggerValues []*float64 `json:"trigger_values"`
}

type gttOrder struct {
	Exchange        string   `json:"exchange"`
	Tradingsymbol   string   `json:"tradingsymbol"`
	TransactionType string   `json:"transaction_type"`
	Quantity        *float64 `json:"quantity"`
	Price           *float64 `json:"price"`
	OrderType       string   `json:"order_type"`
	Product         string   `json:"product"`
}

// parseGTT checks a GTT form as Kite does. Caller holds mu.
func (s *Server) parseGTT(f url.Values) (*gtt, error) {
	typ := f.Get("type")
	want := map[string]int{"single": 1, "two-leg": 2}[typ]
	if want == 0 {
		return nil, refuse("Invalid `type`: single or two-leg.")
	}
	var c gttCondition
	if err := json.Unmarshal([]byte(f.Get("condition")), &c); err != nil {
		return nil, refuse("Invalid `condition`.")
	}
	var legs []gttOrder
	if err := json.Unmarshal([]byte(f.Get("orders")), &legs); err != nil {
		return nil, refuse("Invalid `orders`.")
	}
	inst := s.instruments[c.Exchange+":"+c.Tradingsymbol]
	if inst == nil {
		return nil, refuse("Invalid `tradingsymbol`: no instrument %s:%s.", c.Exchange, c.Tradingsymbol)
	}
	if c.LastPrice == nil || !(*c.LastPrice > 0) {
		return nil, refuse("Invalid `last_price` in the condition.")
	}
	if len(c.TriggerValues) != want {
		return nil, refuse("Invalid `trigger_values`: a %s GTT has %d.", typ, want)
	}
	g := &gtt{GTT: GTT{Type: typ, Exchange: inst.Exchange, Tradingsymbol: inst.Tradingsymbol}, inst: inst, createdLP: *c.LastPrice, firedLeg: -1}
	for _, t := range c.TriggerValues {
		if t == nil || !(*t > 0) || math.IsInf(*t, 0) || !onTick(*t, inst.TickSize) {
			return nil, refuse("Invalid `trigger_values`: each a price above 0 in the multiple of the tick size (%s).", num(inst.TickSize))
		}
		g.Triggers = append(g.Triggers, *t)
	}
	ltp := inst.LastPrice
	switch typ {
	case "single":
		if g.Triggers[0] == ltp {
			return nil, refuse("Trigger price cannot be the same as the last traded price.")
		}
	case "two-leg":
		if !(g.Triggers[0] < ltp && ltp < g.Triggers[1]) {
			return nil, refuse("The lower trigger must be below and the upper trigger above the last traded price.")
		}
	}
	if len(legs) != want {
		return nil, refuse("Invalid `orders`: a %s GTT has %d.", typ, want)
	}
	for _, o := range legs {
		if o.Exchange != inst.Exchange || o.Tradingsymbol != inst.Tradingsymbol {
			return nil, refuse("Invalid `orders`: each order must be for the condition's instrument.")
		}
		if o.TransactionType != "BUY" && o.TransactionType != "SELL" {
			return nil, refuse("Invalid `transaction_type`.")
		}
		if o.OrderType != "LIMIT" {
			return nil, refuse("Invalid `order_type`: GTT orders are LIMIT orders.")
		}
		if o.Quantity == nil || *o.Quantity != math.Trunc(*o.Quantity) || *o.Quantity <= 0 || *o.Quantity > math.MaxInt32 {
			return nil, refuse("Invalid `quantity`.")
		}
		if o.Price == nil {
			return nil, refuse("Invalid `price`: limit orders need a price.")
		}
		of := &orderForm{inst: inst, txn: o.TransactionType, otype: "LIMIT", product: o.Product, validity: "DAY", qty: int(*o.Quantity), price: *o.Price}
		switch o.Product {
		case "MIS", "CNC", "NRML":
		default:
			return nil, refuse("Invalid `product`.")
		}
		if o.Product == "CNC" && derivatives[inst.Exchange] || o.Product == "NRML" && !derivatives[inst.Exchange] {
			return nil, refuse("Invalid `product` for %s.", inst.Exchange)
		}
		if err := checkPrices(of); err != nil {
			return nil, err
		}
		g.Legs = append(g.Legs, GTTLeg{TransactionType: o.TransactionType, Product: o.Product, Quantity: of.qty, Price: of.price})
	}
	return g, nil
}

// placeGTT is POST /gtt/triggers.
func (s *Server) placeGTT(w *recorder, r *http.Request, sess *session) {
	form, err := requireForm(r)
	if err != nil {
		inputError(w, "%s", err.Error())
		return
	}
	s.mu.Lock()
	g, err := s.parseGTT(form)
	if err != nil {
		s.mu.Unlock()
		inputError(w, "%s", err.Error())
		return
	}
	s.nextGTT++
	now := s.now()
	g.ID, g.UserID, g.Status, g.created, g.updated = s.nextGTT, sess.userID, GTTActive, now, now
	s.gtts = append(s.gtts, g)
	loss := s.lossLocked()
	s.mu.Unlock()
	switch loss {
	case LoseByDrop:
		w.drop()
	case LoseBy504:
		w.WriteHeader(http.StatusGatewayTimeout)
	default:
		writeData(w, map[string]any{"trigger_id": g.ID})
	}
}

// ownGTT finds a user's GTT; another user's is as unknown as a made-up id.
// Caller holds mu.
func (s *Server) ownGTT(userID, raw string) *gtt {
	id, err := strconv.Atoi(raw)
	if err != nil {
		return nil
	}
	for _, g := range s.gtts {
		if g.ID == id && g.UserID == userID {
			return g
		}
	}
	return nil
}

// modifyGTT is PUT /gtt/triggers/{id}: an active GTT's condition and
// orders replaced.
func (s *Server) modifyGTT(w *recorder, r *http.Request, sess *session, id string) {
	form, err := requireForm(r)
	if err != nil {
		inputError(w, "%s", err.Error())
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.ownGTT(sess.userID, id)
	if g == nil {
		writeError(w, http.StatusNotFound, InputException, "Invalid trigger ID.")
		return
	}
	if g.Status != GTTActive {
		inputError(w, "Trigger is %s and cannot be modified.", g.Status)
		return
	}
	n, err := s.parseGTT(form)
	if err != nil {
		inputError(w, "%s", err.Error())
		return
	}
	g.Type, g.Triggers, g.Legs, g.inst, g.createdLP, g.updated = n.Type, n.Triggers, n.Legs, n.inst, n.createdLP, s.now()
	g.Exchange, g.Tradingsymbol = n.Exchange, n.Tradingsymbol
	writeData(w, map[string]any{"trigger_id": g.ID})
}

// deleteGTT is DELETE /gtt/triggers/{id}.
func (s *Server) deleteGTT(w *recorder, sess *session, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.ownGTT(sess.userID, id)
	if g == nil {
		writeError(w, http.StatusNotFound, InputException, "Invalid trigger ID.")
		return
	}
	if g.Status != GTTActive {
		inputError(w, "Trigger is %s and cannot be deleted.", g.Status)
		return
	}
	g.Status, g.updated = GTTDeleted, s.now()
	writeData(w, map[string]any{"trigger_id": g.ID})
}

// listGTTs is GET /gtt/triggers: the user's GTTs, newest first.
func (s *Server) listGTTs(w *recorder, sess *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []map[string]any{}
	for _, g := range slices.Backward(s.gtts) {
		if g.UserID == sess.userID {
			out = append(out, s.wireGTT(g))
		}
	}
	writeData(w, out)
}

// getGTT is GET /gtt/triggers/{id}.
func (s *Server) getGTT(w *recorder, sess *session, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.ownGTT(sess.userID, id)
	if g == nil {
		writeError(w, http.StatusNotFound, InputException, "Invalid trigger ID.")
		return
	}
	writeData(w, s.wireGTT(g))
}

// wireGTT is g as Kite writes it. Caller holds mu.
func (s *Server) wireGTT(g *gtt) map[string]any {
	orders := make([]map[string]any, len(g.Legs))
	for i, l := range g.Legs {
		var result any
		if i == g.firedLeg {
			result = map[string]any{
				"account_id": g.UserID, "exchange": g.Exchange, "tradingsymbol": g.Tradingsymbol, "meta": "",
				"order_type": "LIMIT", "price": l.Price, "product": l.Product, "quantity": l.Quantity,
				"transaction_type": l.TransactionType, "validity": "DAY",
				"timestamp": g.firedAt.In(IST).Format(kiteTime), "triggered_at": g.inst.LastPrice,
				"order_result": map[string]any{"order_id": g.FiredOrder, "rejection_reason": "", "status": "success"},
			}
		}
		orders[i] = map[string]any{"exchange": g.Exchange, "tradingsymbol": g.Tradingsymbol, "product": l.Product,
			"order_type": "LIMIT", "transaction_type": l.TransactionType, "quantity": l.Quantity, "price": l.Price, "result": result}
	}
	return map[string]any{
		"id": g.ID, "user_id": g.UserID, "parent_trigger": nil, "type": g.Type, "status": g.Status,
		"created_at": g.created.In(IST).Format(kiteTime), "updated_at": g.updated.In(IST).Format(kiteTime),
		"expires_at": g.created.AddDate(1, 0, 0).In(IST).Format(kiteTime),
		"condition": map[string]any{"exchange": g.Exchange, "tradingsymbol": g.Tradingsymbol, "last_price": g.createdLP,
			"trigger_values": g.Triggers, "instrument_token": g.inst.Token},
		"orders": orders, "meta": nil,
	}
}

// fireGTTsLocked fires every active GTT on inst whose trigger the last
// price reached: a single trigger on the side away from the price it was
// made at, a two-leg's lower leg at or below its trigger and its upper
// at or above. The leg's order is placed untagged, as Kite places it.
// Caller holds mu.
func (s *Server) fireGTTsLocked(inst *Instrument) {
	ltp := inst.LastPrice
	for _, g := range s.gtts {
		if g.inst != inst || g.Status != GTTActive {
			continue
		}
		leg := -1
		switch g.Type {
		case "single":
			t := g.Triggers[0]
			if g.createdLP > t && ltp <= t || g.createdLP < t && ltp >= t {
				leg = 0
			}
		case "two-leg":
			if ltp <= g.Triggers[0] {
				leg = 0
			} else if ltp >= g.Triggers[1] {
				leg = 1
			}
		}
		if leg < 0 {
			continue
		}
		l := g.Legs[leg]
		now := s.now()
		g.Status, g.firedLeg, g.firedAt, g.updated = GTTTriggered, leg, now, now
		o := s.createLocked(g.UserID, "regular", &orderForm{inst: inst, txn: l.TransactionType, otype: "LIMIT", product: l.Product, validity: "DAY", qty: l.Quantity, price: l.Price})
		g.FiredOrder = o.ID
	}
}
