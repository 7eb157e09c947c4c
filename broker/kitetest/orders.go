package kitetest

import (
	"fmt"
	"math"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Order statuses as Kite writes them. StatusUpdate is never an order's
// status in GET /orders: it is what a ticker order update (like a postback)
// carries for a partial fill or a modification, while the order stays OPEN.
const (
	StatusPutOrderReq    = "PUT ORDER REQ RECEIVED"
	StatusValidation     = "VALIDATION PENDING"
	StatusOpenPending    = "OPEN PENDING"
	StatusOpen           = "OPEN"
	StatusComplete       = "COMPLETE"
	StatusRejected       = "REJECTED"
	StatusCancelled      = "CANCELLED"
	StatusTriggerPending = "TRIGGER PENDING"
	StatusAMOReceived    = "AMO REQ RECEIVED"
	StatusModifyPending  = "MODIFY VALIDATION PENDING"
	StatusUpdate         = "UPDATE"
)

// marketProtectionError is Kite's refusal of a market order without
// market_protection, required through the API since 2026.
const marketProtectionError = "Market orders without market protection are not allowed via API. Please set market protection or use a Limit order."

// Order is the fake's view of an order, for assertions.
type Order struct {
	ID               string
	UserID           string
	Variety          string // regular or amo
	Exchange         string
	Tradingsymbol    string
	TransactionType  string
	OrderType        string
	Product          string
	Validity         string
	Quantity         int
	Price            float64
	TriggerPrice     float64
	MarketProtection float64
	Tag              string
	// AlgoID is the algo_id the placement carried ("" for none);
	// ModifyAlgoIDs is the algo_id each accepted modification carried, in
	// order; Modifications counts them (at most MaxModifications).
	AlgoID        string
	ModifyAlgoIDs []string
	Modifications int

	Status            string
	StatusMessage     string
	FilledQuantity    int
	CancelledQuantity int
	AveragePrice      float64
	Modified          bool
	PlacedAt          time.Time
}

// PendingQuantity is what is neither filled nor cancelled.
func (o Order) PendingQuantity() int {
	if o.Status == StatusRejected {
		return 0
	}
	return o.Quantity - o.FilledQuantity - o.CancelledQuantity
}

type order struct {
	Order
	// day is the India date whose order book lists it: the day it was
	// placed, or for an after-market order the day it went to the
	// exchange (or ended); while it waits for the open (AMO REQ RECEIVED)
	// every day's book lists it, as Kite keeps it across midnight.
	day             string
	inst            *Instrument
	exchangeOrderID string
	updatedAt       time.Time
	history         []wireOrder
}

type trade struct {
	id      string
	order   *order
	qty     int
	price   float64
	at      time.Time
	product string
}

// wireOrder is an order as GET /orders, GET /orders/{id} and the ticker's
// order updates carry it. Kite writes null for absent strings.
type wireOrder struct {
	AccountID               string         `json:"account_id"`
	PlacedBy                string         `json:"placed_by"`
	OrderID                 string         `json:"order_id"`
	ExchangeOrderID         *string        `json:"exchange_order_id"`
	ParentOrderID           *string        `json:"parent_order_id"`
	Status                  string         `json:"status"`
	StatusMessage           *string        `json:"status_message"`
	StatusMessageRaw        *string        `json:"status_message_raw"`
	OrderTimestamp          string         `json:"order_timestamp"`
	ExchangeUpdateTimestamp *string        `json:"exchange_update_timestamp"`
	ExchangeTimestamp       *string        `json:"exchange_timestamp"`
	Variety                 string         `json:"variety"`
	Modified                bool           `json:"modified"`
	Exchange                string         `json:"exchange"`
	Tradingsymbol           string         `json:"tradingsymbol"`
	InstrumentToken         uint32         `json:"instrument_token"`
	OrderType               string         `json:"order_type"`
	TransactionType         string         `json:"transaction_type"`
	Validity                string         `json:"validity"`
	ValidityTTL             int            `json:"validity_ttl"`
	Product                 string         `json:"product"`
	Quantity                int            `json:"quantity"`
	DisclosedQuantity       int            `json:"disclosed_quantity"`
	Price                   float64        `json:"price"`
	TriggerPrice            float64        `json:"trigger_price"`
	AveragePrice            float64        `json:"average_price"`
	FilledQuantity          int            `json:"filled_quantity"`
	PendingQuantity         int            `json:"pending_quantity"`
	CancelledQuantity       int            `json:"cancelled_quantity"`
	MarketProtection        float64        `json:"market_protection"`
	Meta                    map[string]any `json:"meta"`
	Tag                     *string        `json:"tag"`
	Tags                    []string       `json:"tags"`
	GUID                    string         `json:"guid"`
	// The postback-only fields, sent on the ticker as Kite does.
	UserID           string  `json:"user_id,omitempty"`
	UnfilledQuantity *int    `json:"unfilled_quantity,omitempty"`
	AppID            *int    `json:"app_id,omitempty"`
	Checksum         *string `json:"checksum,omitempty"`
}

func strOrNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// wire renders o's current state with the given status (which differs from
// o.Status only for the UPDATE pushes).
func (o *order) wire(status string) wireOrder {
	ts := o.updatedAt.In(IST).Format(kiteTime)
	var exTS *string
	if o.exchangeOrderID != "" {
		exTS = &ts
	}
	tags := []string{}
	if o.Tag != "" {
		tags = []string{o.Tag}
	}
	return wireOrder{
		AccountID:               o.UserID,
		PlacedBy:                o.UserID,
		OrderID:                 o.ID,
		ExchangeOrderID:         strOrNil(o.exchangeOrderID),
		Status:                  status,
		StatusMessage:           strOrNil(o.StatusMessage),
		StatusMessageRaw:        strOrNil(o.StatusMessage),
		OrderTimestamp:          ts,
		ExchangeUpdateTimestamp: exTS,
		ExchangeTimestamp:       exTS,
		Variety:                 o.Variety,
		Modified:                o.Modified,
		Exchange:                o.Exchange,
		Tradingsymbol:           o.Tradingsymbol,
		InstrumentToken:         o.inst.Token,
		OrderType:               o.OrderType,
		TransactionType:         o.TransactionType,
		Validity:                o.Validity,
		Product:                 o.Product,
		Quantity:                o.Quantity,
		Price:                   o.Price,
		TriggerPrice:            o.TriggerPrice,
		AveragePrice:            o.AveragePrice,
		FilledQuantity:          o.FilledQuantity,
		PendingQuantity:         o.PendingQuantity(),
		CancelledQuantity:       o.CancelledQuantity,
		MarketProtection:        o.MarketProtection,
		Meta:                    map[string]any{},
		Tag:                     strOrNil(o.Tag),
		Tags:                    tags,
		GUID:                    "kitetest-" + o.ID,
	}
}

// Order returns one order as the fake holds it.
func (s *Server) Order(id string) (Order, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o := s.byID[id]; o != nil {
		return o.copy(), true
	}
	return Order{}, false
}

// Orders returns every user's orders in placement order.
func (s *Server) Orders() []Order {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Order, len(s.orders))
	for i, o := range s.orders {
		out[i] = o.copy()
	}
	return out
}

