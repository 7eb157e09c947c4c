package broker_test

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/broker/brokertest"
	"github.com/deskbot/deskbot/deskbottest"
)

// halted is an Admit that refuses from its after-th call on, as the desk's
// halt does once it lands; after < 0 admits all.
func halted(after int32) (broker.Admit, *atomic.Int32) {
	var calls atomic.Int32
	return func(context.Context, string, deskbot.Order, func(context.Context) (deskbot.Book, error)) error {
		if n := calls.Add(1); after >= 0 && n >= after {
			return deskbot.Errorf(deskbot.ECONFLICT, "place_order was not run: a risk rule halted this desk.")
		}
		return nil
	}, &calls
}

func mustOrders(t *testing.T, b deskbot.Broker, desk string) []deskbot.PlacedOrder {
	t.Helper()
	os, err := b.Orders(t.Context(), desk)
	if err != nil {
		t.Fatalf("Orders(%s): %v", desk, err)
	}
	return os
}

// The paper broker puts each order to its Admit just before it makes it:
// a refused order is not placed, and a resting order of a desk halted
// between that check and its record is cancelled rather than left to
// fill after the halt.
func TestPaperPutsEachOrderToItsAdmit(t *testing.T) {
	tests := []struct {
		name      string
		refuseAt  int32 // the Admit's first refusing call; -1 none
		o         deskbot.Order
		wantErr   bool
		wantState deskbot.OrderState // "" no order recorded
	}{
		{"admitted, it fills", -1, limit(deskbot.Buy, "INFY", 10, 1500), false, deskbot.OrderComplete},
		{"admitted, it rests", -1, limit(deskbot.Buy, "INFY", 10, 1400), false, deskbot.OrderOpen},
		{"refused", 1, limit(deskbot.Buy, "INFY", 10, 1500), true, ""},
		{"halted as it was recorded, resting", 2, limit(deskbot.Buy, "INFY", 10, 1400), true, deskbot.OrderCancelled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := mustPaperDesk(t)
			d.tape.Set("INFY", 1500)
			admit, _ := halted(tt.refuseAt)
			p := d.Paper.Admitting(admit)
			po, err := p.PlaceOrder(t.Context(), "main", deskbottest.NewKey(), tt.o)
			if got := err != nil; got != tt.wantErr {
				t.Errorf("PlaceOrder: %+v, %v; want an error %v", po, err, tt.wantErr)
			}
			if err != nil && !strings.Contains(deskbot.ErrorMessage(err), "halted") {
				t.Errorf("the refusal %q does not say the desk is halted", deskbot.ErrorMessage(err))
			}
			orders := mustOrders(t, p, "main")
			if tt.wantState == "" {
				if len(orders) != 0 {
					t.Errorf("a refused order was recorded: %+v", orders)
				}
				return
			}
			if len(orders) != 1 || orders[0].State != tt.wantState {
				t.Errorf("orders %+v; want one %s", orders, tt.wantState)
			}
			d.tape.Set("INFY", 1300)
			mustSync(t, d.Paper)
			if b := mustBook(t, p, "main"); tt.wantState == deskbot.OrderCancelled && len(b.Positions) != 0 {
				t.Errorf("the halted desk's order filled after the halt: %+v", b.Positions)
			}
		})
	}
}

