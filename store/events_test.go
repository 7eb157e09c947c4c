package store_test

import (
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/store"
)

func mustPublish(t *testing.T, s *store.Store, evs ...deskbot.Event) {
	t.Helper()
	for _, e := range evs {
		if err := s.Publish(t.Context(), e); err != nil {
			t.Fatal(err)
		}
	}
}

func mustRead(t *testing.T, s *store.Store, group, consumer string, block time.Duration) []deskbot.Event {
	t.Helper()
	evs, err := s.ReadEvents(t.Context(), group, consumer, 10, block)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func texts(evs []deskbot.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Text
	}
	return out
}

func TestEventsDeliveredUntilAcked(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		mustCreate(t, s, "r1", base.Add(time.Minute)) // publishes user_request, text ""
		mustTransition(t, s, "r1", allow(base))
		mustPublish(t, s,
			deskbot.Event{Kind: deskbot.EventDeskMessage, Desk: "alpha", Text: "one", Time: base},
			deskbot.Event{Kind: deskbot.EventRequestDecided, RequestID: "r1", Text: "two", Time: base},
			deskbot.Event{Kind: deskbot.EventRequestLapsed, RequestID: "vanished", Text: "three", Time: base},
		)

		first := mustRead(t, s, "bot", "c1", 0)
		if want := []string{"", "one", "two", "three"}; !eq(texts(first), want) {
			t.Fatalf("first read = %q; want %q", texts(first), want)
		}
		if r := first[2].Request; r == nil || r.State != deskbot.StateRunning || r.DecidedBy != "Asha" {
			t.Errorf("request_decided carries %+v; want r1 as it stands (running, decided by Asha)", r)
		}
		if first[3].Request != nil || first[1].Request != nil {
			t.Errorf("events without a live request carry one")
		}
		if first[0].ID == "" || first[0].Request == nil || first[0].RequestID != "r1" {
			t.Errorf("created event = %+v; want an ID and r1", first[0])
		}

		// Nothing acknowledged: the consumer is handed the same events again.
		if again := mustRead(t, s, "bot", "c1", 0); !eq(texts(again), texts(first)) {
			t.Errorf("re-read = %q; want the unacknowledged %q", texts(again), texts(first))
		}
		for _, e := range first[:3] {
			if err := s.AckEvent(ctx, "bot", e.ID); err != nil {
				t.Fatal(err)
			}
		}
		if rest := mustRead(t, s, "bot", "c1", 0); !eq(texts(rest), []string{"three"}) {
			t.Errorf("after acking three = %q; want [three]", texts(rest))
		}
		s.AckEvent(ctx, "bot", first[3].ID)
		if none := mustRead(t, s, "bot", "c1", 10*time.Millisecond); len(none) != 0 {
			t.Errorf("after acking all = %q; want nothing", texts(none))
		}

		// A group created later still gets everything published before it.
		if all := mustRead(t, s, "audit-log", "x", 0); len(all) != 4 {
			t.Errorf("second group got %q; want all 4", texts(all))
		}
	})
}

// A blocked reader wakes for an event published while it waits.
func TestReadEventsBlocks(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		mustRead(t, s, "bot", "c1", 0) // creates the group
		done := make(chan []deskbot.Event)
		go func() {
			evs, _ := s.ReadEvents(t.Context(), "bot", "c1", 10, 5*time.Second)
			done <- evs
		}()
		var evs []deskbot.Event
		deskbottest.Eventually(t, "the blocked read to return", func() bool {
			// Publish until the reader sees it: the reader may not be blocked yet.
			mustPublish(t, s, deskbot.Event{Kind: deskbot.EventDeskMessage, Text: "wake", Time: base})
			select {
			case evs = <-done:
				return true
			default:
				return false
			}
		})
		if len(evs) == 0 || evs[0].Text != "wake" {
			t.Errorf("blocked read returned %q; want wake", texts(evs))
		}
	})
}

// A consumer holding events in hand reads new ones past them, and pages
// through what it holds after a restart.
func TestReadEventsAfter(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		mustPublish(t, s,
			deskbot.Event{Kind: deskbot.EventDeskMessage, Desk: "alpha", Text: "one", Time: base},
			deskbot.Event{Kind: deskbot.EventDeskMessage, Desk: "alpha", Text: "two", Time: base},
		)
		first, err := s.ReadEventsAfter(ctx, "bot", "c1", ">", 10, 0)
		if err != nil {
			t.Fatal(err)
		}
		mustPublish(t, s, deskbot.Event{Kind: deskbot.EventDeskMessage, Desk: "alpha", Text: "three", Time: base})
		next, err := s.ReadEventsAfter(ctx, "bot", "c1", ">", 10, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := texts(append(first, next...)), []string{"one", "two", "three"}; !eq(got, want) {
			t.Fatalf("new reads = %q; want %q", got, want)
		}
		if err := s.AckEvent(ctx, "bot", first[1].ID); err != nil {
			t.Fatal(err)
		}
		var held []string
		after := "0"
		for {
			page, err := s.ReadEventsAfter(ctx, "bot", "c1", after, 1, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				break
			}
			held = append(held, texts(page)...)
			after = page[len(page)-1].ID
		}
		if want := []string{"one", "three"}; !eq(held, want) {
			t.Fatalf("pending pages = %q; want %q", held, want)
		}
	})
}

// AckEvents acknowledges every event it names at once, and nothing else.
func TestAckEvents(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		mustPublish(t, s,
			deskbot.Event{Kind: deskbot.EventDeskMessage, Desk: "alpha", Text: "one", Time: base},
			deskbot.Event{Kind: deskbot.EventDeskMessage, Desk: "alpha", Text: "two", Time: base},
			deskbot.Event{Kind: deskbot.EventDeskMessage, Desk: "alpha", Text: "three", Time: base},
		)
		first := mustRead(t, s, "bot", "c1", 0)
		if err := s.AckEvents(ctx, "bot"); err != nil {
			t.Fatalf("AckEvents of none: %v", err)
		}
		if err := s.AckEvents(ctx, "bot", first[0].ID, first[2].ID); err != nil {
			t.Fatal(err)
		}
		if rest := mustRead(t, s, "bot", "c1", 0); !eq(texts(rest), []string{"two"}) {
			t.Errorf("after acking one and three = %q; want [two]", texts(rest))
		}
	})
}
