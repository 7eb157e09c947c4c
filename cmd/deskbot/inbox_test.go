package main

import (
	"context"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/store/storetest"
)

// The desks' inbox as Main wires it takes a queued trigger and opens its
// turn in one call of the store (TakeTurn), not NextTrigger then OpenTurn.
func TestServiceInboxTakesTurn(t *testing.T) {
	st := storetest.MustOpen(t)
	in := &inbox{store: st, d: newDrain(context.Background())}
	if err := st.Enqueue(t.Context(), deskbot.Trigger{Desk: "main", Kind: deskbot.TriggerMessage, Text: "hi", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	tr, _, _, _, err := in.TakeTurn(t.Context(), "main", 40, time.Now())
	if err != nil || tr == nil {
		t.Fatalf("TakeTurn = %v, %v; want the queued trigger", tr, err)
	}
}
