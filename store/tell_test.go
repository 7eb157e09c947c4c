package store_test

import (
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/store"
	"github.com/deskbot/deskbot/store/storetest"
)

func mustTellOnce(t *testing.T, s *store.Store, key string, tr *deskbot.Trigger, e *deskbot.Event) bool {
	t.Helper()
	told, err := s.TellOnce(t.Context(), key, tr, e)
	if err != nil {
		t.Fatalf("TellOnce(%s): %v", key, err)
	}
	return told
}

func orderTrigger(text string) *deskbot.Trigger {
	return &deskbot.Trigger{Desk: "alpha", Kind: deskbot.TriggerOrder, Text: text}
}

func orderEvent(text string) *deskbot.Event {
	return &deskbot.Event{Kind: deskbot.EventOrder, Desk: "alpha", Time: base, Text: text}
}

// The first TellOnce of a key queues the trigger and the event; every
// later one of that key queues neither and says so, and another key tells
// again.
func TestTellOnceTellsOnce(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		mustRead(t, s, "bot", "c1", 0) // creates the group
		for _, step := range []struct {
			key, text string
			want      bool
		}{
			{"order:1:complete", "filled", true},
			{"order:1:complete", "filled again", false},
			{"order:2:rejected", "rejected", true},
		} {
			if got := mustTellOnce(t, s, step.key, orderTrigger(step.text), orderEvent(step.text)); got != step.want {
				t.Errorf("TellOnce(%s, %s) = %v; want %v", step.key, step.text, got, step.want)
			}
		}
		if n, _ := s.PendingTriggers(t.Context(), "alpha"); n != 2 {
			t.Errorf("pending triggers = %d; want 2", n)
		}
		var got []string
		for {
			tr := mustNext(t, s, "alpha")
			if tr == nil {
				break
			}
			got = append(got, tr.Text)
			if err := s.AckTrigger(t.Context(), tr); err != nil {
				t.Fatal(err)
			}
		}
		if want := []string{"filled", "rejected"}; !eq(got, want) {
			t.Errorf("triggers = %q; want %q", got, want)
		}
		if got, want := texts(mustRead(t, s, "bot", "c1", 0)), []string{"filled", "rejected"}; !eq(got, want) {
			t.Errorf("events = %q; want %q", got, want)
		}
	})
}

// The trigger queued is what NextTrigger returns, given an id and a time
// as Enqueue gives them, and the event is what ReadEvents returns.
func TestTellOnceQueuesAsEnqueueAndPublish(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		mustRead(t, s, "bot", "c1", 0)
		before := time.Now().Add(-time.Second)
		tr := &deskbot.Trigger{Desk: "alpha", Kind: deskbot.TriggerOrder, Text: "BUY 50 NSE:INFY LIMIT @ 1,500.00 · MIS: complete", From: "broker"}
		ev := &deskbot.Event{Kind: deskbot.EventOrder, Desk: "alpha", Time: base, Text: "alpha: BUY 50 NSE:INFY filled"}
		mustTellOnce(t, s, "order:9:complete", tr, ev)
		got := mustNext(t, s, "alpha")
		if got == nil {
			t.Fatal("no trigger queued")
		}
		if got.ID == "" || got.CreatedAt.Before(before) || got.CreatedAt.Location() != time.UTC {
			t.Errorf("trigger id %q, created %v; want an id and now in UTC", got.ID, got.CreatedAt)
		}
		want := *tr
		want.ID, want.CreatedAt, want.StreamID = got.ID, got.CreatedAt, got.StreamID
		if *got != want {
			t.Errorf("trigger = %+v; want %+v", *got, want)
		}
		if tr.ID != "" {
			t.Errorf("the caller's trigger was changed: id %q", tr.ID)
		}
		evs := mustRead(t, s, "bot", "c1", 0)
		if len(evs) != 1 {
			t.Fatalf("events = %d; want 1", len(evs))
		}
		gotEv := evs[0]
		if gotEv.ID == "" {
			t.Error("event has no stream id")
		}
		gotEv.ID = ""
		if gotEv.Kind != ev.Kind || gotEv.Desk != ev.Desk || !gotEv.Time.Equal(ev.Time) || gotEv.Text != ev.Text {
			t.Errorf("event = %+v; want %+v", gotEv, *ev)
		}

		// A trigger with its own id and time keeps them.
		at := base.Add(-time.Hour)
		mustTellOnce(t, s, "order:9:open", &deskbot.Trigger{ID: "t-1", Desk: "alpha", Kind: deskbot.TriggerOrder, CreatedAt: at}, nil)
		s.AckTrigger(t.Context(), got)
		if own := mustNext(t, s, "alpha"); own == nil || own.ID != "t-1" || !own.CreatedAt.Equal(at) {
			t.Errorf("trigger = %+v; want id t-1 created %v", own, at)
		}
	})
}

