package agent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/agent"
	"github.com/deskbot/deskbot/agent/agenttest"
	"github.com/deskbot/deskbot/model/modeltest"
	"github.com/deskbot/deskbot/store"
)

// gatedRecorder is the store, its calls' records held until released.
type gatedRecorder struct {
	*store.Store
	release chan struct{}
}

func (g gatedRecorder) RecordResult(ctx context.Context, triggerID string, call *deskbot.Event, c *deskbot.CompletedCall, result deskbot.Event) error {
	<-g.release
	return g.Store.RecordResult(ctx, triggerID, call, c, result)
}

// A call's record (its memory and events) is written while the model reads
// the result, but the next call runs only once it is in Redis: a crash in
// between must never find a later call remembered and an earlier one not.
func TestExecutorRecordOverlapsButPrecedesTheNextCall(t *testing.T) {
	f := mustExecutor(t)
	release := make(chan struct{})
	f.exec.Memory = gatedRecorder{f.store, release}
	turn := agenttest.Begin(t, f.exec, "main", "trig-rec")
	if _, err := f.exec.Execute(t.Context(), turn, call("c1", "get_positions", `{"a":1}`)); err != nil {
		t.Fatal(err)
	}

	// The model reads the result while the record is held up.
	read := make(chan struct{})
	overlapped := make(chan struct{})
	go func() {
		defer close(overlapped)
		turn.WhileRecording(func() { close(read) })
	}()
	select {
	case <-read:
	case <-time.After(5 * time.Second):
		close(release)
		t.Fatal("the model was asked only after the record was written")
	}
	select {
	case <-overlapped:
		t.Fatal("WhileRecording returned before the record was written")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	<-overlapped

	second := make(chan error, 1)
	go func() {
		_, err := f.exec.Execute(t.Context(), turn, call("c2", "get_positions", `{"a":2}`))
		turn.Record()
		second <- err
	}()
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	done, err := f.store.CompletedCalls(t.Context(), "trig-rec")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range done {
		ids = append(ids, c.Call.ID)
	}
	if got, want := strings.Join(ids, ","), "c1,c2"; got != want {
		t.Errorf("remembered calls = %s, want %s", got, want)
	}
	if got, want := strings.Join(mustEventKinds(t, f.store, "all"), ","), "tool_call,tool_result,tool_call,tool_result"; got != want {
		t.Errorf("events = %s, want %s", got, want)
	}
}

// A call runs only once the call before it is remembered, even when
// nothing had the record written in between.
func TestExecutorNextCallWaitsForTheLastRecord(t *testing.T) {
	f := mustExecutor(t)
	release := make(chan struct{})
	f.exec.Memory = gatedRecorder{f.store, release}
	turn := agenttest.Begin(t, f.exec, "main", "trig-next")
	if _, err := f.exec.Execute(t.Context(), turn, call("c1", "get_positions", `{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	second := make(chan error, 1)
	go func() {
		_, err := f.exec.Execute(t.Context(), turn, call("c2", "get_positions", `{"a":2}`))
		second <- err
	}()
	time.Sleep(50 * time.Millisecond) // time enough for a call that does not wait to run
	if got := f.lookup.Runs(); got != 1 {
		t.Fatalf("the second call ran before the first was remembered (%d runs)", got)
	}
	close(release)
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	if got := f.lookup.Runs(); got != 2 {
		t.Errorf("runs = %d, want 2", got)
	}
}

// However slow a call's record, everything the turn does after the call
// comes after it in the stream, and the turn is acknowledged only once the
// call is remembered: a capped turn (which ends on a call, with no model
// answer after it) included.
func TestSlowRecordKeepsTheTurnInOrder(t *testing.T) {
	for _, tc := range []struct {
		name    string
		replies []modeltest.Reply
		maxStep int
		words   string
	}{
		{"call then words", []modeltest.Reply{modeltest.Calls(quote(`{"symbol":"INFY"}`)), modeltest.Text("INFY is at 1500.")}, 0, "INFY is at 1500."},
		{"capped on a call", []modeltest.Reply{modeltest.Calls(quote(`{"symbol":"INFY"}`))}, 1, "cut off after 1 model steps"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newDeskWorld(t)
			w.recordDelay = 100 * time.Millisecond
			w.Desk.MaxSteps = tc.maxStep
			w.primary.Push(tc.replies...)
			w.start(t, w.Store)
			w.Tell(t, "What is INFY at?")
			w.WaitMessage(t, tc.words)
			w.WaitSettled(t, deskbot.DeskIdle)

			var kinds []string
			for _, e := range w.ReadEvents(t) {
				kinds = append(kinds, string(e.Kind))
			}
			if got, want := strings.Join(kinds, ","), "desk_state,tool_call,tool_result,desk_message,desk_state"; got != want {
				t.Errorf("events = %s, want %s", got, want)
			}
			if n, err := w.Store.PendingTriggers(t.Context(), "main"); err != nil || n != 0 {
				t.Errorf("PendingTriggers = %d, %v; want 0", n, err)
			}
		})
	}
}

var _ deskbot.CallMemory = gatedRecorder{}

// rememberingBackend is a TurnBackend that makes one call and, on hearing
// its result, looks for the call among the trigger's completed calls in
// the store: a backend goes on thinking on its own, and the call must be
// remembered by then.
type rememberingBackend struct {
	deskbot.Model
	store *store.Store
	found chan []deskbot.CompletedCall
}

func (b rememberingBackend) RunTurn(ctx context.Context, req agent.TurnRequest) (deskbot.ModelReply, error) {
	req.Call(ctx, deskbot.ToolCall{ID: "c1", Name: "get_quote", Arguments: []byte(`{"symbol":"INFY"}`)})
	done, _ := b.store.CompletedCalls(ctx, req.TriggerID)
	b.found <- done
	return deskbot.ModelReply{Text: "INFY is at 1500."}, nil
}

func TestTurnBackendHearsResultsOnlyOnceRemembered(t *testing.T) {
	w := newDeskWorld(t)
	w.recordDelay = 50 * time.Millisecond
	found := make(chan []deskbot.CompletedCall, 1)
	w.Start(t, w.Store, agent.Backend{Turns: rememberingBackend{w.chain(t)[0], w.Store, found}})
	w.Tell(t, "What is INFY at?")
	w.WaitMessage(t, "INFY is at 1500.")
	if got := <-found; len(got) != 1 || got[0].Call.Name != "get_quote" {
		t.Errorf("completed calls when the backend heard the result = %+v; want the get_quote call", got)
	}
}
