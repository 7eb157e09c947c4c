package store_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/store"
	"github.com/deskbot/deskbot/store/storetest"
)

// mustEvents reads every event published so far, for a fresh group.
func mustEvents(t *testing.T, s *store.Store, group string) []deskbot.Event {
	t.Helper()
	evs, err := s.ReadEvents(t.Context(), group, "c", 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// OpenTurn reads in one round trip what DeskStatus, History and
// CompletedCalls read one by one; a paused desk is left as it is.
func TestOpenTurnReadsWhatTheTurnStartsFrom(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		for i := range 5 {
			if err := s.AppendHistory(ctx, "alpha", deskbot.Message{Role: "user", Content: fmt.Sprint(i)}); err != nil {
				t.Fatal(err)
			}
		}
		call := deskbot.CompletedCall{Call: deskbot.ToolCall{ID: "c1", Name: "get_quote", Arguments: []byte(`{"symbol":"INFY"}`)}, Result: deskbot.ToolResult{Text: "1500"}}
		if err := s.RememberCall(ctx, "trig", call); err != nil {
			t.Fatal(err)
		}
		if err := s.SetPaused(ctx, "alpha", true, deskbot.AuditEntry{Action: "pause", By: "Asha", At: base}); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			desk, trigger string
			limit         int
		}{
			{"alpha", "trig", 3},
			{"alpha", "trig", 0},
			{"beta", "none", 3},
		} {
			wantSt, _ := s.DeskStatus(ctx, tc.desk)
			st, hist, calls, err := s.OpenTurnFor(ctx, tc.desk, tc.trigger, tc.limit, base)
			if err != nil {
				t.Fatal(err)
			}
			wantHist, _ := s.History(ctx, tc.desk, tc.limit)
			wantCalls, _ := s.CompletedCalls(ctx, tc.trigger)
			if st != wantSt {
				t.Errorf("OpenTurn(%s) status = %+v; want %+v", tc.desk, st, wantSt)
			}
			if len(hist) != len(wantHist) || (len(hist) > 0 && !reflect.DeepEqual(hist, wantHist)) {
				t.Errorf("OpenTurn(%s, %d) history = %v; want %v", tc.desk, tc.limit, hist, wantHist)
			}
			if len(calls) != len(wantCalls) || (len(calls) > 0 && !reflect.DeepEqual(calls, wantCalls)) {
				t.Errorf("OpenTurn(%s) calls = %v; want %v", tc.trigger, calls, wantCalls)
			}
		}
	})
}

// Opening a turn of a desk that is not paused marks it working, with its
// event; a paused desk's state and the events stay as they were. Both ways
// of opening one agree: OpenTurn (after a wait on the inbox) and TakeTurn
// (a trigger queued), which keeps the trigger in hand either way.
func TestOpenTurnMarksWorkingUnlessPaused(t *testing.T) {
	opens := []struct {
		name string
		open func(t *testing.T, s *store.Store) deskbot.DeskStatus
	}{
		{"OpenTurn", func(t *testing.T, s *store.Store) deskbot.DeskStatus {
			st, _, _, err := s.OpenTurnFor(t.Context(), "alpha", "trig", 10, base.Add(time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			return st
		}},
		{"TakeTurn", func(t *testing.T, s *store.Store) deskbot.DeskStatus {
			if err := s.Enqueue(t.Context(), deskbot.Trigger{Desk: "alpha", Text: "go"}); err != nil {
				t.Fatal(err)
			}
			got := mustTake(t, s, "alpha")
			if got.tr == nil {
				t.Fatal("TakeTurn took no trigger; want the one queued")
			}
			return got.st
		}},
	}
	for _, o := range opens {
		for _, paused := range []bool{false, true} {
			t.Run(fmt.Sprint(o.name, "/paused=", paused), func(t *testing.T) {
				backends(t, func(t *testing.T, s *store.Store) {
					ctx := t.Context()
					if err := s.SetDeskState(ctx, "alpha", deskbot.DeskIdle, base); err != nil {
						t.Fatal(err)
					}
					if err := s.SetPaused(ctx, "alpha", paused, deskbot.AuditEntry{Action: "pause", By: "Asha", At: base}); err != nil {
						t.Fatal(err)
					}
					st := o.open(t, s)
					if st.Paused != paused || st.State != deskbot.DeskIdle {
						t.Errorf("%s status = %+v; want paused=%v, idle as read", o.name, st, paused)
					}
					after, _ := s.DeskStatus(ctx, "alpha")
					var states []string
					for _, e := range mustEvents(t, s, "g") {
						if e.Kind == deskbot.EventDeskState {
							states = append(states, e.Text)
						}
					}
					want, wantStates := deskbot.DeskWorking, []string{"working"}
					if paused {
						want, wantStates = deskbot.DeskIdle, nil
					}
					if after.State != want {
						t.Errorf("state after %s = %q; want %q", o.name, after.State, want)
					}
					if !reflect.DeepEqual(states, wantStates) {
						t.Errorf("desk_state events = %q; want %q", states, wantStates)
					}
					if n, _ := s.PendingTriggers(ctx, "alpha"); o.name == "TakeTurn" && n != 1 {
						t.Errorf("pending = %d; want the trigger kept in hand", n)
					}
				})
			})
		}
	}
}

func TestAnnounceDeskState(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		if err := s.AnnounceDeskState(ctx, "alpha", deskbot.DeskWorking, base); err != nil {
			t.Fatal(err)
		}
		st, err := s.DeskStatus(ctx, "alpha")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := st.State, deskbot.DeskWorking; got != want {
			t.Errorf("state = %q; want %q", got, want)
		}
		if !st.LastActivity.Equal(base) {
			t.Errorf("last activity = %v; want %v", st.LastActivity, base)
		}
		evs := mustEvents(t, s, "g")
		if len(evs) != 1 || evs[0].Kind != deskbot.EventDeskState || evs[0].Text != "working" || evs[0].Desk != "alpha" || !evs[0].Time.Equal(base) {
			t.Errorf("events = %+v; want one desk_state working of alpha", evs)
		}
	})
}