// Either of the trigger and the event may be nil: the other is told alone,
// still once.
func TestTellOnceEitherAlone(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		mustRead(t, s, "bot", "c1", 0)
		for _, c := range []struct {
			name             string
			tr               *deskbot.Trigger
			ev               *deskbot.Event
			triggers, events int64
		}{
			{"trigger only", orderTrigger("to the desk"), nil, 1, 0},
			{"event only", nil, orderEvent("to the chat"), 1, 1},
			{"neither", nil, nil, 1, 1},
		} {
			if !mustTellOnce(t, s, c.name, c.tr, c.ev) {
				t.Errorf("%s: first TellOnce told nothing", c.name)
			}
			if mustTellOnce(t, s, c.name, c.tr, c.ev) {
				t.Errorf("%s: second TellOnce told again", c.name)
			}
			if n, _ := s.PendingTriggers(t.Context(), "alpha"); n != c.triggers {
				t.Errorf("%s: triggers = %d; want %d", c.name, n, c.triggers)
			}
			if got := int64(len(mustRead(t, s, "bot", "c1", 0))); got != c.events {
				t.Errorf("%s: events read = %d; want %d (unacknowledged ones come again)", c.name, got, c.events)
			}
		}
	})
}

func TestTellOnceRefusesWhatItCannotTell(t *testing.T) {
	s := storetest.MustOpenEmbedded(t)
	for _, c := range []struct {
		name string
		key  string
		tr   *deskbot.Trigger
	}{
		{"no key", "", orderTrigger("x")},
		{"a trigger without a desk", "k", &deskbot.Trigger{Kind: deskbot.TriggerOrder}},
	} {
		if _, err := s.TellOnce(t.Context(), c.key, c.tr, nil); deskbot.ErrorCode(err) != deskbot.EINVALID {
			t.Errorf("%s: err = %v; want EINVALID", c.name, err)
		}
	}
	if n, _ := s.PendingTriggers(t.Context(), "alpha"); n != 0 {
		t.Errorf("triggers = %d; want 0", n)
	}
}

// A desk waiting on its inbox wakes for a trigger told while it waits.
func TestTellOnceWakesAWaitingDesk(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		done := make(chan *deskbot.Trigger, 1)
		go func() {
			tr, err := s.NextTrigger(t.Context(), "alpha", 10*time.Second)
			if err != nil {
				t.Errorf("NextTrigger: %v", err)
			}
			done <- tr
		}()
		waitingOn(t, s, 1)
		start := time.Now()
		mustTellOnce(t, s, "order:7:complete", orderTrigger("filled"), orderEvent("filled"))
		select {
		case tr := <-done:
			if tr == nil || tr.Text != "filled" {
				t.Errorf("woke with %+v; want the told trigger", tr)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("woke %v after the tell; want within the hub's read", d)
			}
		case <-time.After(8 * time.Second):
			t.Fatal("the waiting desk did not wake for the told trigger")
		}
	})
}