// copy is the order as an accessor hands it out: nothing shared.
func (o *order) copy() Order {
	c := o.Order
	c.ModifyAlgoIDs = append([]string(nil), o.ModifyAlgoIDs...)
	return c
}

// Hold on makes marketable orders rest OPEN instead of filling, as when the
// book has no one on the other side; FillPartly and Fill then fill them.
// Hold off fills what became marketable.
func (s *Server) Hold(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hold = on
	if !on {
		for _, o := range s.orders {
			if o.Status == StatusOpen {
				s.matchLocked(o, false)
			}
		}
	}
}

// RejectNext makes the next order placed be accepted with an order_id and
// then REJECTED with reason as its status_message, as Kite's risk checks do.
// Calls queue up.
func (s *Server) RejectNext(reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rejectNext = append(s.rejectNext, reason)
}

// FillPartly fills qty more of an OPEN order, at its limit price (LIMIT,
// triggered SL) or the last price (MARKET, triggered SL-M), whatever the
// market.
func (s *Server) FillPartly(orderID string, qty int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fillPartlyLocked(orderID, qty)
}

// Fill fills the rest of an OPEN order, as FillPartly does.
func (s *Server) Fill(orderID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.byID[orderID]
	if o == nil {
		return fmt.Errorf("kitetest: no order %s", orderID)
	}
	return s.fillPartlyLocked(orderID, o.PendingQuantity())
}

