package store_test

import (
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/store"
	"github.com/deskbot/deskbot/store/storetest"
)

func mustNext(t *testing.T, s *store.Store, desk string) *deskbot.Trigger {
	t.Helper()
	tr, err := s.NextTrigger(t.Context(), desk, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// A trigger taken and not acknowledged (the process died mid-turn) is handed
// out again after a restart; acknowledged ones are gone.
func TestInboxRedeliversAfterRestart(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		for _, text := range []string{"first", "second"} {
			if err := s.Enqueue(ctx, deskbot.Trigger{Desk: "alpha", Kind: deskbot.TriggerMessage, Text: text}); err != nil {
				t.Fatal(err)
			}
		}
		s.Enqueue(ctx, deskbot.Trigger{Desk: "beta", Text: "other desk"})

		took := mustNext(t, s, "alpha")
		if took == nil || took.Text != "first" || took.ID == "" || took.CreatedAt.IsZero() {
			t.Fatalf("first trigger = %+v; want first, with id and time", took)
		}
		restarted := storetest.MustReopen(t, s)
		again := mustNext(t, restarted, "alpha")
		if again == nil || again.ID != took.ID {
			t.Fatalf("after restart got %+v; want the unacknowledged %s again", again, took.ID)
		}
		if n, _ := restarted.PendingTriggers(ctx, "alpha"); n != 2 {
			t.Errorf("pending = %d; want 2 (one in hand, one queued)", n)
		}
		if err := restarted.AckTrigger(ctx, again); err != nil {
			t.Fatal(err)
		}
		if next := mustNext(t, restarted, "alpha"); next == nil || next.Text != "second" {
			t.Errorf("after ack got %+v; want second", next)
		} else {
			restarted.AckTrigger(ctx, next)
		}
		if none := mustNext(t, restarted, "alpha"); none != nil {
			t.Errorf("empty inbox gave %+v; want nil", none)
		}
		if n, _ := restarted.PendingTriggers(ctx, "alpha"); n != 0 {
			t.Errorf("pending after acks = %d; want 0", n)
		}
		if other := mustNext(t, s, "beta"); other == nil || other.Text != "other desk" {
			t.Errorf("beta's inbox = %+v; want its own trigger", other)
		}
	})
}