// CloseTurn writes the words, then the history, then the state the desk
// rests in, which counts every open request of the desk.
func TestCloseTurn(t *testing.T) {
	for _, tc := range []struct {
		name    string
		held    bool
		open    bool // a request of the desk is open from an earlier turn
		other   bool // a request of another desk is open
		words   bool
		want    deskbot.DeskState
		wantEvs []string
	}{
		{name: "idle", words: true, want: deskbot.DeskIdle, wantEvs: []string{"desk_message", "desk_state idle"}},
		{name: "held now", held: true, want: deskbot.DeskWaiting, wantEvs: []string{"desk_state waiting for approval"}},
		{name: "open before", open: true, words: true, want: deskbot.DeskWaiting, wantEvs: []string{"desk_message", "desk_state waiting for approval"}},
		{name: "another desk's open", other: true, want: deskbot.DeskIdle, wantEvs: []string{"desk_state idle"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			backends(t, func(t *testing.T, s *store.Store) {
				ctx := t.Context()
				if tc.open {
					mustCreate(t, s, "r1", base.Add(time.Hour))
				}
				if tc.other {
					r := newRequest("r2", base.Add(time.Hour))
					r.Desk = "beta"
					if err := s.CreateRequest(ctx, r, deskbot.AuditEntry{Action: "hold", By: "system", At: base}, deskbot.Event{Kind: deskbot.EventUserRequest, Time: base}); err != nil {
						t.Fatal(err)
					}
				}
				start := len(mustEvents(t, s, "g"))
				var words *deskbot.Event
				if tc.words {
					words = &deskbot.Event{Kind: deskbot.EventDeskMessage, Desk: "alpha", Time: base, TriggerID: "trig", Text: "INFY is at 1500."}
				}
				hist := []deskbot.Message{{Role: "user", Content: "What is INFY at?"}, {Role: "assistant", Content: "INFY is at 1500."}}
				got, err := s.CloseTurn(ctx, "alpha", deskbot.TurnEnd{Words: words, History: hist, HeldNow: tc.held, At: base})
				if err != nil {
					t.Fatal(err)
				}
				if got != tc.want {
					t.Errorf("CloseTurn = %q; want %q", got, tc.want)
				}
				st, _ := s.DeskStatus(ctx, "alpha")
				if st.State != tc.want || !st.LastActivity.Equal(base) {
					t.Errorf("status = %+v; want %q at %v", st, tc.want, base)
				}
				if h, _ := s.History(ctx, "alpha", 0); !reflect.DeepEqual(h, hist) {
					t.Errorf("history = %v; want %v", h, hist)
				}
				var evs []string
				for _, e := range mustEvents(t, s, "g2")[start:] {
					evs = append(evs, string(e.Kind)+map[bool]string{true: " " + e.Text, false: ""}[e.Kind == deskbot.EventDeskState])
				}
				if !reflect.DeepEqual(evs, tc.wantEvs) {
					t.Errorf("events = %q; want %q", evs, tc.wantEvs)
				}
			})
		})
	}
}

