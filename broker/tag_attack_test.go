package broker_test

import (
	"testing"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker"
	"github.com/google/uuid"
)

// Keys that share a UUID's first digits are still different calls: a
// turn's calls ("<trigger id>:<call id>") and a flatten's closing orders
// ("<key>:<symbol>") each place their own order, never answer with
// another's.
func TestTagOfKeysSharingAUUID(t *testing.T) {
	id := uuid.NewString()
	for _, tc := range []struct{ name, a, b string }{
		{"two calls of one turn", id + ":call_1", id + ":call_2"},
		{"two closing orders of one flatten", id + ":INFY", id + ":TCS"},
		{"a request and its flatten's closing order", id, id + ":INFY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if broker.Tag(tc.a) == broker.Tag(tc.b) {
				t.Errorf("Tag(%q) = Tag(%q) = %s: the second call would answer with the first's order", tc.a, tc.b, broker.Tag(tc.a))
			}
		})
	}
}

// A desk's model places two orders in one turn: both are placed.
func TestTwoOrdersOfOneTurn(t *testing.T) {
	p, tape := mustMarket(t)
	tape.Set("INFY", 1500)
	tape.Set("TCS", 3500)
	trigger := uuid.NewString()
	a, err := p.PlaceOrder(t.Context(), "alpha", trigger+":call_1", deskbot.Order{Symbol: "INFY", Side: deskbot.Buy, Quantity: 10, Type: deskbot.OrderMarket, Product: deskbot.ProductMIS})
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.PlaceOrder(t.Context(), "alpha", trigger+":call_2", deskbot.Order{Symbol: "TCS", Side: deskbot.Sell, Quantity: 5, Type: deskbot.OrderMarket, Product: deskbot.ProductMIS})
	if err != nil {
		t.Fatal(err)
	}
	if a.Tag == b.Tag || b.Order.Symbol != "TCS" {
		t.Errorf("the second call answered %+v, want its own TCS order", b)
	}
	if got := mustBook(t, p, "alpha"); len(got.Positions) != 2 {
		t.Errorf("book %+v, want INFY and TCS", got)
	}
}
