package deskbot

import (
	"context"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Side of an order.
const (
	Buy  = "buy"
	Sell = "sell"
)

// Position is a desk's holding in one symbol. Quantity is negative for a
// short position.
type Position struct {
	Symbol      string  `json:"symbol"`
	Quantity    float64 `json:"quantity"`
	AvgPrice    float64 `json:"avg_price"`
	LastPrice   float64 `json:"last_price"`
	RealisedPnL float64 `json:"realised_pnl"`
	// ContractSize is what one unit of Quantity is in the price's units
	// (Instrument.ContractSize: 1,000 for a USDINR contract); 0 reads as 1.
	ContractSize float64 `json:"contract_size,omitempty"`
}

// UnrealisedPnL at the last price, by the contract's size.
func (p Position) UnrealisedPnL() float64 {
	return (p.LastPrice - p.AvgPrice) * p.Quantity * max(p.ContractSize, 1)
}

// Order types, as place_order's order_type and Kite name them.
const (
	OrderMarket = "MARKET" // at the market's price
	OrderLimit  = "LIMIT"  // at Price or better
	OrderSL     = "SL"     // a LIMIT order at Price once the market reaches TriggerPrice
	OrderSLM    = "SL-M"   // a MARKET order once the market reaches TriggerPrice
)

// Products, as place_order's product and Kite name them: intraday (squared
// off by the broker before the close), carried futures and options, and
// cash delivery.
const (
	ProductMIS  = "MIS"
	ProductNRML = "NRML"
	ProductCNC  = "CNC"
)

// Varieties: a regular order, or an after-market order, queued by the
// broker outside market hours for the next open.
const (
	VarietyRegular = "regular"
	VarietyAMO     = "amo"
)

// Order is a request to trade. In a Fill, Price is the price it filled at.
type Order struct {
	Symbol   string  `json:"symbol"`
	Side     string  `json:"side"`
	Quantity float64 `json:"quantity"`
	// Price is a LIMIT or SL order's limit (the most a buy pays, the least
	// a sell takes); 0 for MARKET and SL-M.
	Price float64 `json:"price"`
	// Type is one of the Order* types; "" is LIMIT (orders kept before
	// order types were all limits). ParseOrder always sets it.
	Type         string  `json:"order_type,omitempty"`
	TriggerPrice float64 `json:"trigger_price,omitempty"`
	// Product is one of the Product* products; "" is the desk's default
	// (Policies.Product), which the words and the broker put in its place.
	Product string `json:"product,omitempty"`
	// Variety is VarietyRegular or VarietyAMO; "" is regular.
	Variety string `json:"variety,omitempty"`
}

// Kind is o's order type: Type, or LIMIT where it is "". An order without
// a type is never taken for a MARKET one: without a price it is refused.
func (o Order) Kind() string {
	if o.Type != "" {
		return o.Type
	}
	return OrderLimit
}

// AtMarket reports whether o trades at the market's price, not its own
// (MARKET and SL-M): its notional is counted at the market's last price.
func (o Order) AtMarket() bool { k := o.Kind(); return k == OrderMarket || k == OrderSLM }

// ForDesk is o with the desk's default product where o names none.
func (o Order) ForDesk(product string) Order {
	if o.Product == "" {
		o.Product = product
	}
	return o
}

// OrderState is where a placed order is in its life at the broker.
type OrderState string

const (
	// OrderPending: the order was sent and the broker's answer is not
	// known yet (lost, or a crash between sending and hearing back): the
	// broker's day's orders are read to learn whether it exists.
	OrderPending      OrderState = "pending"
	OrderOpen         OrderState = "open"          // resting, nothing filled
	OrderPartlyFilled OrderState = "partly filled" // resting, some filled
	OrderComplete     OrderState = "complete"      // filled in full
	OrderRejected     OrderState = "rejected"      // refused by the broker or the exchange (Reason says why)
	OrderCancelled    OrderState = "cancelled"     // cancelled with the rest unfilled (Reason may say why)
	// OrderNotPlaced: the order was never made (a lost answer, and the
	// broker's orders showed no order carrying its tag).
	OrderNotPlaced OrderState = "not placed"
)

// Final reports whether s can no longer change.
func (s OrderState) Final() bool {
	switch s {
	case OrderComplete, OrderRejected, OrderCancelled, OrderNotPlaced:
		return true
	}
	return false
}

// PlacedOrder is an order a desk placed, as the broker last reported it.
type PlacedOrder struct {
	ID    string     `json:"id,omitempty"` // the broker's order id; "" while pending or when not placed
	Tag   string     `json:"tag"`          // unique to the allowed call that placed it
	Desk  string     `json:"desk"`
	Order Order      `json:"order"`
	State OrderState `json:"state"`
	// Filled is the quantity filled so far, at AvgPrice on average.
	Filled   float64   `json:"filled"`
	AvgPrice float64   `json:"avg_price"`
	Reason   string    `json:"reason,omitempty"` // the broker's words for a rejection or cancellation
	At       time.Time `json:"at"`               // placed
	Updated  time.Time `json:"updated"`          // last change of state or fill
	// Day is the India date of the trading day the order belongs to, when
	// it is not At's: an after-market order's is the day it executes on.
	Day string `json:"day,omitempty"`
	// AlgoID is the exchange's algo id the order was sent with (Kite:
	// KITE_ALGO_ID, or the desk's algo_id), "" when none was.
	AlgoID string `json:"algo_id,omitempty"`
	// Modifications are the tags of the modifications made to it
	// (ModifyOrder), oldest first: one allowed call makes at most one, and
	// their count is bounded by MaxModifications.
	Modifications []string `json:"modifications,omitempty"`
	// Modifying is the tag of a modification that may be at the broker and
	// whose outcome is not recorded yet (sent at ModifyingAt): the order is
	// read back before anything is sent again.
	Modifying   string    `json:"modifying,omitempty"`
	ModifyingAt time.Time `json:"modifying_at,omitzero"`
}

// TradingDay is the India date of the trading day po belongs to: Day, or
// the date it was placed.
func (po PlacedOrder) TradingDay() string {
	if po.Day != "" {
		return po.Day
	}
	return OrderDay(po.At)
}

// Open reports whether the order still rests at the broker (or may).
func (p PlacedOrder) Open() bool { return !p.State.Final() }

// Fill is an executed order.
type Fill struct {
	Order
	RealisedPnL float64 `json:"realised_pnl"` // realised by this fill
}

// FlattenReport says what a flatten did: the desk's GTTs it deleted and open orders it
// cancelled, then the positions it closed at once (Closed, a paper
// broker's fills) or the closing market orders it placed, whose fills
// come as the orders' updates (Placed, at a real broker).
type FlattenReport struct {
	// DeletedGTTs are the desk's GTTs it deleted first, so none fires
	// into the closed book.
	DeletedGTTs []PlacedGTT   `json:"deleted_gtts,omitempty"`
	Cancelled   []PlacedOrder `json:"cancelled,omitempty"`
	Closed      []Fill        `json:"closed"`
	Placed      []PlacedOrder `json:"placed,omitempty"`
	RealisedPnL float64       `json:"realised_pnl"` // realised by the fills in Closed
	// Left are the positions it could not close in full, with why (the
	// account holds less than the desk's book says).
	Left []string `json:"left,omitempty"`
}

// Book is a desk's positions with its realised P&L to date.
type Book struct {
	Positions   []Position `json:"positions"`
	RealisedPnL float64    `json:"realised_pnl"`
}

// Broker trades for desks. The paper broker is the default; a real one
// plugs in behind the same interface.
type Broker interface {
	// Market is the broker's market: the hard limits value orders and
	// positions at its prices. It is part of the port, so no wrapper can
	// hide it and leave a desk's own price to value its orders.
	Market
	// MarketData and PriceStream are the broker's view of the market for
	// desks and approvers (quotes, candles, chains, the account's funds
	// and holdings, live prices): part of the port, so every broker
	// answers them and no wrapper can hide them.
	MarketData
	PriceStream
	Book(ctx context.Context, desk string) (Book, error)
	// Check refuses, before anyone is asked to approve it, an order this
	// broker would refuse for what it names or when (CheckOrder's rules,
	// and where the broker trades on an exchange: an instrument it does
	// not list, a quantity off the lot, a price off the tick, a closed
	// market). Its words are for the model. PlaceOrder checks again.
	Check(o Order) error
	// PlaceOrder places o for desk as the allowed call key (a held
	// request's id, or the turn's call): one key places at most one order,
	// however often it is asked and whatever fails, and asking again
	// returns that order as it stands. o's Product must be set
	// (Order.ForDesk). An order the broker refuses outright is EINVALID
	// with its reason; one it accepted and then rejected is a PlacedOrder
	// in OrderRejected.
	PlaceOrder(ctx context.Context, desk, key string, o Order) (PlacedOrder, error)
	// Orders is the desk's orders of the India day, oldest first, as they
	// stand now.
	Orders(ctx context.Context, desk string) ([]PlacedOrder, error)
	// CancelOrder cancels one of the desk's own open orders (id is the
	// broker's order id): another desk's order, an unknown one or one no
	// longer open is refused (ENOTFOUND, ECONFLICT) and changes nothing.
	CancelOrder(ctx context.Context, desk, id string) (PlacedOrder, error)
	// ModifyOrder changes one of the desk's own open orders (m.ID) from
	// m.From, the order as the approver was shown it, to m.To, for the
	// allowed call key: one key makes at most one modification however
	// often it is asked and whatever fails, and asking again returns the
	// order as it stands. Another desk's order, an unknown one or one no
	// longer open is refused (ENOTFOUND, ECONFLICT), as is one that
	// changed since it was shown (filled in part, modified) or was
	// modified MaxModifications times: nothing is sent, nothing changes.
	ModifyOrder(ctx context.Context, desk, key string, m Modification) (PlacedOrder, error)
	// Flatten deletes the desk's active GTTs and cancels its open orders,
	// then closes its net positions with market orders, never trading what
	// belongs to another desk or to no desk. key makes it once, as
	// PlaceOrder's does.
	Flatten(ctx context.Context, desk, key string) (FlattenReport, error)
	// PlaceGTT places g, a GTT that only reduces the desk's position, for
	// desk as the allowed call key: one key places at most one GTT,
	// however often it is asked and whatever fails. A GTT that could open
	// or grow a position (CheckGTTReduces against the desk's book and the
	// market now) is refused (EINVALID) and nothing is sent. g's Product
	// must be set (GTT.ForDesk). When a leg fires, its order is the desk's
	// like any other: in Orders, its fills in the desk's book.
	PlaceGTT(ctx context.Context, desk, key string, g GTT) (PlacedGTT, error)
	// GTTs is the desk's GTTs, active and ended, as last read.
	GTTs(ctx context.Context, desk string) ([]PlacedGTT, error)
	// CancelGTT deletes one of the desk's own active GTTs (id is the
	// broker's trigger id): another desk's, an unknown one or one no
	// longer active is refused (ENOTFOUND, ECONFLICT) and changes nothing.
	CancelGTT(ctx context.Context, desk, id string) (PlacedGTT, error)
	// Margin is what o needs of the account's margin and what the account
	// has available, as the broker reckons it: ok is false when this
	// broker keeps no margins (paper).
	Margin(ctx context.Context, o Order) (m OrderMargin, ok bool, err error)
	// Unowned is what the broker's account holds that belongs to no desk:
	// its net positions less every desk's book (trades made by hand,
	// outside deskbot), at their last prices, by symbol. A paper broker's
	// account is its desks': none.
	Unowned(ctx context.Context) ([]Position, error)
	// Trades returns up to the last limit fills of the desk, oldest first:
	// today's realised P&L and a desk's trades are read from them.
	Trades(ctx context.Context, desk string, limit int) ([]Trade, error)
}

// OrderMargin is the margin an order needs (Required) and what the
// account has available for it, in rupees.
type OrderMargin struct {
	Required  float64 `json:"required"`
	Available float64 `json:"available"`
}

// BrokerSession is the day's session at a broker whose sessions a person
// starts (Kite's daily login): the account, its access token, who logged
// in and until when the broker keeps it.
type BrokerSession struct {
	UserID string `json:"user_id"` // the broker's account
	// AccessToken is a secret: it never reaches a log, a chat message, a
	// model or a sandbox.
	AccessToken string    `json:"access_token"`
	By          Person    `json:"by"`
	At          time.Time `json:"at"`
	Until       time.Time `json:"until"`
}

// BrokerLogin starts a person's login at the broker.
type BrokerLogin interface {
	// LoginURL is the address of the broker's login page for by, bound to
	// that login: the broker's redirect back is accepted once, and only
	// while it is fresh.
	LoginURL(ctx context.Context, by Person) (string, error)
	// Session is the day's session: ENOTFOUND when nobody has logged in
	// since the broker ended the last one.
	Session(ctx context.Context) (BrokerSession, error)
}

// Market is what a symbol trades at now and what it is, which no desk
// names. A price in an order is only a limit: the paper broker fills at
// the market's price, and the hard limits value orders and positions at
// it, so a desk cannot make a position small by calling it cheap. Every
// Broker is one.
type Market interface {
	// LastPrice is symbol's last traded price in rupees with when the
	// market had it; ok is false when the market has none for it. A price
	// of 0 or less is never reported as one (Kite's 0 for a contract that
	// has not traded); a stale one is reported with its time, and sizing
	// decides (Price.Usable).
	LastPrice(ctx context.Context, symbol string) (p Price, ok bool, err error)
	// LastPrices is the last price of each of symbols, read together: a
	// book is valued at one moment, and in one call where the market
	// counts calls (Kite takes one quote call a second). A symbol the
	// market has no price for (0 or less included) is absent.
	LastPrices(ctx context.Context, symbols []string) (map[string]float64, error)
	// Instrument is what sizing needs to know of symbol (its contract
	// size, type, strike, expiry, underlying). An instrument the market
	// does not list, or whose contract size it does not know, is EINVALID
	// with words for the model: it is refused, never counted as size 1.
	Instrument(ctx context.Context, symbol string) (Instrument, error)
}

// Trade is one fill in a desk's journal, closing fills of a flatten
// included.
type Trade struct {
	Fill
	At time.Time `json:"at"`
}

// RoundPaise rounds an amount of money to 2 decimals (half away from zero), never
// returning negative zero.
func RoundPaise(x float64) float64 {
	r := math.Round(x*100) / 100
	if r == 0 {
		return 0
	}
	return r
}

// PositionAfter is the desk's quantity in o's symbol once o fills in full,
// from the book as it stands.
func PositionAfter(b Book, o Order) float64 {
	var q float64
	for _, p := range b.Positions {
		if p.Symbol == o.Symbol {
			q += p.Quantity
		}
	}
	switch o.Side {
	case Buy:
		q += o.Quantity
	case Sell:
		q -= o.Quantity
	}
	return q
}

// ShownState is the part of a desk's book that a held call's shown effect
// depends on: for flatten_desk, every open position's symbol and quantity
// (what its plan closes); for place_order, the quantity held in the
// order's symbol before it (what "Position after" adds to). Prices are
// left out: they move while any request waits, and the same quantities
// close at whatever the market is. It is "" for any other call. An allow
// runs a call only while its ShownState is what the approver was shown.
func ShownState(call ToolCall, b Book) string {
	held := func(symbol string) float64 {
		q := 0.0
		for _, p := range b.Positions {
			if p.Symbol == symbol {
				q += p.Quantity
			}
		}
		return math.Round(q*1e8) / 1e8
	}
	switch call.Name {
	case ToolFlattenDesk:
		qty := map[string]float64{}
		for _, p := range b.Positions {
			qty[p.Symbol] = held(p.Symbol)
		}
		var parts []string
		for _, s := range slices.Sorted(maps.Keys(qty)) {
			if qty[s] != 0 {
				parts = append(parts, s+" "+strconv.FormatFloat(qty[s], 'f', -1, 64))
			}
		}
		return "flatten: " + strings.Join(parts, ", ")
	case ToolPlaceOrder:
		// The order as it was read where it entered; one held before orders
		// were kept read is read from its arguments.
		var o Order
		if call.Order != nil {
			o = call.Order.Order
		} else if p, err := ParseOrder(call.Arguments); err == nil {
			o = p
		} else {
			return ""
		}
		return "holding " + o.Symbol + " " + strconv.FormatFloat(held(o.Symbol), 'f', -1, 64)
	case ToolPlaceGTT:
		if g, err := ParseGTT(call.Arguments); err == nil {
			return GTTShownState(g, b)
		}
	}
	return ""
}

// ShownStateNote is the note under which the chat keeps the ShownState of
// a request's message as it last showed it.
func ShownStateNote(requestID string) string { return "shown:" + requestID }

// CheckAlgoID checks an exchange's algo id as the configuration gives it
// (KITE_ALGO_ID, a desk's algo_id): "" (none), or 1 to 30 letters, digits,
// "-" or "_". The exchanges issue them; the check keeps a typo, a space or
// a second form field out of the order's form.
func CheckAlgoID(id string) error {
	if len(id) > 30 {
		return Errorf(EINVALID, "an algo id has at most 30 characters")
	}
	for _, r := range id {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || r == '-' || r == '_') {
			return Errorf(EINVALID, "an algo id has only letters, digits, - and _")
		}
	}
	return nil
}
