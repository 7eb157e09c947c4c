package kite

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/store/storetest"
)

// aroundHook wraps each command of the client it is added to.
type aroundHook func(cmd redis.Cmder, next func() error) error

func (h aroundHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h aroundHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		return h(cmd, func() error { return next(ctx, cmd) })
	}
}
func (h aroundHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// hookedOrders is an order log on its own Redis client (another process's)
// wrapped by h.
func hookedOrders(t *testing.T, r *rig, h aroundHook) *broker.OrderLog {
	st := storetest.MustReopen(t, r.st)
	st.Client().AddHook(h)
	return broker.NewOrderLog(st, r.clock.Now, r.tell, slog.New(slog.DiscardHandler))
}

// records reports whether cmd records the order tagged tag at a version
// of state v (ARGV[3] of recordScript) moving it from one of state from
// (ARGV[4]).
func records(cmd redis.Cmder, tag string, v, from deskbot.OrderState) bool {
	args := cmd.Args()
	i := slices.IndexFunc(args, func(x any) bool { return x == tag })
	if i < 0 || i+3 >= len(args) {
		return false
	}
	to, _ := args[i+2].(string)
	was, _ := args[i+3].(string)
	return strings.HasPrefix(to, string(v)+" ") && strings.HasPrefix(was, string(from)+" ")
}

// A Sync in another process (a hand-over) that read a pending record
// before its send mark cannot move it to "not placed" after the mark: the
// mark changes the version the Sync's compare-and-set names, so the order
// that is sent and lands at Kite is never recorded as never placed (which
// would take it out of the open index, its fills never booked).
func TestSyncOfAnotherProcessCannotSettleAnOrderMarkedAfterItsRead(t *testing.T) {
	r := mustRig(t)
	a, _ := r.mustBroker(t, options{clientOpts: Options{OrdersPerSecond: 1}})
	b, _ := r.mustBroker(t, options{}) // the new leader, after a hand-over

	mustPlaceOrder(t, a, "alpha", limit("INFY", deskbot.Buy, 1, 1490)) // takes a's only slot this second
	key := deskbottest.NewKey()
	tag := broker.Tag(key)
	day := deskbot.OrderDay(r.clock.Now())
	pending, notPlaced, open := deskbot.OrderPending, deskbot.OrderNotPlaced, deskbot.OrderOpen

	// The interleaving: b's Sync read the record before a's mark, and
	// records "not placed" just after it, before a hears Kite's answer.
	marked, settled := make(chan struct{}), make(chan struct{})
	var markOnce, settleOnce sync.Once
	wait := func(ch chan struct{}) {
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
		}
	}
	a.orders = hookedOrders(t, r, func(cmd redis.Cmder, next func() error) error {
		switch {
		case records(cmd, tag, pending, pending): // the send mark
			err := next()
			markOnce.Do(func() { close(marked) })
			return err
		case records(cmd, tag, open, pending): // what Kite answered
			wait(settled)
		}
		return next()
	})
	b.orders = hookedOrders(t, r, func(cmd redis.Cmder, next func() error) error {
		if records(cmd, tag, notPlaced, pending) {
			wait(marked)
			defer settleOnce.Do(func() { close(settled) })
		}
		return next()
	})

	done := make(chan error, 1)
	go func() {
		_, err := a.PlaceOrder(ctxFor(t, 20*time.Second), "alpha", key, limit("INFY", deskbot.Buy, 1, 1490))
		done <- err
	}()
	deskbottest.Eventually(t, "the order recorded, waiting for its slot", func() bool {
		_, err := a.orders.Order(t.Context(), "alpha", day, tag)
		return err == nil
	})
	r.clock.Add(5 * time.Minute) // it waited long for its slot
	if _, err := b.Sync(ctxFor(t, 20*time.Second)); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	placeErr := <-done
	mustSync(t, b)
	got := mustOrderOf(t, b, "alpha", tag)
	if n := r.kt.OrdersPlaced(tag); n == 1 && got.State == deskbot.OrderNotPlaced {
		t.Fatalf("Kite holds the order tagged %s, but its record says %q (%s); the place answered %v", tag, got.State, got.Reason, placeErr)
	}
}
