package store_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/store"
	"github.com/deskbot/deskbot/store/storetest"
	"github.com/redis/go-redis/v9"
)

// taken is what TakeTurn returned.
type taken struct {
	tr    *deskbot.Trigger
	st    deskbot.DeskStatus
	hist  []deskbot.Message
	calls []deskbot.CompletedCall
}

func mustTake(t *testing.T, s *store.Store, desk string) taken {
	t.Helper()
	tr, st, hist, calls, err := s.TakeTurn(t.Context(), desk, 3, base)
	if err != nil {
		t.Fatalf("TakeTurn(%s): %v", desk, err)
	}
	return taken{tr, st, hist, calls}
}

// TakeTurn hands out triggers as NextTrigger does (the one in hand first,
// then the queue, in order; nothing from an empty inbox, whose group does
// not exist yet), and with each what OpenTurn reads for it.
func TestTakeTurnIsNextTriggerAndOpenTurn(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		if got := mustTake(t, s, "alpha"); got.tr != nil {
			t.Fatalf("empty inbox gave %+v; want nothing", got.tr)
		}
		for i := range 5 {
			if err := s.AppendHistory(ctx, "alpha", deskbot.Message{Role: "user", Content: fmt.Sprint(i)}); err != nil {
				t.Fatal(err)
			}
		}
		for _, text := range []string{"first", "second"} {
			if err := s.Enqueue(ctx, deskbot.Trigger{Desk: "alpha", Kind: deskbot.TriggerMessage, Text: text}); err != nil {
				t.Fatal(err)
			}
		}

		first := mustTake(t, s, "alpha")
		if first.tr == nil || first.tr.Text != "first" || first.tr.StreamID == "" {
			t.Fatalf("first take = %+v; want the first trigger, with its stream id", first.tr)
		}
		call := deskbot.CompletedCall{Call: deskbot.ToolCall{ID: "c1", Name: "get_quote", Arguments: []byte(`{"symbol":"INFY"}`)}, Result: deskbot.ToolResult{Text: "1500"}}
		if err := s.RememberCall(ctx, first.tr.ID, call); err != nil {
			t.Fatal(err)
		}

		// A crash mid-turn: the trigger is in hand and comes first, with
		// the calls it made.
		again := mustTake(t, storetest.MustReopen(t, s), "alpha")
		if again.tr == nil || again.tr.ID != first.tr.ID {
			t.Fatalf("take after a crash = %+v; want %s again", again.tr, first.tr.ID)
		}
		wantHist, _ := s.History(ctx, "alpha", 3)
		if !reflect.DeepEqual(again.hist, wantHist) {
			t.Errorf("history = %v; want %v", again.hist, wantHist)
		}
		if len(again.calls) != 1 || !reflect.DeepEqual(again.calls[0], call) {
			t.Errorf("calls = %+v; want %+v", again.calls, call)
		}
		if err := s.AckTrigger(ctx, again.tr); err != nil {
			t.Fatal(err)
		}
		if next := mustTake(t, s, "alpha"); next.tr == nil || next.tr.Text != "second" || len(next.calls) != 0 {
			t.Errorf("after the ack took %+v with calls %v; want second, none made", next.tr, next.calls)
		}
		if other := mustTake(t, s, "beta"); other.tr != nil {
			t.Errorf("beta took %+v; want nothing (alpha's triggers are alpha's)", other.tr)
		}
	})
}

// A Redis that lost its scripts (a restart, a failover) is given the
// script again, and the take goes on.
func TestTakeTurnAfterScriptsLost(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		if err := s.Enqueue(ctx, deskbot.Trigger{Desk: "alpha", Text: "first"}); err != nil {
			t.Fatal(err)
		}
		if err := s.Client().ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if got := mustTake(t, s, "alpha"); got.tr == nil || got.tr.Text != "first" {
			t.Fatalf("take after SCRIPT FLUSH = %+v; want the trigger", got.tr)
		}
	})
}

// An entry in hand that was trimmed away is what the script cannot take
// for sure: it is left to NextTrigger, which passes over it.
func TestTakeTurnLeavesATrimmedEntryToNextTrigger(t *testing.T) {
	storetest.NeedsRealRedis(t, "XREADGROUP's report of an entry in hand that was deleted "+
		"(it leaves the entry out, so the script takes the next one, where Redis gives the entry's id with no fields)")
	s := storetest.MustOpen(t)
	ctx := t.Context()
	rdb := s.Client()
	if err := s.Enqueue(ctx, deskbot.Trigger{Desk: "alpha", Text: "first"}); err != nil {
		t.Fatal(err)
	}
	first := mustTake(t, s, "alpha")
	if first.tr == nil || first.tr.Text != "first" {
		t.Fatalf("first take = %+v; want the trigger", first.tr)
	}
	if err := s.Enqueue(ctx, deskbot.Trigger{Desk: "alpha", Text: "second"}); err != nil {
		t.Fatal(err)
	}
	// The entry in hand disappears from the stream (XDEL without XACK).
	if err := rdb.XDel(ctx, s.Key("inbox", "alpha"), first.tr.StreamID).Err(); err != nil {
		t.Fatal(err)
	}
	if got := mustTake(t, s, "alpha"); got.tr != nil {
		t.Fatalf("take with a trimmed entry in hand = %+v; want nothing (NextTrigger's to deal with)", got.tr)
	}
	if next := mustNext(t, s, "alpha"); next == nil || next.Text != "second" {
		t.Errorf("NextTrigger then = %+v; want second", next)
	}
}