// The history CloseTurn appends is trimmed like AppendHistory's.
func TestCloseTurnTrimsHistory(t *testing.T) {
	s := storetest.MustOpenOptions(t, store.Options{HistoryLimit: 5})
	ctx := t.Context()
	for i := range 4 {
		if _, err := s.CloseTurn(ctx, "alpha", deskbot.TurnEnd{History: []deskbot.Message{{Role: "user", Content: fmt.Sprint(i)}, {Role: "assistant", Content: "ok"}}, At: base}); err != nil {
			t.Fatal(err)
		}
	}
	h, err := s.History(ctx, "alpha", 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range h {
		got = append(got, m.Content)
	}
	if want := []string{"ok", "2", "ok", "3", "ok"}; !reflect.DeepEqual(got, want) {
		t.Errorf("history = %q; want %q", got, want)
	}
}

// CloseTurn acknowledges the trigger with the rest, as AckTrigger does: it
// is not handed out again, and the next one is.
func TestCloseTurnAcknowledgesTheTrigger(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		for _, text := range []string{"first", "second"} {
			if err := s.Enqueue(ctx, deskbot.Trigger{Desk: "alpha", Kind: deskbot.TriggerMessage, Text: text}); err != nil {
				t.Fatal(err)
			}
		}
		first := mustNext(t, s, "alpha")
		if _, err := s.CloseTurn(ctx, "alpha", deskbot.TurnEnd{At: base, Ack: &deskbot.Trigger{Desk: "alpha"}}); deskbot.ErrorCode(err) != deskbot.EINVALID {
			t.Errorf("CloseTurn with a trigger not read from the inbox: %v; want EINVALID", err)
		}
		if n, _ := s.PendingTriggers(ctx, "alpha"); n != 2 {
			t.Fatalf("pending after a refused close = %d; want 2", n)
		}
		if _, err := s.CloseTurn(ctx, "alpha", deskbot.TurnEnd{At: base, Ack: first}); err != nil {
			t.Fatal(err)
		}
		if n, _ := s.PendingTriggers(ctx, "alpha"); n != 1 {
			t.Errorf("pending after closing the first turn = %d; want 1", n)
		}
		if next := mustNext(t, storetest.MustReopen(t, s), "alpha"); next == nil || next.Text != "second" {
			t.Errorf("after a restart the inbox hands out %+v; want the second trigger", next)
		}
	})
}

// RecordResult publishes the call's event, remembers the call as
// RememberCall does and publishes its result event, in that order; with no
// call event and no call it only publishes the result.
func TestRecordResult(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		call := deskbot.ToolCall{ID: "c1", Name: "get_quote", Arguments: []byte(`{"symbol":"INFY"}`)}
		done := deskbot.CompletedCall{Call: call, Result: deskbot.ToolResult{Text: "1500"}}
		ev := deskbot.Event{Kind: deskbot.EventToolResult, Desk: "alpha", Time: base, TriggerID: "trig", Call: &call, Result: &done.Result}
		callEv := deskbot.Event{Kind: deskbot.EventToolCall, Desk: "alpha", Time: base, TriggerID: "trig", Call: &call}
		if err := s.RecordResult(ctx, "trig", &callEv, &done, ev); err != nil {
			t.Fatal(err)
		}
		if err := s.RecordResult(ctx, "trig", nil, nil, ev); err != nil {
			t.Fatal(err)
		}
		calls, err := s.CompletedCalls(ctx, "trig")
		if err != nil {
			t.Fatal(err)
		}
		if len(calls) != 1 || !reflect.DeepEqual(calls[0], done) {
			t.Errorf("completed calls = %+v; want the one call", calls)
		}
		if ttl := s.Client().PTTL(ctx, s.Key("calls", "trig")).Val(); ttl <= 0 {
			t.Errorf("call memory TTL = %v; want one", ttl)
		}
		evs := mustEvents(t, s, "g")
		var kinds []deskbot.EventKind
		for _, e := range evs {
			kinds = append(kinds, e.Kind)
		}
		if want := []deskbot.EventKind{deskbot.EventToolCall, deskbot.EventToolResult, deskbot.EventToolResult}; !reflect.DeepEqual(kinds, want) {
			t.Errorf("events = %q; want %q", kinds, want)
		}
		if len(evs) == 3 && (evs[1].Result == nil || evs[1].Result.Text != "1500" || evs[0].Call == nil || evs[0].Call.Name != "get_quote") {
			t.Errorf("events = %+v; want the call, then its result", evs)
		}
	})
}

// The tokens a desk's turns spend add up for its India day, and a turn on
// a new India day starts the count afresh.
func TestCloseTurnCountsTodaysTokens(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		day := time.Date(2026, 12, 4, 18, 0, 0, 0, time.UTC) // 23:30 India time
		for _, tc := range []struct {
			at         time.Time
			tokens     int64
			wantDay    string
			wantTokens int64
		}{
			{day, 1200, "2026-12-04", 1200},
			{day.Add(10 * time.Minute), 300, "2026-12-04", 1500},
			{day.Add(20 * time.Minute), 0, "2026-12-04", 1500}, // a turn that spent none
			{day.Add(40 * time.Minute), 50, "2026-12-05", 50},  // 00:10 India time, the next day
		} {
			if _, err := s.CloseTurn(ctx, "alpha", deskbot.TurnEnd{Tokens: tc.tokens, At: tc.at}); err != nil {
				t.Fatal(err)
			}
			st, err := s.DeskStatus(ctx, "alpha")
			if err != nil {
				t.Fatal(err)
			}
			if got, want := st.TokensDay+" "+fmt.Sprint(st.Tokens), tc.wantDay+" "+fmt.Sprint(tc.wantTokens); got != want {
				t.Errorf("after a turn at %v spending %d: day and tokens = %s, want %s", tc.at, tc.tokens, got, want)
			}
		}
	})
}
