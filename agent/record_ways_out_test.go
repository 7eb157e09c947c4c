package agent_test

import (
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/model/modeltest"
)

// However a turn ends right after a call (a shutdown while the model reads
// the result, every model failing, the model refusing), the call is
// remembered by the time the desk leaves the turn, however slow its record:
// the desk is stopped as soon as the last model is asked, while the record
// is still on its way, and the call is found remembered, run once.
func TestCallRememberedOnEveryWayOutOfTheTurn(t *testing.T) {
	for _, tc := range []struct {
		name            string
		primary, backup modeltest.Reply
		lastAsked       func(w *deskWorld) bool
		// keepsFailing: the models go on failing after the scripted
		// replies, so the desk's tries a poll later find them down still
		// (the stop may come after several).
		keepsFailing bool
	}{
		{"shutdown while the model reads", modeltest.Reply{Hang: true}, modeltest.Reply{Hang: true},
			func(w *deskWorld) bool { return len(w.primary.Requests()) == 2 }, false},
		// The desk tries the trigger again a poll later, asking the backup
		// again: the stop may come after that.
		{"every model fails", modeltest.Status(503), modeltest.Status(503),
			func(w *deskWorld) bool { return len(w.backup.Requests()) >= 1 }, true},
		{"the model refuses", modeltest.Status(400), modeltest.Status(400),
			func(w *deskWorld) bool { return len(w.primary.Requests()) == 2 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newDeskWorld(t)
			w.recordDelay = 300 * time.Millisecond
			w.primary.Push(modeltest.Calls(quote(`{"symbol":"INFY"}`)), tc.primary)
			w.backup.Push(tc.backup)
			if tc.keepsFailing {
				down := func(modeltest.Request) modeltest.Reply { return modeltest.Status(503) }
				w.primary.SetHandler(down)
				w.backup.SetHandler(down)
			}
			stop := w.start(t, w.Store)
			tr := deskbot.Trigger{ID: "trig-out", Desk: "main", Kind: deskbot.TriggerMessage, Text: "What is INFY at?", From: "Asha", CreatedAt: w.Clock.Now()}
			if err := w.Store.Enqueue(t.Context(), tr); err != nil {
				t.Fatal(err)
			}
			deskbottest.EventuallyWithin(t, 5*time.Second, "the last model to be asked", func() bool { return tc.lastAsked(w) })
			stop()
			done, err := w.Store.CompletedCalls(t.Context(), "trig-out")
			if err != nil {
				t.Fatal(err)
			}
			if len(done) != 1 || done[0].Call.Name != "get_quote" {
				t.Errorf("remembered once the desk stopped: %+v; want the get_quote call", done)
			}
			if got := w.quotes.Runs(); got != 1 {
				t.Errorf("runs = %d; want 1", got)
			}
		})
	}
}