// A trigger's id is read by the script (to find its calls) and by Go (for
// the turn): an entry where the two would read it apart (a field named
// twice, in two cases) gets the calls of the id the turn uses, so a call
// it made is replayed, never run again.
func TestTakeTurnReadsCallsUnderTheTurnsID(t *testing.T) {
	s := storetest.MustOpen(t)
	ctx := t.Context()
	if err := s.Enqueue(ctx, deskbot.Trigger{Desk: "alpha", Text: "warm-up"}); err != nil {
		t.Fatal(err) // makes the stream; the group comes with the first take
	}
	warm := mustTake(t, s, "alpha")
	if err := s.AckTrigger(ctx, warm.tr); err != nil {
		t.Fatal(err)
	}
	data := `{"id":"lua-reads-this","ID":"go-reads-this","desk":"alpha","kind":"message","text":"odd"}`
	if err := s.Client().XAdd(ctx, &redis.XAddArgs{Stream: s.Key("inbox", "alpha"), Values: []any{"data", data}}).Err(); err != nil {
		t.Fatal(err)
	}
	call := deskbot.CompletedCall{Call: deskbot.ToolCall{ID: "c1", Name: "place_order", Arguments: []byte(`{}`)}, Result: deskbot.ToolResult{Text: "placed"}}
	if err := s.RememberCall(ctx, "go-reads-this", call); err != nil {
		t.Fatal(err)
	}
	got := mustTake(t, s, "alpha")
	if got.tr == nil || got.tr.ID != "go-reads-this" {
		t.Fatalf("took %+v; want the trigger as Go reads it", got.tr)
	}
	if len(got.calls) != 1 || got.calls[0].Call.ID != "c1" {
		t.Errorf("calls = %+v; want the one made under the turn's id", got.calls)
	}
}

// OpenTurn is the one way a desk's turn opens: it takes a queued trigger
// with what its turn starts from, waits for one when there is none, and
// opens the one that arrives; a paused desk keeps its trigger in hand.
// A desk with nothing queued waits on its inbox: it does not ask to take a
// queued trigger (a round trip and a read of its history) every poll.
func TestOpenTurnTakesWaitsAndOpens(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		now := func() time.Time { return base }
		if err := s.AppendHistory(ctx, "alpha", deskbot.Message{Role: "user", Content: "before"}); err != nil {
			t.Fatal(err)
		}
		if err := s.Enqueue(ctx, deskbot.Trigger{Desk: "alpha", Kind: deskbot.TriggerMessage, Text: "queued"}); err != nil {
			t.Fatal(err)
		}
		o, err := s.OpenTurn(ctx, "alpha", 20*time.Millisecond, 10, now)
		if err != nil || o.Trigger == nil || o.Trigger.Text != "queued" {
			t.Fatalf("OpenTurn with one queued = %+v, %v; want the queued trigger", o, err)
		}
		if len(o.History) != 1 || o.History[0].Content != "before" {
			t.Errorf("history = %+v; want the one message", o.History)
		}
		if st, _ := s.DeskStatus(ctx, "alpha"); st.State != deskbot.DeskWorking {
			t.Errorf("state after OpenTurn = %q; want working", st.State)
		}
		if _, err := s.CloseTurn(ctx, "alpha", deskbot.TurnEnd{At: base, Ack: o.Trigger}); err != nil {
			t.Fatal(err)
		}

		takes := store.CountTakes(s)
		if o, err := s.OpenTurn(ctx, "alpha", 20*time.Millisecond, 10, now); err != nil || o.Trigger != nil {
			t.Fatalf("OpenTurn on an empty inbox = %+v, %v; want none", o, err)
		}
		before := takes.Load()
		for range 15 {
			if o, err := s.OpenTurn(ctx, "alpha", 20*time.Millisecond, 10, now); err != nil || o.Trigger != nil {
				t.Fatalf("OpenTurn on an empty inbox = %+v, %v; want none", o, err)
			}
		}
		if got := takes.Load() - before; got > 1 {
			t.Errorf("an idle desk asked to take a queued trigger %d times in 15 polls; want at most once", got)
		}

		// Woken by a trigger, it opens its turn.
		type opened struct {
			o   deskbot.OpenedTurn
			err error
		}
		got := make(chan opened, 1)
		go func() {
			o, err := s.OpenTurn(ctx, "alpha", 5*time.Second, 10, now)
			got <- opened{o, err}
		}()
		deskbottest.Eventually(t, "the desk to wait", func() bool { return s.InboxHubStats().Waiting == 1 })
		if err := s.Enqueue(ctx, deskbot.Trigger{Desk: "alpha", Kind: deskbot.TriggerMessage, Text: "later"}); err != nil {
			t.Fatal(err)
		}
		w := <-got
		if w.err != nil || w.o.Trigger == nil || w.o.Trigger.Text != "later" || len(w.o.History) != 1 {
			t.Fatalf("OpenTurn woken = %+v, %v; want the trigger queued while it waited, with the history", w.o, w.err)
		}

		// Paused, the desk keeps the trigger in hand: the next open hands it
		// back.
		if err := s.SetPaused(ctx, "alpha", true, deskbot.AuditEntry{Action: "pause", By: "Asha", At: base}); err != nil {
			t.Fatal(err)
		}
		o, err = s.OpenTurn(ctx, "alpha", 20*time.Millisecond, 10, now)
		if err != nil || o.Trigger == nil || o.Trigger.ID != w.o.Trigger.ID || !o.Status.Paused {
			t.Fatalf("OpenTurn of a paused desk = %+v, %v; want the trigger in hand, paused", o, err)
		}
		if n, _ := s.PendingTriggers(ctx, "alpha"); n != 1 {
			t.Errorf("pending = %d; want the trigger kept in hand", n)
		}
	})
}
