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
}

// UnrealisedPnL at the last price.
func (p Position) UnrealisedPnL() float64 { return (p.LastPrice - p.AvgPrice) * p.Quantity }

// Order is a request to trade.
type Order struct {
	Symbol   string  `json:"symbol"`
	Side     string  `json:"side"`
	Quantity float64 `json:"quantity"`
	Price    float64 `json:"price"`
}

// Fill is an executed order.
type Fill struct {
	Order
	RealisedPnL float64 `json:"realised_pnl"` // realised by this fill
}

// FlattenReport says what a flatten closed.
type FlattenReport struct {
	Closed      []Fill  `json:"closed"`
	RealisedPnL float64 `json:"realised_pnl"` // realised by the flatten
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
	Book(ctx context.Context, desk string) (Book, error)
	// Check refuses, before anyone is asked to approve it, an order this
	// broker would refuse for what it names or when (CheckOrder's rules,
	// and where the broker trades on an exchange: an instrument it does
	// not list, a quantity off the lot, a price off the tick, a closed
	// market). Its words are for the model. PlaceOrder checks again.
	Check(o Order) error
	PlaceOrder(ctx context.Context, desk string, o Order) (Fill, error)
	Flatten(ctx context.Context, desk string) (FlattenReport, error)
	// Trades returns up to the last limit fills of the desk, oldest first:
	// today's realised P&L and a desk's trades are read from them.
	Trades(ctx context.Context, desk string, limit int) ([]Trade, error)
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

// Market is the price a symbol trades at now, which no desk names. A
// price in an order is only a limit: the paper broker fills at the
// market's price, and the hard limits value orders and positions at it,
// so a desk cannot make a position small by calling it cheap. Every
// Broker is one.
type Market interface {
	// LastPrice is symbol's last traded price in rupees; ok is false when
	// the market has none for it.
	LastPrice(ctx context.Context, symbol string) (price float64, ok bool, err error)
	// LastPrices is the last price of each of symbols, read together: a
	// book is valued at one moment, and in one call where the market
	// counts calls (Kite takes one quote call a second). A symbol the
	// market has no price for is absent.
	LastPrices(ctx context.Context, symbols []string) (map[string]float64, error)
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

// The words a trader reads at a glance on a phone: an order as "SELL 50
// NIFTY24DECFUT @ 24,512.50", amounts in rupees with Indian digit grouping
// ("₹12,25,625.00": thousands, then lakhs and crores in pairs of digits).

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
func ShownState(tool string, args []byte, b Book) string {
	held := func(symbol string) float64 {
		q := 0.0
		for _, p := range b.Positions {
			if p.Symbol == symbol {
				q += p.Quantity
			}
		}
		return math.Round(q*1e8) / 1e8
	}
	switch tool {
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
		o, err := ParseOrder(args)
		if err != nil {
			return ""
		}
		return "holding " + o.Symbol + " " + strconv.FormatFloat(held(o.Symbol), 'f', -1, 64)
	}
	return ""
}

// ShownStateNote is the note under which the chat keeps the ShownState of
// a request's message as it last showed it.
func ShownStateNote(requestID string) string { return "shown:" + requestID }
