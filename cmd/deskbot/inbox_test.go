package main

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/deskbot/deskbot"
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

// The desks' store as Main wires it (the stop's wrapper around the store)
// takes a queued trigger and opens its turn in one round trip to Redis:
// the trigger, the desk's status, its history and the trigger's completed
// calls, with "working" saved, not NextTrigger then OpenTurn.
func TestServiceInboxTakesTurn(t *testing.T) {
	st := storetest.MustOpen(t)
	in := &inbox{TurnStore: st, d: newDrain(context.Background())}
	ctx := t.Context()
	// A first ask with nothing queued loads the script, as a desk's first
	// ask after a start does.
	if tr, _, _, _, err := in.TakeTurn(ctx, "main", 40, time.Now()); err != nil || tr != nil {
		t.Fatalf("TakeTurn on an empty inbox = %v, %v; want none", tr, err)
	}
	if err := st.Enqueue(ctx, deskbot.Trigger{Desk: "main", Kind: deskbot.TriggerMessage, Text: "hi", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	trips := &tripCounter{}
	st.Client().AddHook(trips)
	tr, status, _, _, err := in.TakeTurn(ctx, "main", 40, time.Now())
	if err != nil || tr == nil {
		t.Fatalf("TakeTurn = %v, %v; want the queued trigger", tr, err)
	}
	if got, want := trips.n.Load(), int64(1); got != want {
		t.Errorf("round trips to take a queued trigger and open its turn = %d, want %d", got, want)
	}
	if got, want := status.Paused, false; got != want {
		t.Errorf("status.Paused = %v, want %v", got, want)
	}
	if st, err := st.DeskStatus(ctx, "main"); err != nil || st.State != deskbot.DeskWorking {
		t.Errorf("desk state after TakeTurn = %q, %v; want %q", st.State, err, deskbot.DeskWorking)
	}
}