// A paper order still resting after midnight, before the update loop has
// ended it with its day, is still the desk's: its orders (and so its
// position limit and halts) hold it, and cancel_order and a flatten
// cancel it.
func TestPaperOrderStaysInViewUntilItEnds(t *testing.T) {
	tests := []struct {
		name string
		end  func(t *testing.T, d paperDesk, po deskbot.PlacedOrder) deskbot.PlacedOrder
	}{
		{"get_orders", func(t *testing.T, d paperDesk, po deskbot.PlacedOrder) deskbot.PlacedOrder {
			orders := mustOrders(t, d, "main")
			i := slices.IndexFunc(orders, func(o deskbot.PlacedOrder) bool { return o.Tag == po.Tag })
			if i < 0 {
				t.Fatalf("the desk's orders %+v do not hold yesterday's open order", orders)
			}
			return orders[i]
		}},
		{"cancel_order", func(t *testing.T, d paperDesk, po deskbot.PlacedOrder) deskbot.PlacedOrder {
			got, err := d.CancelOrder(t.Context(), "main", po.ID)
			if err != nil || got.State != deskbot.OrderCancelled {
				t.Fatalf("cancel_order of yesterday's open order: %+v, %v", got, err)
			}
			return got
		}},
		{"flatten_desk", func(t *testing.T, d paperDesk, po deskbot.PlacedOrder) deskbot.PlacedOrder {
			r := mustFlatten(t, d, "main")
			if len(r.Cancelled) != 1 {
				t.Fatalf("the flatten cancelled %+v; want yesterday's open order", r.Cancelled)
			}
			return r.Cancelled[0]
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := mustPaperDesk(t)
			d.tape.Set("INFY", 1500)
			d.clock.Set(time.Date(2025, 3, 3, 15, 0, 0, 0, deskbot.IST))
			po := mustPlace(t, d, "main", deskbottest.NewKey(), limit(deskbot.Buy, "INFY", 10, 1400))
			d.clock.Set(time.Date(2025, 3, 4, 9, 0, 0, 0, deskbot.IST))
			if got := tt.end(t, d, po); got.Tag != po.Tag {
				t.Errorf("got order %s, want %s", got.Tag, po.Tag)
			}
		})
	}
}

// A pending order's send and its withdrawal exclude each other: one
// withdrawn is never marked sent (so never sent), and one marked sent is
// never withdrawn (it may be at the broker; only the broker's orders can
// end it).
func TestOrderLogWithdrawsOnlyWhatWasNotSent(t *testing.T) {
	st := mustStore(t)
	clock := deskbottest.NewClock(t0)
	l := broker.NewOrderLog(st, clock.Now, &brokertest.Teller{}, nil)
	start := func(t *testing.T) deskbot.PlacedOrder {
		t.Helper()
		po := deskbot.PlacedOrder{Tag: broker.Tag(deskbottest.NewKey()), Desk: "main", Order: limit(deskbot.Buy, "INFY", 1, 1500),
			State: deskbot.OrderPending, At: clock.Now(), Updated: clock.Now()}
		if _, existed, err := l.Start(t.Context(), po); err != nil || existed {
			t.Fatalf("Start: %v, %v", existed, err)
		}
		return po
	}
	t.Run("sent, then withdrawn", func(t *testing.T) {
		po := start(t)
		sent := po
		sent.Updated = po.Updated.Add(time.Millisecond)
		if _, moved, err := l.Sending(t.Context(), broker.Version(po), sent); err != nil || !moved {
			t.Fatalf("Sending: %v, %v", moved, err)
		}
		got, ok, err := l.Withdraw(t.Context(), sent, "halted")
		if err != nil || ok || got.State != deskbot.OrderPending {
			t.Errorf("Withdraw of a sent order: %+v, %v, %v; want it left pending", got, ok, err)
		}
	})
	t.Run("withdrawn, then sent", func(t *testing.T) {
		po := start(t)
		got, ok, err := l.Withdraw(t.Context(), po, "halted")
		if err != nil || !ok || got.State != deskbot.OrderNotPlaced {
			t.Fatalf("Withdraw: %+v, %v, %v; want not placed", got, ok, err)
		}
		sent := po
		sent.Updated = po.Updated.Add(time.Millisecond)
		if got, moved, err := l.Sending(t.Context(), broker.Version(po), sent); err != nil || moved || got.State != deskbot.OrderNotPlaced {
			t.Errorf("Sending after the withdrawal: %+v, %v, %v; want refused", got, moved, err)
		}
	})
}