func (s *Server) fillPartlyLocked(orderID string, qty int) error {
	o := s.byID[orderID]
	switch {
	case o == nil:
		return fmt.Errorf("kitetest: no order %s", orderID)
	case o.Status != StatusOpen:
		return fmt.Errorf("kitetest: order %s is %s, not OPEN", orderID, o.Status)
	case qty <= 0 || qty > o.PendingQuantity():
		return fmt.Errorf("kitetest: cannot fill %d of order %s with %d pending", qty, orderID, o.PendingQuantity())
	case qty%o.inst.LotSize != 0:
		return fmt.Errorf("kitetest: %d is not a multiple of the lot size %d", qty, o.inst.LotSize)
	}
	price := o.Price
	if o.OrderType == "MARKET" || o.OrderType == "SL-M" {
		price = o.inst.LastPrice
	}
	s.fillLocked(o, qty, price)
	return nil
}

// Cancel cancels an open order from outside the API (the exchange, or the
// person on Kite web), with reason as its status_message.
func (s *Server) Cancel(orderID, reason string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.byID[orderID]
	if o == nil {
		return fmt.Errorf("kitetest: no order %s", orderID)
	}
	if !cancellable(o.Status) {
		return fmt.Errorf("kitetest: order %s is %s", orderID, o.Status)
	}
	s.cancelLocked(o, reason)
	return nil
}

func cancellable(status string) bool {
	return status == StatusOpen || status == StatusTriggerPending || status == StatusAMOReceived
}

// transitionLocked moves o to status, records it in the history and pushes
// it to the user's ticker connections. An AMO waiting for the market gets no
// push, as on Kite; its cancellation or rejection does.
func (s *Server) transitionLocked(o *order, status, msg string) {
	if o.Status == StatusAMOReceived {
		o.day = s.now().In(IST).Format("2006-01-02")
	}
	o.Status = status
	o.StatusMessage = msg
	o.updatedAt = s.now()
	o.history = append(o.history, o.wire(status))
	if o.Variety != "amo" || status == StatusCancelled || status == StatusRejected {
		s.pushLocked(o, status)
	}
}

func (s *Server) cancelLocked(o *order, msg string) {
	o.CancelledQuantity = o.Quantity - o.FilledQuantity
	s.transitionLocked(o, StatusCancelled, msg)
}

func (s *Server) fillLocked(o *order, qty int, price float64) {
	now := s.now()
	total := o.AveragePrice*float64(o.FilledQuantity) + price*float64(qty)
	o.FilledQuantity += qty
	o.AveragePrice = math.Round(total/float64(o.FilledQuantity)*1e4) / 1e4
	s.nextTrade++
	t := &trade{id: strconv.Itoa(10_000_000 + s.nextTrade), order: o, qty: qty, price: price, at: now, product: o.Product}
	acc := s.accountLocked(o.UserID)
	acc.trades = append(acc.trades, t)
	if o.FilledQuantity == o.Quantity {
		s.transitionLocked(o, StatusComplete, "")
		return
	}
	o.updatedAt = now
	o.history = append(o.history, o.wire(StatusOpen))
	s.pushLocked(o, StatusUpdate)
}

