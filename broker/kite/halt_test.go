package kite

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/retry"
	"github.com/deskbot/deskbot/risk"
	"github.com/deskbot/deskbot/store"
	"github.com/deskbot/deskbot/words"
)

// heldSleep is a client's sleep that, once armed, holds every wait (a
// rate-limit slot's) until let is closed, and says on waiting when one
// began: a call held in its rate-limit wait for as long as the test needs.
type heldSleep struct {
	armed   atomic.Bool
	waiting chan struct{}
	let     chan struct{}
}

func newHeldSleep() *heldSleep {
	return &heldSleep{waiting: make(chan struct{}, 1), let: make(chan struct{})}
}

func (h *heldSleep) sleep(ctx context.Context, d time.Duration) error {
	if h.armed.Load() {
		select {
		case h.waiting <- struct{}{}:
		default:
		}
		select {
		case <-h.let:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return retry.Sleep(ctx, d)
}

func mustHalt(t *testing.T, st *store.Store, desk string, at time.Time) {
	t.Helper()
	h := deskbot.Halt{Rule: deskbot.RuleMaxDailyLoss, Figures: "test", At: at}
	if won, err := st.HaltDesk(t.Context(), desk, h, deskbot.AuditEntry{Action: "halt", Desk: desk, By: risk.By, At: at}); err != nil || !won {
		t.Fatalf("HaltDesk: %v, %v", won, err)
	}
}

// A call allowed just before a halt, held in its rate-limit wait (Kite
// takes one order a second here; a burst holds a call for minutes) while
// the halt lands, is never sent: the send is put to the desk's halt once
// it has its slot, and the halt's finish withdraws what waits for its
// send. The desk is told its order was not placed, and why.
func TestAHaltStopsAnOrderWaitingForItsSlot(t *testing.T) {
	tests := []struct {
		name string
		// stop is what happens while the order waits.
		stop func(t *testing.T, r *rig, b *Broker, tag string)
		want string // in the placing call's answer
	}{
		{"the halt lands", func(t *testing.T, r *rig, b *Broker, tag string) {
			mustHalt(t, r.st, "main", r.clock.Now())
		}, words.HaltedOrderMessage(deskbot.ToolPlaceOrder)},
		{"the halt lands and its finish cancels the desk's orders", func(t *testing.T, r *rig, b *Broker, tag string) {
			mustHalt(t, r.st, "main", r.clock.Now())
			w := &risk.Watcher{Desks: []string{"main"}, Rules: map[string]deskbot.RiskRules{"main": {MaxDailyLoss: 1000}},
				Store: r.st, Broker: b, Now: r.clock.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			w.Check(ctxFor(t, 10*time.Second), "main")
			st, err := r.st.DeskStatus(t.Context(), "main")
			if err != nil || st.Halt == nil || !st.Halt.Done {
				t.Fatalf("the halt's finish is not done (%+v, %v): it could not cancel the order waiting for its send", st.Halt, err)
			}
		}, words.HaltedOrderMessage(deskbot.ToolPlaceOrder)},
		{"cancel_order cancels it", func(t *testing.T, r *rig, b *Broker, tag string) {
			got, err := b.CancelOrder(ctxFor(t, 10*time.Second), "main", tag)
			if err != nil || got.State != deskbot.OrderNotPlaced {
				t.Fatalf("cancel_order of the waiting order: %+v, %v; want it not placed", got, err)
			}
		}, "was not sent"},
		{"a flatten cancels it", func(t *testing.T, r *rig, b *Broker, tag string) {
			rep := mustFlattenDesk(t, b, "main")
			if got, ok := find(rep.Cancelled, tag); !ok || got.State != deskbot.OrderNotPlaced {
				t.Fatalf("the flatten cancelled %+v (left %q); want the waiting order, not placed", rep.Cancelled, rep.Left)
			}
		}, "was not sent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mustRig(t)
			r.clock.Set(time.Now())
			hs := newHeldSleep()
			admit := risk.Admission{Desks: r.st, Now: r.clock.Now}.Admit
			b, _ := r.mustBroker(t, options{clientOpts: Options{OrdersPerSecond: 1, Sleep: hs.sleep}, admit: admit})
			first := mustPlaceOrder(t, b, "main", limit("INFY", deskbot.Buy, 1, 1400)) // the second's one slot
			if first.State != deskbot.OrderOpen {
				t.Fatalf("the first order is %+v; want it resting", first)
			}
			hs.armed.Store(true)

			key := deskbottest.NewKey()
			tag := broker.Tag(key)
			type answer struct {
				po  deskbot.PlacedOrder
				err error
			}
			done := make(chan answer, 1)
			go func() {
				po, err := b.PlaceOrder(ctxFor(t, 30*time.Second), "main", key, market("INFY", deskbot.Buy, 5))
				done <- answer{po, err}
			}()
			select {
			case <-hs.waiting:
			case a := <-done:
				t.Fatalf("the second order did not wait for its slot: %+v, %v", a.po, a.err)
			}
			tt.stop(t, r, b, tag)
			close(hs.let)
			a := <-done

			if a.err == nil || !strings.Contains(deskbot.ErrorMessage(a.err), tt.want) {
				t.Errorf("the placing call answered %+v, %v; want an error saying %q", a.po, a.err, tt.want)
			}
			if got, want := r.kt.OrdersPlaced(tag), 0; got != want {
				t.Errorf("Kite holds %d orders of the call held across the halt, want %d", got, want)
			}
			rec, err := b.orders.Order(t.Context(), "main", deskbot.OrderDay(r.clock.Now()), tag)
			if err != nil || rec.State != deskbot.OrderNotPlaced {
				t.Errorf("the order is recorded %+v (%v); want not placed", rec, err)
			}
		})
	}
}
