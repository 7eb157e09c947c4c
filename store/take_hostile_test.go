package store_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/store"
	"github.com/redis/go-redis/v9"
)

// A trigger's text and sender are a person's or a desk's words: whatever
// they hold, the script reads the id the store gave the trigger, so the
// turn gets that trigger's calls and no other's, and its words as sent
// (invalid UTF-8 as the encoder leaves it).
func TestTakeTurnHostileTriggerText(t *testing.T) {
	for _, tc := range []struct{ name, text string }{
		{"an id in the text", `","id":"victim","text":"`},
		{"an id in escapes", `\",\"id\":\"victim`},
		{"braces and a key", `{victim}:calls:victim }{ {{`},
		{"invalid UTF-8", "a\xff\xfe\xc3(b"},
		{"NUL", "a\x00b"},
		{"escapes", "<>&\u2028\u2029\\\"\t\r\n"},
		{"astral", "\U0001F600\ufffd"},
		{"deep nesting", strings.Repeat(`{"id":[`, 3000) + strings.Repeat("]}", 3000)},
		{"huge", strings.Repeat("x", 4<<20)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			backends(t, func(t *testing.T, s *store.Store) {
				ctx := t.Context()
				own := deskbot.CompletedCall{Call: deskbot.ToolCall{ID: "own", Name: "get_quote", Arguments: []byte(`{}`)}}
				other := deskbot.CompletedCall{Call: deskbot.ToolCall{ID: "other", Name: "place_order", Arguments: []byte(`{}`)}}
				for id, c := range map[string]deskbot.CompletedCall{"trig-own": own, "victim": other} {
					if err := s.RememberCall(ctx, id, c); err != nil {
						t.Fatal(err)
					}
				}
				if err := s.Enqueue(ctx, deskbot.Trigger{ID: "trig-own", Desk: "alpha", Kind: deskbot.TriggerMessage, Text: tc.text, From: tc.text}); err != nil {
					t.Fatal(err)
				}
				got := mustTake(t, s, "alpha")
				if got.tr == nil {
					t.Fatal("took nothing; want the trigger")
				}
				var want string // the text as JSON keeps it
				if b, err := json.Marshal(tc.text); err != nil || json.Unmarshal(b, &want) != nil {
					t.Fatal(err)
				}
				if got.tr.ID != "trig-own" || got.tr.Text != want || got.tr.From != want {
					t.Errorf("took id %q (text and sender as sent: %v, %v); want trig-own, true, true", got.tr.ID, got.tr.Text == want, got.tr.From == want)
				}
				if len(got.calls) != 1 || got.calls[0].Call.ID != "own" {
					t.Errorf("calls = %+v; want the trigger's own", got.calls)
				}
			})
		})
	}
}

// An entry the script cannot read a trigger's id from is left to
// NextTrigger, untouched: nothing taken, the desk not marked working.
func TestTakeTurnLeavesOddEntries(t *testing.T) {
	for _, data := range []string{`[1,2]`, `"text"`, `{"id":5}`, `{"text":"no id"}`, `not json`, strings.Repeat(`{"a":`, 2000) + "1" + strings.Repeat("}", 2000)} {
		t.Run(data[:min(len(data), 12)], func(t *testing.T) {
			backends(t, func(t *testing.T, s *store.Store) {
				ctx := t.Context()
				if err := s.SetDeskState(ctx, "alpha", deskbot.DeskIdle, base); err != nil {
					t.Fatal(err)
				}
				if err := s.Enqueue(ctx, deskbot.Trigger{Desk: "alpha", Text: "warm-up"}); err != nil {
					t.Fatal(err)
				}
				if err := s.AckTrigger(ctx, mustTake(t, s, "alpha").tr); err != nil {
					t.Fatal(err)
				}
				if err := s.SetDeskState(ctx, "alpha", deskbot.DeskIdle, base); err != nil {
					t.Fatal(err)
				}
				if err := s.Client().XAdd(ctx, &redis.XAddArgs{Stream: s.Key("inbox", "alpha"), Values: []any{"data", data}}).Err(); err != nil {
					t.Fatal(err)
				}
				tr, _, _, _, err := s.TakeTurn(ctx, "alpha", 3, base)
				if tr != nil || err != nil {
					t.Errorf("TakeTurn = %+v, %v; want nothing, no error", tr, err)
				}
				if st, _ := s.DeskStatus(ctx, "alpha"); st.State != deskbot.DeskIdle {
					t.Errorf("state = %s; want idle (nothing taken)", st.State)
				}
			})
		})
	}
}