// matchLocked fills an OPEN order if the market allows. An order that
// arrives marketable (aggressor) fills at the last price; one resting on the
// book fills at its own limit price when the market comes to it.
func (s *Server) matchLocked(o *order, aggressor bool) {
	pending := o.PendingQuantity()
	if pending <= 0 {
		return
	}
	ltp := o.inst.LastPrice
	switch o.OrderType {
	case "MARKET", "SL-M":
		s.fillLocked(o, pending, ltp)
	case "LIMIT", "SL":
		buy := o.TransactionType == "BUY"
		if (buy && ltp <= o.Price) || (!buy && ltp >= o.Price) {
			price := o.Price
			if aggressor {
				price = ltp
			}
			s.fillLocked(o, pending, price)
		}
	}
}

// triggerLocked opens a stop-loss order whose trigger the last price has
// crossed.
func (s *Server) triggerLocked(o *order) {
	ltp := o.inst.LastPrice
	if (o.TransactionType == "BUY" && ltp >= o.TriggerPrice) || (o.TransactionType == "SELL" && ltp <= o.TriggerPrice) {
		s.transitionLocked(o, StatusOpen, "")
		if !s.hold {
			s.matchLocked(o, true)
		}
	}
}

// orderForm is a validated order placement or modification.
type orderForm struct {
	inst             *Instrument
	txn, otype       string
	product          string
	validity         string
	qty              int
	price, trigger   float64
	marketProtection float64
	tag              string
	algoID           string
}

// refusal is an answer's message in Kite's words (capitalised, ending in
// a full stop), carried as an error until it is written.
type refusal string

func (r refusal) Error() string { return string(r) }

func refuse(format string, args ...any) error {
	if len(args) == 0 {
		return refusal(format)
	}
	return refusal(fmt.Sprintf(format, args...))
}

func requireForm(r *http.Request) (url.Values, error) {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct != "application/x-www-form-urlencoded" {
		return nil, refuse("Content-Type must be application/x-www-form-urlencoded.")
	}
	if err := r.ParseForm(); err != nil {
		return nil, refuse("Invalid form body.")
	}
	return r.PostForm, nil
}

func parseNum(f url.Values, name string) (float64, error) {
	v := f.Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(n) || math.IsInf(n, 0) {
		return 0, refuse("Invalid `%s`.", name)
	}
	return n, nil
}

