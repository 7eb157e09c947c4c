package ops_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/ops"
	"github.com/deskbot/deskbot/store/storetest"
)

// tripCounter counts the round trips a client makes to Redis: one per
// command, one per pipeline or transaction.
type tripCounter struct{ n atomic.Int64 }

func (c *tripCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *tripCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}

func (c *tripCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmds)
	}
}

// The desks' store as the service wires it (the stop's wrapper around the
// store)
// takes a queued trigger and opens its turn in one round trip to Redis:
// the trigger, the desk's status, its history and the trigger's completed
// calls, with "working" saved, not a wait on the inbox then a read.
func TestServiceInboxTakesTurn(t *testing.T) {
	st := storetest.MustOpen(t)
	in := ops.NewDrain(context.Background()).WrapTurns(st)
	ctx := t.Context()
	// A first turn loads the script, as a desk's first after a start does;
	// the next trigger was queued meanwhile, as in a desk working through
	// a queue.
	for _, text := range []string{"first", "hi"} {
		if err := st.Enqueue(ctx, deskbot.Trigger{Desk: "main", Kind: deskbot.TriggerMessage, Text: text, CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	first, err := in.OpenTurn(ctx, "main", 0, 40, time.Now)
	if err != nil || first.Trigger == nil || first.Trigger.Text != "first" {
		t.Fatalf("OpenTurn = %+v, %v; want the first trigger", first, err)
	}
	if _, err := in.CloseTurn(ctx, "main", deskbot.TurnEnd{At: time.Now(), Ack: first.Trigger}); err != nil {
		t.Fatal(err)
	}
	trips := &tripCounter{}
	st.Client().AddHook(trips)
	o, err := in.OpenTurn(ctx, "main", 0, 40, time.Now)
	if err != nil || o.Trigger == nil || o.Trigger.Text != "hi" {
		t.Fatalf("OpenTurn = %+v, %v; want the queued trigger", o, err)
	}
	if got, want := trips.n.Load(), int64(1); got != want {
		t.Errorf("round trips to take a queued trigger and open its turn = %d, want %d", got, want)
	}
	if got, want := o.Status.Paused, false; got != want {
		t.Errorf("o.Status.Paused = %v, want %v", got, want)
	}
	if st, err := st.DeskStatus(ctx, "main"); err != nil || st.State != deskbot.DeskWorking {
		t.Errorf("desk state after OpenTurn = %q, %v; want %q", st.State, err, deskbot.DeskWorking)
	}
}

// The stop's wrapper sees every turn: a desk that closed its turn, its
// trigger acknowledged with the turn's last writes, is no longer busy, so a
// stop that comes then finds every desk idle without waiting for the
// desk's next ask.
func TestServiceInboxSeesTheTurnClose(t *testing.T) {
	st := storetest.MustOpen(t)
	d := ops.NewDrain(context.Background())
	in := d.WrapTurns(st)
	ctx := t.Context()
	if err := st.Enqueue(ctx, deskbot.Trigger{Desk: "main", Kind: deskbot.TriggerMessage, Text: "hi", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	o, err := in.OpenTurn(ctx, "main", 0, 40, time.Now)
	if err != nil || o.Trigger == nil {
		t.Fatalf("OpenTurn = %+v, %v; want the queued trigger", o, err)
	}
	d.Stop()
	select {
	case <-d.Idle():
		t.Fatal("idle with a turn open; want the desk busy until its turn closes")
	default:
	}
	if _, err := in.CloseTurn(ctx, "main", deskbot.TurnEnd{At: time.Now(), Ack: o.Trigger}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.Idle():
	default:
		t.Error("a desk whose turn closed is still busy; want idle at once")
	}
	if n, _ := st.PendingTriggers(ctx, "main"); n != 0 {
		t.Errorf("pending = %d; want the trigger acknowledged", n)
	}
}
