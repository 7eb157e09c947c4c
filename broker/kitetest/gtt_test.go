package kitetest

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot/deskbottest"
	kiteconnect "github.com/zerodha/gokiteconnect/v4"
)

// ocoSell is a two-leg GTT closing a long of qty INFY: a stop at
// stop (limit 1 below) and a target at target (limit 1 below).
func ocoSell(qty, stop, target float64) kiteconnect.GTTParams {
	return kiteconnect.GTTParams{Exchange: "NSE", Tradingsymbol: "INFY", LastPrice: 1500, TransactionType: "SELL", Product: "CNC",
		Trigger: &kiteconnect.GTTOneCancelsOtherTrigger{
			Lower: kiteconnect.TriggerParams{TriggerValue: stop, LimitPrice: stop - 1, Quantity: qty},
			Upper: kiteconnect.TriggerParams{TriggerValue: target, LimitPrice: target - 1, Quantity: qty}}}
}

// A GTT placed through the official client lives at the fake until the
// price reaches a trigger; then its leg's order is placed untagged, as
// Kite places it, fills, and the GTT reads triggered with the order's id.
func TestGTTFiresItsLegAtTheTrigger(t *testing.T) {
	s := newFake(t)
	s.SetNow(deskbottest.NewClock(time.Date(2026, 12, 2, 10, 0, 0, 0, IST)).Now)
	c := login(t, s, testUser)
	place(t, c, marketBuy(10, "long"))

	r, err := c.PlaceGTT(ocoSell(10, 1450, 1600))
	if err != nil {
		t.Fatalf("PlaceGTT: %v", err)
	}
	g, err := c.GetGTT(r.TriggerID)
	if err != nil {
		t.Fatalf("GetGTT: %v", err)
	}
	if g.Status != GTTActive || g.Type != kiteconnect.GTTTypeOCO || len(g.Orders) != 2 || g.Condition.TriggerValues[0] != 1450 {
		t.Fatalf("got %+v, want an active two-leg GTT at 1450/1600", g)
	}
	s.SetLTP("NSE:INFY", 1460)
	if got := s.GTTs()[0].Status; got != GTTActive {
		t.Fatalf("above the stop: got %s, want active", got)
	}
	s.SetLTP("NSE:INFY", 1449)
	fg := s.GTTs()[0]
	if fg.Status != GTTTriggered || fg.FiredOrder == "" {
		t.Fatalf("got %+v, want triggered with its order", fg)
	}
	o := orderFromList(t, c, fg.FiredOrder)
	if o.Tag != "" || o.TransactionType != "SELL" || o.OrderType != "LIMIT" || o.Price != 1449 || o.Quantity != 10 || o.Status != StatusComplete {
		t.Errorf("got fired order %+v, want an untagged SELL 10 LIMIT 1449, complete", o)
	}
	list, err := c.GetGTTs()
	if err != nil || len(list) != 1 || list[0].Status != GTTTriggered {
		t.Errorf("GetGTTs: got %+v, %v; want the one GTT triggered", list, err)
	}
	// Firing again is not a thing: the upper leg never fires now.
	s.SetLTP("NSE:INFY", 1600)
	if got, want := s.AllOrdersPlaced(), 2; got != want {
		t.Errorf("orders placed: got %d, want %d", got, want)
	}
}

// The fake refuses what Kite refuses, and changes nothing.
func TestGTTRefusesMalformed(t *testing.T) {
	s := newFake(t)
	s.SetLimits(nil) // a table of calls within a second
	c := login(t, s, testUser)
	single := func(trigger, limit, qty float64, txn, product string) kiteconnect.GTTParams {
		return kiteconnect.GTTParams{Exchange: "NSE", Tradingsymbol: "INFY", LastPrice: 1500, TransactionType: txn, Product: product,
			Trigger: &kiteconnect.GTTSingleLegTrigger{TriggerParams: kiteconnect.TriggerParams{TriggerValue: trigger, LimitPrice: limit, Quantity: qty}}}
	}
	unknown := single(1450, 1449, 1, "SELL", "CNC")
	unknown.Tradingsymbol = "NOPE"
	noLast := single(1450, 1449, 1, "SELL", "CNC")
	noLast.LastPrice = 0
	tests := []struct {
		name string
		p    kiteconnect.GTTParams
		want string
	}{
		{"unknown instrument", unknown, "tradingsymbol"},
		{"no last price", noLast, "last_price"},
		{"zero trigger", single(0, 1449, 1, "SELL", "CNC"), "trigger_values"},
		{"trigger off the tick", single(1450.01, 1449, 1, "SELL", "CNC"), "trigger_values"},
		{"trigger at the last price", single(1500, 1499, 1, "SELL", "CNC"), "same as the last traded price"},
		{"zero limit", single(1450, 0, 1, "SELL", "CNC"), "price"},
		{"limit off the tick", single(1450, 1449.01, 1, "SELL", "CNC"), "Tick size"},
		{"zero quantity", single(1450, 1449, 0, "SELL", "CNC"), "quantity"},
		{"part of a unit", single(1450, 1449, 1.5, "SELL", "CNC"), "quantity"},
		{"bad side", single(1450, 1449, 1, "sell", "CNC"), "transaction_type"},
		{"NRML on cash", single(1450, 1449, 1, "SELL", "NRML"), "product"},
		{"two-leg upper below the price", ocoSell(1, 1450, 1490), "upper trigger"},
		{"two-leg lower above the price", ocoSell(1, 1510, 1600), "lower trigger"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.PlaceGTT(tt.p)
			ke := wantErrorType(t, err, InputException, http.StatusBadRequest)
			if !strings.Contains(ke.Message, tt.want) {
				t.Errorf("got %q, want it to name %q", ke.Message, tt.want)
			}
		})
	}
	if got := len(s.GTTs()); got != 0 {
		t.Errorf("GTTs kept: got %d, want 0", got)
	}
}

// A GTT is its user's: another user can neither read nor delete it, and
// one deleted never fires.
func TestGTTDeleteIsTheUsers(t *testing.T) {
	s := newFake(t)
	c := login(t, s, testUser)
	other := login(t, s, "ZZ9999")
	r, err := c.PlaceGTT(ocoSell(1, 1450, 1600))
	if err != nil {
		t.Fatalf("PlaceGTT: %v", err)
	}
	_, err = other.DeleteGTT(r.TriggerID)
	wantErrorType(t, err, InputException, http.StatusNotFound)
	_, err = other.GetGTT(r.TriggerID)
	wantErrorType(t, err, InputException, http.StatusNotFound)
	if list, err := other.GetGTTs(); err != nil || len(list) != 0 {
		t.Errorf("another user's GetGTTs: got %d, %v; want none", len(list), err)
	}
	if _, err := c.DeleteGTT(r.TriggerID); err != nil {
		t.Fatalf("DeleteGTT: %v", err)
	}
	_, err = c.DeleteGTT(r.TriggerID)
	wantErrorType(t, err, InputException, http.StatusBadRequest)
	s.SetLTP("NSE:INFY", 1400)
	if got := s.GTTs()[0]; got.Status != GTTDeleted || got.FiredOrder != "" || s.AllOrdersPlaced() != 0 {
		t.Errorf("got %+v with %d orders, want deleted and nothing placed", got, s.AllOrdersPlaced())
	}
}