func validTag(tag string) bool {
	if len(tag) > 20 {
		return false
	}
	for _, c := range tag {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

var derivatives = map[string]bool{"NFO": true, "BFO": true, "MCX": true, "CDS": true, "BCD": true}

// checkPrices checks the parts of an order both placement and modification
// carry. Caller holds mu.
func checkPrices(f *orderForm) error {
	inst := f.inst
	if f.qty <= 0 {
		return refuse("Invalid `quantity`.")
	}
	if f.qty%inst.LotSize != 0 {
		return refuse("Quantity should be a multiple of lot size (%d).", inst.LotSize)
	}
	switch f.otype {
	case "LIMIT", "SL":
		if f.price <= 0 {
			return refuse("Invalid `price`: limit orders need a price.")
		}
	}
	if f.price < 0 || (f.price > 0 && !onTick(f.price, inst.TickSize)) {
		return refuse("Tick size for this script is %s. Kindly enter price in the multiple of tick size for this script", num(inst.TickSize))
	}
	switch f.otype {
	case "SL", "SL-M":
		if f.trigger <= 0 {
			return refuse("Invalid `trigger_price`: stop-loss orders need a trigger price.")
		}
		if !onTick(f.trigger, inst.TickSize) {
			return refuse("Tick size for this script is %s. Kindly enter trigger price in the multiple of tick size for this script", num(inst.TickSize))
		}
		if f.otype == "SL" && f.txn == "BUY" && f.trigger > f.price {
			return refuse("Trigger price for stoploss buy orders cannot be above the limit price.")
		}
		if f.otype == "SL" && f.txn == "SELL" && f.trigger < f.price {
			return refuse("Trigger price for stoploss sell orders cannot be below the limit price.")
		}
	}
	if f.otype == "MARKET" || f.otype == "SL-M" {
		mp := f.marketProtection
		if mp == 0 {
			return refuse(marketProtectionError)
		}
		if mp != -1 && (mp < 0 || mp > 100) {
			return refuse("Invalid `market_protection`: -1 (automatic) or a percentage up to 100.")
		}
	}
	return nil
}

// parsePlacement validates a placement form. Caller holds mu.
func (s *Server) parsePlacement(f url.Values) (*orderForm, error) {
	exchange, symbol := f.Get("exchange"), f.Get("tradingsymbol")
	if exchange == "" {
		return nil, refuse("Missing `exchange`.")
	}
	if symbol == "" {
		return nil, refuse("Missing `tradingsymbol`.")
	}
	inst := s.instruments[exchange+":"+symbol]
	if inst == nil {
		return nil, refuse("Invalid `tradingsymbol`: no instrument %s:%s.", exchange, symbol)
	}
	of := &orderForm{inst: inst, txn: f.Get("transaction_type"), otype: f.Get("order_type"),
		product: f.Get("product"), validity: f.Get("validity"), tag: f.Get("tag"), algoID: f.Get("algo_id")}
	if of.txn != "BUY" && of.txn != "SELL" {
		return nil, refuse("Invalid `transaction_type`.")
	}
	switch of.otype {
	case "MARKET", "LIMIT", "SL", "SL-M":
	default:
		return nil, refuse("Invalid `order_type`.")
	}
	switch of.product {
	case "MIS":
	case "CNC":
		if derivatives[exchange] {
			return nil, refuse("Invalid `product`: CNC is for equity delivery; use NRML or MIS on %s.", exchange)
		}
	case "NRML":
		if !derivatives[exchange] {
			return nil, refuse("Invalid `product`: NRML is for F&O; use CNC or MIS on %s.", exchange)
		}
	default:
		return nil, refuse("Invalid `product`.")
	}
	switch of.validity {
	case "DAY", "IOC":
	case "TTL":
		if ttl, err := strconv.Atoi(f.Get("validity_ttl")); err != nil || ttl <= 0 {
			return nil, refuse("Invalid `validity_ttl`.")
		}
	default:
		return nil, refuse("Invalid `validity`.")
	}
	if !validTag(of.tag) {
		return nil, refuse("Invalid `tag`: at most 20 letters and digits.")
	}
	if f.Get("autoslice") != "" || f.Get("iceberg_legs") != "" {
		return nil, refuse("kitetest does not fake autoslice or iceberg orders.")
	}
	q, err := strconv.Atoi(f.Get("quantity"))
	if err != nil {
		return nil, refuse("Invalid `quantity`.")
	}
	of.qty = q
	if of.price, err = parseNum(f, "price"); err != nil {
		return nil, err
	}
	if of.trigger, err = parseNum(f, "trigger_price"); err != nil {
		return nil, err
	}
	if of.marketProtection, err = parseNum(f, "market_protection"); err != nil {
		return nil, err
	}
	return of, checkPrices(of)
}

// placeOrder is POST /orders/{variety}.
func (s *Server) placeOrder(w *recorder, r *http.Request, sess *session, variety string) {
	if variety != "regular" && variety != "amo" {
		inputError(w, "Invalid `variety`: kitetest fakes regular and amo orders.")
		return
	}
	form, err := requireForm(r)
	if err != nil {
		inputError(w, "%s", err.Error())
		return
	}
	s.mu.Lock()
	of, err := s.parsePlacement(form)
	if err != nil {
		s.mu.Unlock()
		inputError(w, "%s", err.Error())
		return
	}
	if d := s.dayOrdersLocked(sess.userID); d >= s.dayLimitLocked() {
		s.mu.Unlock()
		inputError(w, "Maximum allowed order requests exceeded for the day.")
		return
	}
	o := s.createLocked(sess.userID, variety, of)
	loss := s.lossLocked()
	s.mu.Unlock()

	switch loss {
	case LoseByDrop:
		w.drop()
	case LoseBy504:
		w.WriteHeader(http.StatusGatewayTimeout)
	default:
		writeData(w, map[string]any{"order_id": o.ID})
	}
}

// createLocked makes the order of a checked form for userID and runs it
// through admitLocked: a placement's, or a GTT's that fired.
func (s *Server) createLocked(userID, variety string, of *orderForm) *order {
	now := s.now()
	s.nextOrder++
	o := &order{
		Order: Order{
			ID: now.In(IST).Format("060102") + fmt.Sprintf("%09d", s.nextOrder), UserID: userID,
			Variety: variety, Exchange: of.inst.Exchange, Tradingsymbol: of.inst.Tradingsymbol,
			TransactionType: of.txn, OrderType: of.otype, Product: of.product, Validity: of.validity,
			Quantity: of.qty, Price: of.price, TriggerPrice: of.trigger, MarketProtection: of.marketProtection,
			Tag: of.tag, AlgoID: of.algoID, PlacedAt: now,
		},
		day:  now.In(IST).Format("2006-01-02"),
		inst: of.inst,
	}
	s.orders = append(s.orders, o)
	s.byID[o.ID] = o
	s.placed++
	s.placedByTag[o.Tag]++
	// The steps Kite's order history shows before an order reaches the
	// exchange; no updates are pushed for them.
	for _, st := range []string{StatusPutOrderReq, StatusValidation, StatusOpenPending} {
		o.Status = st
		o.updatedAt = now
		o.history = append(o.history, o.wire(st))
	}
	s.admitLocked(o)
	return o
}

// admitLocked runs an accepted order through risk checks and the exchange.
func (s *Server) admitLocked(o *order) {
	if len(s.rejectNext) > 0 {
		reason := s.rejectNext[0]
		s.rejectNext = s.rejectNext[1:]
		s.transitionLocked(o, StatusRejected, reason)
		return
	}
	if need, have := s.marginForLocked(o), s.availableLocked(o.UserID, o); need > have+1e-9 {
		s.transitionLocked(o, StatusRejected, fmt.Sprintf(
			"RMS:Margin Exceeds,Required:%.2f, Available:%.2f for entity account-%s across exchange across segment across product", need, have, o.UserID))
		return
	}
	if o.OrderType == "LIMIT" || o.OrderType == "SL" {
		lower, upper := o.inst.bands()
		if o.Price < lower || o.Price > upper {
			s.transitionLocked(o, StatusRejected, fmt.Sprintf(
				"Your order price is outside the price band of %s to %s. Place an order within the band.", num(lower), num(upper)))
			return
		}
	}
	if o.Variety == "amo" {
		s.transitionLocked(o, StatusAMOReceived, "")
		return
	}
	s.toExchangeLocked(o)
}

// OpenAMOs sends every after-market order waiting for the open (AMO REQ
// RECEIVED) to the exchange, as Kite does at the market's opening: each is
// then an order of that day's book, checked and matched as a regular one
// (held OPEN under Hold), and cancelled or modified as variety regular.
func (s *Server) OpenAMOs() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range s.orders {
		if o.Variety == "amo" && o.Status == StatusAMOReceived {
			s.toExchangeLocked(o)
		}
	}
}

// toExchangeLocked sends an accepted order to the exchange: a stop-loss
// waits for its trigger, anything else is OPEN and matched.
func (s *Server) toExchangeLocked(o *order) {
	ltp := o.inst.LastPrice
	if o.OrderType == "SL" || o.OrderType == "SL-M" {
		if (o.TransactionType == "BUY" && ltp >= o.TriggerPrice) || (o.TransactionType == "SELL" && ltp <= o.TriggerPrice) {
			s.transitionLocked(o, StatusRejected, "Trigger price for stoploss "+lowerTxn(o.TransactionType)+
				" orders should be "+map[string]string{"BUY": "higher", "SELL": "lower"}[o.TransactionType]+" than the last traded price.")
			return
		}
		s.exchangeIDLocked(o)
		s.transitionLocked(o, StatusTriggerPending, "")
		return
	}
	s.exchangeIDLocked(o)
	s.transitionLocked(o, StatusOpen, "")
	if !s.hold {
		s.matchLocked(o, true)
	}
	if o.Validity == "IOC" && o.Status == StatusOpen {
		s.cancelLocked(o, "")
	}
}

func lowerTxn(t string) string {
	if t == "BUY" {
		return "buy"
	}
	return "sell"
}

func (s *Server) exchangeIDLocked(o *order) {
	if o.exchangeOrderID == "" {
		o.exchangeOrderID = fmt.Sprintf("1100000%09d", s.nextOrder)
	}
}

// ownOrder finds a user's order; another user's is as unknown as a made-up
// id.
func (s *Server) ownOrder(userID, id string) *order {
	o := s.byID[id]
	if o == nil || o.UserID != userID {
		return nil
	}
	return o
}

// cancelOrder is DELETE /orders/{variety}/{order_id}.
func (s *Server) cancelOrder(w *recorder, sess *session, variety, id string) {
	s.mu.Lock()
	o := s.ownOrder(sess.userID, id)
	switch {
	case o == nil:
		s.mu.Unlock()
		inputError(w, "Couldn't find that `order_id`.")
		return
	case kiteVariety(o) != variety:
		s.mu.Unlock()
		inputError(w, "Invalid `variety`: order %s is %s.", id, kiteVariety(o))
		return
	case !cancellable(o.Status):
		st := o.Status
		s.mu.Unlock()
		inputError(w, "Order cannot be cancelled as it is %s.", st)
		return
	}
	s.cancelLocked(o, "")
	s.mu.Unlock()
	writeData(w, map[string]any{"order_id": id})
}

// kiteVariety is the variety a cancel or a modification of o must name:
// an after-market order is amo only while it waits for the open; once at
// the exchange Kite takes it as regular.
func kiteVariety(o *order) string {
	if o.Variety == "amo" && o.Status != StatusAMOReceived {
		return "regular"
	}
	return o.Variety
}

// modifyOrder is PUT /orders/{variety}/{order_id}: quantity, price,
// trigger_price, order_type and validity of an open order.
func (s *Server) modifyOrder(w *recorder, r *http.Request, sess *session, variety, id string) {
	form, err := requireForm(r)
	if err != nil {
		inputError(w, "%s", err.Error())
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.ownOrder(sess.userID, id)
	switch {
	case o == nil:
		inputError(w, "Couldn't find that `order_id`.")
		return
	case kiteVariety(o) != variety:
		inputError(w, "Invalid `variety`: order %s is %s.", id, kiteVariety(o))
		return
	case !cancellable(o.Status):
		inputError(w, "Order cannot be modified as it is %s.", o.Status)
		return
	case o.Modifications >= MaxModifications:
		writeError(w, http.StatusBadRequest, OrderException, maxModificationsError)
		return
	}
	of := &orderForm{inst: o.inst, txn: o.TransactionType, otype: o.OrderType, product: o.Product,
		validity: o.Validity, qty: o.Quantity, price: o.Price, trigger: o.TriggerPrice, marketProtection: o.MarketProtection}
	if v := form.Get("order_type"); v != "" {
		of.otype = v
	}
	if v := form.Get("validity"); v != "" {
		if v != "DAY" && v != "IOC" {
			inputError(w, "Invalid `validity`.")
			return
		}
		of.validity = v
	}
	if v := form.Get("quantity"); v != "" {
		if of.qty, err = strconv.Atoi(v); err != nil {
			inputError(w, "Invalid `quantity`.")
			return
		}
	}
	for name, dst := range map[string]*float64{"price": &of.price, "trigger_price": &of.trigger, "market_protection": &of.marketProtection} {
		if form.Get(name) != "" {
			if *dst, err = parseNum(form, name); err != nil {
				inputError(w, "%s", err.Error())
				return
			}
		}
	}
	if err := checkPrices(of); err != nil {
		inputError(w, "%s", err.Error())
		return
	}
	if of.qty < o.FilledQuantity {
		inputError(w, "Quantity cannot be below the filled quantity (%d).", o.FilledQuantity)
		return
	}
	o.OrderType, o.Validity, o.Quantity = of.otype, of.validity, of.qty
	o.Price, o.TriggerPrice, o.MarketProtection = of.price, of.trigger, of.marketProtection
	o.Modified = true
	o.Modifications++
	o.ModifyAlgoIDs = append(o.ModifyAlgoIDs, form.Get("algo_id"))
	o.updatedAt = s.now()
	o.history = append(o.history, o.wire(StatusModifyPending))
	o.history = append(o.history, o.wire(o.Status))
	if o.Variety != "amo" {
		s.pushLocked(o, StatusUpdate)
	}
	if o.Status == StatusOpen && !s.hold {
		s.matchLocked(o, true)
	} else if o.Status == StatusTriggerPending {
		s.triggerLocked(o)
	}
	// A lost answer (LoseAnswers) loses a modification's answer as a
	// placement's: the modification is made all the same.
	switch s.lossLocked() {
	case LoseByDrop:
		// drop records the call, under the lock: it is let go for it
		// and taken again for the deferred unlock.
		s.mu.Unlock()
		defer s.mu.Lock()
		w.drop()
	case LoseBy504:
		w.WriteHeader(http.StatusGatewayTimeout)
	default:
		writeData(w, map[string]any{"order_id": id})
	}
}

// listOrders is GET /orders: the user's orders of the day (India date by
// the server's clock), oldest first. Kite's order book starts empty every
// day, but for the after-market orders still waiting for the open, which
// it keeps across midnight until they run.
func (s *Server) listOrders(w *recorder, sess *session) {
	s.mu.Lock()
	out := []wireOrder{}
	today := s.now().In(IST).Format("2006-01-02")
	for _, o := range s.orders {
		if o.UserID == sess.userID && (o.day == today || o.Status == StatusAMOReceived) {
			out = append(out, o.wire(o.Status))
		}
	}
	s.mu.Unlock()
	writeData(w, out)
}

// orderHistory is GET /orders/{order_id}: every state the order went
// through, oldest first.
func (s *Server) orderHistory(w *recorder, sess *session, id string) {
	s.mu.Lock()
	o := s.ownOrder(sess.userID, id)
	var out []wireOrder
	if o != nil {
		out = append(out, o.history...)
	}
	s.mu.Unlock()
	if o == nil {
		inputError(w, "Couldn't find that `order_id`.")
		return
	}
	writeData(w, out)
}

// listTrades is GET /trades, or GET /orders/{order_id}/trades when orderID
// is set.
func (s *Server) listTrades(w *recorder, sess *session, orderID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if orderID != "" && s.ownOrder(sess.userID, orderID) == nil {
		inputError(w, "Couldn't find that `order_id`.")
		return
	}
	out := []map[string]any{}
	today := s.now().In(IST).Format("2006-01-02")
	for _, t := range s.accountLocked(sess.userID).trades {
		if (orderID != "" && t.order.ID != orderID) || t.at.In(IST).Format("2006-01-02") != today {
			continue
		}
		ts := t.at.In(IST).Format(kiteTime)
		out = append(out, map[string]any{
			"trade_id": t.id, "order_id": t.order.ID, "exchange_order_id": t.order.exchangeOrderID,
			"tradingsymbol": t.order.Tradingsymbol, "exchange": t.order.Exchange,
			"instrument_token": t.order.inst.Token, "transaction_type": t.order.TransactionType,
			"product": t.product, "average_price": t.price, "quantity": t.qty,
			"fill_timestamp": ts, "exchange_timestamp": ts, "order_timestamp": ts,
		})
	}
	writeData(w, out)
}
