package kite

import (
	"slices"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker/kitetest"
)

// dec is a moment of December 2026, India time: the 3rd is a Thursday.
func dec(day, hh, mm int) time.Time { return time.Date(2026, 12, day, hh, mm, 0, 0, deskbot.IST) }

// mustEveningAMO places, on Thursday at 20:00 with NSE's hours, desk
// main's after-market buy of 10 INFY at ₹1,500, then lets midnight pass
// to Friday 08:30 and logs in again (Kite ended the session at 06:00):
// the AMO rests at Kite, waiting for Friday's open.
func mustEveningAMO(t *testing.T) (*rig, *Broker, deskbot.PlacedOrder) {
	t.Helper()
	r := mustRig(t)
	r.clock.Set(dec(3, 20, 0))
	r.kt.SetNow(r.clock.Now)
	r.kt.SetLimits(nil) // the fake's clock stands still: its per-second limits would never free
	b, l := r.mustBroker(t, options{hours: "Mon-Fri 09:15-15:30"})
	o := limit("INFY", deskbot.Buy, 10, 1500)
	o.Variety = deskbot.VarietyAMO
	po := mustPlaceOrder(t, b, "main", o)
	if po.State != deskbot.OrderOpen || po.ID == "" {
		t.Fatalf("the evening's AMO is %+v; want open at Kite", po)
	}
	r.clock.Set(dec(4, 8, 30))
	loginAs(t, l, r.kt, deskbot.Person{ID: 1, Name: "Asha"})
	return r, b, po
}

func mustOrdersOf(t *testing.T, b *Broker, desk string) []deskbot.PlacedOrder {
	t.Helper()
	os, err := b.Orders(ctxFor(t, 10*time.Second), desk)
	if err != nil {
		t.Fatalf("Orders(%s): %v", desk, err)
	}
	return os
}

// find is the order tagged tag among orders.
func find(orders []deskbot.PlacedOrder, tag string) (deskbot.PlacedOrder, bool) {
	i := slices.IndexFunc(orders, func(po deskbot.PlacedOrder) bool { return po.Tag == tag })
	if i < 0 {
		return deskbot.PlacedOrder{}, false
	}
	return orders[i], true
}

// An after-market order placed in the evening lives until Kite ends it:
// after midnight the desk's orders (and so its position limit, its halts
// and square-off) still hold it, a read of Kite's orders does not call it
// cancelled, its fill at the open is booked to the desk, and cancel_order
// and a flatten cancel it with the variety Kite needs (amo while it waits
// for the open, regular once it is at the exchange).
func TestAnEveningAMOLivesAcrossMidnightUntilKiteEndsIt(t *testing.T) {
	t.Run("the desk's orders hold it, open", func(t *testing.T) {
		_, b, po := mustEveningAMO(t)
		got, ok := find(mustOrdersOf(t, b, "main"), po.Tag)
		if !ok || got.State != deskbot.OrderOpen {
			t.Fatalf("after midnight the desk's orders hold %+v (found %v); want the AMO, open", got, ok)
		}
		if got, want := got.TradingDay(), "2026-12-04"; got != want {
			t.Errorf("the AMO's trading day is %s, want %s, the day it executes on", got, want)
		}
	})
	t.Run("its fill at the open is booked", func(t *testing.T) {
		r, b, po := mustEveningAMO(t)
		mustSync(t, b) // Friday morning: Kite lists it, waiting
		if got, _ := find(mustOrdersOf(t, b, "main"), po.Tag); got.State != deskbot.OrderOpen {
			t.Fatalf("before the open a read of Kite's orders left it %s (%s); want open", got.State, got.Reason)
		}
		r.clock.Set(dec(4, 9, 15))
		r.kt.OpenAMOs()
		mustSync(t, b)
		got, _ := find(mustOrdersOf(t, b, "main"), po.Tag)
		if got.State != deskbot.OrderComplete {
			t.Errorf("after the open the AMO is %s (%s); want complete", got.State, got.Reason)
		}
		if got, want := held(mustBookOf(t, b, "main"), "INFY"), 10.0; got != want {
			t.Errorf("the desk's book holds %v INFY, want %v: the AMO's fill landed in no book", got, want)
		}
	})
	tests := []struct {
		name   string
		atOpen bool // sent to the exchange (held OPEN) first
		cancel func(t *testing.T, b *Broker, po deskbot.PlacedOrder) deskbot.PlacedOrder
	}{
		{"cancel_order before the open", false, mustCancel},
		{"cancel_order at the exchange", true, mustCancel},
		{"a flatten before the open", false, mustFlattenCancels},
		{"a flatten at the exchange", true, mustFlattenCancels},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, b, po := mustEveningAMO(t)
			if tt.atOpen {
				r.clock.Set(dec(4, 9, 15))
				r.kt.Hold(true)
				r.kt.OpenAMOs()
			}
			got := tt.cancel(t, b, po)
			if got.State != deskbot.OrderCancelled {
				t.Errorf("the AMO is recorded %s (%s); want cancelled", got.State, got.Reason)
			}
			if ko, _ := r.kt.Order(po.ID); ko.Status != kitetest.StatusCancelled {
				t.Errorf("at Kite the AMO is %s; want CANCELLED", ko.Status)
			}
		})
	}
}

func mustCancel(t *testing.T, b *Broker, po deskbot.PlacedOrder) deskbot.PlacedOrder {
	t.Helper()
	got, err := b.CancelOrder(ctxFor(t, 10*time.Second), "main", po.ID)
	if err != nil {
		t.Fatalf("cancel_order %s: %v", po.ID, err)
	}
	return got
}

func mustFlattenCancels(t *testing.T, b *Broker, po deskbot.PlacedOrder) deskbot.PlacedOrder {
	t.Helper()
	r := mustFlattenDesk(t, b, "main")
	got, ok := find(r.Cancelled, po.Tag)
	if !ok {
		t.Fatalf("the flatten cancelled %+v (left %q); want the AMO", r.Cancelled, r.Left)
	}
	return got
}

// Kite's order book starts empty each day, so an order absent from it
// after its trading day is taken for ended; an after-market order's
// trading day is the one it executes on, so it is never taken for ended
// before that day is over, whatever day it was placed.
func TestAnOrderIsTakenForEndedOnlyAfterItsTradingDay(t *testing.T) {
	tests := []struct {
		name  string
		day   string // the order's Day; "" its placing's
		now   time.Time
		ended bool
	}{
		{"a regular order, the day after", "", dec(4, 8, 30), true},
		{"an AMO, the morning it executes", "2026-12-04", dec(4, 8, 30), false},
		{"an AMO, after midnight", "2026-12-04", dec(4, 0, 5), false},
		{"an AMO, the day after it executed", "2026-12-04", dec(5, 8, 30), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustRig(t)
			r.clock.Set(tt.now)
			b, _ := r.mustBroker(t, options{noLogin: true})
			rec := deskbot.PlacedOrder{ID: "261203000000001", Tag: "db1", Desk: "main", Order: limit("INFY", deskbot.Buy, 10, 1500),
				State: deskbot.OrderOpen, At: dec(3, 20, 0), Updated: dec(3, 20, 0), Day: tt.day}
			got, moved := b.settled(rec, nil)
			if moved != tt.ended || (moved && got.State != deskbot.OrderCancelled) {
				t.Errorf("absent from Kite's book at %s, the order is %s (moved %v); want ended %v", tt.now, got.State, moved, tt.ended)
			}
		})
	}
}
