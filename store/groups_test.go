package store_test

import (
	"testing"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/store"
)

func mustBacklog(t *testing.T, s *store.Store, group string) (int64, int64) {
	t.Helper()
	p, u, err := s.EventBacklog(t.Context(), group)
	if err != nil {
		t.Fatal(err)
	}
	return p, u
}

// The outbox depth an operator sees: what the group was given and has not
// acknowledged, and what it has not read yet.
func TestEventBacklog(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		if p, u := mustBacklog(t, s, "telegram"); p != 0 || u != 0 {
			t.Fatalf("empty stream: backlog %d pending, %d undelivered; want 0, 0", p, u)
		}
		mustPublish(t, s, deskbot.Event{Kind: deskbot.EventDeskMessage, Text: "a"},
			deskbot.Event{Kind: deskbot.EventDeskMessage, Text: "b"},
			deskbot.Event{Kind: deskbot.EventDeskMessage, Text: "c"})
		if p, u := mustBacklog(t, s, "telegram"); p != 0 || u != 3 {
			t.Fatalf("group not created yet: %d pending, %d undelivered; want 0, 3", p, u)
		}
		evs, err := s.ReadEvents(t.Context(), "telegram", "bot", 2, 0)
		if err != nil {
			t.Fatal(err)
		}
		if p, u := mustBacklog(t, s, "telegram"); p != 2 || u != 1 {
			t.Fatalf("after reading 2: %d pending, %d undelivered; want 2, 1", p, u)
		}
		if err := s.AckEvent(t.Context(), "telegram", evs[0].ID); err != nil {
			t.Fatal(err)
		}
		if p, u := mustBacklog(t, s, "telegram"); p != 1 || u != 1 {
			t.Fatalf("after one ack: %d pending, %d undelivered; want 1, 1", p, u)
		}
	})
}

// A metrics group created on a stream with history sees only what comes
// after, and creating it again (a restart) keeps its place.
func TestCreateEventGroupAtEnd(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		mustPublish(t, s, deskbot.Event{Kind: deskbot.EventDeskMessage, Text: "old"})
		if err := s.CreateEventGroupAtEnd(t.Context(), "metrics"); err != nil {
			t.Fatal(err)
		}
		mustPublish(t, s, deskbot.Event{Kind: deskbot.EventDeskMessage, Text: "new"})
		if err := s.CreateEventGroupAtEnd(t.Context(), "metrics"); err != nil {
			t.Fatalf("second create: %v", err)
		}
		mustPublish(t, s, deskbot.Event{Kind: deskbot.EventDeskMessage, Text: "newer"})
		got := texts(mustRead(t, s, "metrics", "m", 0))
		if len(got) != 2 || got[0] != "new" || got[1] != "newer" {
			t.Fatalf("metrics group read %q, want [new newer]", got)
		}
	})
}
