package store_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/store"
	"github.com/deskbot/deskbot/store/storetest"
)

func TestDeskStatusAndPauseSurviveRestart(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		if st, _ := s.DeskStatus(ctx, "alpha"); st.State != deskbot.DeskIdle || st.Paused {
			t.Errorf("new desk = %+v; want idle, not paused", st)
		}
		s.SetDeskState(ctx, "alpha", deskbot.DeskWaiting, base)
		if err := s.SetPaused(ctx, "alpha", true, deskbot.AuditEntry{Action: "pause", By: "Asha (42)", At: base}); err != nil {
			t.Fatal(err)
		}
		st, err := storetest.MustReopen(t, s).DeskStatus(ctx, "alpha")
		if err != nil {
			t.Fatal(err)
		}
		want := deskbot.DeskStatus{Desk: "alpha", State: deskbot.DeskWaiting, Paused: true, LastActivity: base}
		if st != want {
			t.Errorf("after restart = %+v; want %+v", st, want)
		}
		s.SetPaused(ctx, "alpha", false, deskbot.AuditEntry{Action: "resume", By: "Asha (42)", At: base})
		if st, _ := s.DeskStatus(ctx, "alpha"); st.Paused {
			t.Errorf("still paused after resume")
		}
		trail, _ := s.AuditTrail(ctx, 0)
		if len(trail) != 2 || trail[0].Action != "pause" || trail[0].Desk != "alpha" || trail[1].Action != "resume" {
			t.Errorf("audit = %+v; want pause then resume of alpha", trail)
		}
	})
}

func TestHistoryIsBounded(t *testing.T) {
	s := storetest.MustOpenOptions(t, store.Options{HistoryLimit: 5})
	ctx := t.Context()
	for i := range 7 {
		if err := s.AppendHistory(ctx, "alpha", deskbot.Message{Role: "user", Content: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		limit int
		want  []string
	}{{0, []string{"2", "3", "4", "5", "6"}}, {2, []string{"5", "6"}}, {50, []string{"2", "3", "4", "5", "6"}}} {
		msgs, err := s.History(ctx, "alpha", tc.limit)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range msgs {
			got = append(got, m.Content)
		}
		if !eq(got, tc.want) {
			t.Errorf("History(%d) = %v; want %v", tc.limit, got, tc.want)
		}
	}
}

func TestCallMemory(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		calls := []deskbot.CompletedCall{
			{Call: deskbot.ToolCall{ID: "c1", Name: "bash", Arguments: []byte(`{"cmd":"ls"}`)}, Result: deskbot.ToolResult{Text: "a b"}},
			{Call: deskbot.ToolCall{ID: "c2", Name: "flatten_desk", Arguments: []byte(`{}`)}, Result: deskbot.ToolResult{Text: "held", IsError: true}},
		}
		for _, c := range calls {
			if err := s.RememberCall(ctx, "t1", c); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.CompletedCalls(ctx, "t1")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0].Call.ID != "c1" || got[1].Result != calls[1].Result || string(got[0].Call.Arguments) != `{"cmd":"ls"}` {
			t.Errorf("CompletedCalls = %+v; want %+v", got, calls)
		}
		if other, _ := s.CompletedCalls(ctx, "t2"); len(other) != 0 {
			t.Errorf("another trigger has %+v", other)
		}
		if ttl := s.Client().TTL(ctx, s.Key("calls", "t1")).Val(); ttl < 6*24*time.Hour {
			t.Errorf("call memory TTL = %v; want about 7 days", ttl)
		}
	})
}

func TestNotes(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		if _, err := s.Note(ctx, "k"); deskbot.ErrorCode(err) != deskbot.ENOTFOUND {
			t.Errorf("absent note: %v; want ENOTFOUND", err)
		}
		for i, want := range []bool{true, false} {
			ok, err := s.PutNoteOnce(ctx, "update:1", fmt.Sprint(i), 0)
			if err != nil || ok != want {
				t.Errorf("PutNoteOnce #%d = %v, %v; want %v", i, ok, err, want)
			}
		}
		if v, _ := s.Note(ctx, "update:1"); v != "0" {
			t.Errorf("note = %q; want the first value 0", v)
		}
		s.PutNote(ctx, "msg", "123", time.Hour)
		if ttl := s.Client().TTL(ctx, s.Key("note", "msg")).Val(); ttl <= 0 || ttl > time.Hour {
			t.Errorf("note TTL = %v; want up to 1h", ttl)
		}
		s.DeleteNote(ctx, "msg")
		if _, err := s.Note(ctx, "msg"); deskbot.ErrorCode(err) != deskbot.ENOTFOUND {
			t.Errorf("deleted note: %v; want ENOTFOUND", err)
		}
	})
}

// In embedded mode keys expire with the wall clock as on a real Redis
// (miniredis alone would keep them forever).
func TestEmbeddedNotesExpire(t *testing.T) {
	s := storetest.MustOpenEmbedded(t)
	ctx := t.Context()
	if err := s.PutNote(ctx, "lock", "1", 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	deskbottest.Eventually(t, "the note with a 20ms TTL to expire", func() bool {
		_, err := s.Note(ctx, "lock")
		return deskbot.ErrorCode(err) == deskbot.ENOTFOUND
	})
}

// A turn reads its desk's history whole: a turn's two messages as the
// store writes them are read without encoding/json's allocations (some
// four per message: go-redis makes about as many again).
func TestHistoryReadsCheaply(t *testing.T) {
	s := storetest.MustOpen(t)
	ctx := t.Context()
	for i := range 20 {
		if err := s.AppendHistory(ctx, "alpha",
			deskbot.Message{Role: "user", Content: "[10:30 India time] Message from Asha:\nWhat is INFY at?"},
			deskbot.Message{Role: "assistant", Content: fmt.Sprintf("(Tools I used: get_quote {\"symbol\":\"INFY\"} -> quote #%d: 1500.00)\nINFY is at 1500.", i)},
		); err != nil {
			t.Fatal(err)
		}
	}
	allocs := func(limit int) float64 {
		return testing.AllocsPerRun(20, func() {
			if msgs, err := s.History(ctx, "alpha", limit); err != nil || len(msgs) != limit {
				t.Fatalf("History(%d) = %d messages, %v", limit, len(msgs), err)
			}
		})
	}
	one, forty := allocs(1), allocs(40)
	t.Logf("allocations: %.0f for one message, %.0f for forty", one, forty)
	if per := (forty - one) / 39; per > 6 {
		t.Errorf("%.1f allocations per message read; want at most 6", per)
	}
}
