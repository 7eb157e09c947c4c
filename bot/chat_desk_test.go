package bot_test

import (
	"github.com/deskbot/deskbot/deskbottest"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/words"
)

// trade fills o on desk at the harness's clock.
func (h *e2e) trade(desk string, o deskbot.Order) {
	h.t.Helper()
	if _, err := h.broker.PlaceOrder(h.t.Context(), desk, deskbottest.NewKey(), o); err != nil {
		h.t.Fatal(err)
	}
}

// tradeAcrossMidnight fills on alpha at 14:00 and 23:50 IST on 30 November
// (realising +₹50) and at 00:10 IST on 1 December (realising +₹60): all
// three on the same UTC day, the last alone on India's today.
func (h *e2e) tradeAcrossMidnight() {
	h.t.Helper()
	h.trade("alpha", deskbot.Order{Symbol: "RELIANCE", Side: deskbot.Buy, Quantity: 10, Price: 100})
	h.clock.Add(9*time.Hour + 50*time.Minute)
	h.trade("alpha", deskbot.Order{Symbol: "RELIANCE", Side: deskbot.Sell, Quantity: 5, Price: 110})
	h.clock.Add(20 * time.Minute)
	h.trade("alpha", deskbot.Order{Symbol: "RELIANCE", Side: deskbot.Sell, Quantity: 3, Price: 120})
}

// /desks shows each desk's P&L of India's today in rupees and its models'
// tokens today, and says when a desk reaches none of its models.
func TestDesksShowTodaysPnLAndOutages(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	h.tradeAcrossMidnight()
	if err := h.st.PutNote(t.Context(), words.ModelOutageNote("beta"), "2026-11-30T18:25:00Z", 0); err != nil {
		t.Fatal(err)
	}
	got := h.replyTo(groupID, h.say(ravi, "/desks", 0)).Plain
	for _, want := range []string{
		"alpha – idle; no open requests; no activity yet\nTokens today: 0\nToday: realised +\u2060₹60.00, open +\u2060₹40.00\nRELIANCE: long 2, avg 100.00, last 120.00 · broker's, open +\u2060₹40.00",
		"beta – idle; no open requests; no activity yet\n⚠️ None of its models answers since 23:55 IST: its messages wait in its queue until one does.\nTokens today: 0\nToday: realised +\u2060₹0.00, open +\u2060₹0.00\nNo open positions.",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("/desks shows %q; want it to contain %q", got, want)
		}
	}
	for _, not := range []string{"to date", "⚠️ None of its models answers since 23:55 IST: its messages wait in its queue until one does.\nToday: realised +\u2060₹60"} {
		if strings.Contains(got, not) {
			t.Errorf("/desks shows %q; want no %q", got, not)
		}
	}
	// Once the agent clears its note, the warning goes.
	if err := h.st.DeleteNote(t.Context(), words.ModelOutageNote("beta")); err != nil {
		t.Fatal(err)
	}
	if got := h.replyTo(groupID, h.say(ravi, "/desks", 0)).Plain; strings.Contains(got, "None of its models") {
		t.Errorf("/desks after the outage shows %q", got)
	}
}

// /desk shows one desk in full through the chat, and an unknown desk is
// refused with the desks there are, changing nothing.
func TestDeskShowsOneDeskInFull(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	ctx := t.Context()
	h.tradeAcrossMidnight()
	turn := []deskbot.Message{
		{Role: "user", Content: "[00:05 India time] Message from Asha:\nTrim RELIANCE; <b>keep</b> 2"},
		{Role: "assistant", Content: `(Tools I used: get_positions {} -> RELIANCE: long 5, avg 100.00; last 110.00; place_order {"price":120,"quantity":3,"side":"sell","symbol":"RELIANCE"} -> Filled: sold 3 RELIANCE @ 120.00 (realised +60.00). Now RELIANCE: long 2, avg 100.00, last 120.00, unrealised +40.00. ` + strings.Repeat("x", 300) + ")\nTrimmed to 2; realised +60 today."},
	}
	// The turn as a desk closes it: its history, and the desk idle.
	if _, err := h.st.CloseTurn(ctx, "alpha", deskbot.TurnEnd{History: turn, Tokens: 123456, At: h.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	r, _ := h.mustHoldShown("alpha")
	if err := h.st.AddWatch(ctx, deskbot.Watch{ID: "w1", Desk: "alpha", Symbol: "RELIANCE", Direction: deskbot.WatchAbove, Level: 130, Note: "<b>add</b> 2", CreatedAt: h.clock.Now()}, 50); err != nil {
		t.Fatal(err)
	}
	got := h.replyTo(groupID, h.say(ravi, "/desk alpha", 0)).Plain
	for _, want := range []string{
		"Price watches (1):\nw1 · RELIANCE above 130.00 · \"<b>add</b> 2\" · set " + words.Time(h.clock.Now()),
		"alpha – idle; 1 open request; last activity " + words.Time(h.clock.Now()) + " IST\nTokens today: 1,23,456\nToday: realised +\u2060₹60.00, open +\u2060₹40.00\nRELIANCE: long 2, avg 100.00, last 120.00 · broker's, open +\u2060₹40.00",
		"Trades today (1):\n00:10 SELL 3 RELIANCE @ 120.00, realised +\u2060₹60.00\nOpen orders: none.",
		"Held calls (1; /requests shows their buttons):\nalpha: BUY 10 RELIANCE MARKET · MIS, notional ≈ ₹1,200.00 at the last price",
		"(request " + shortID(r.ID) + ")",
		"Last turn, for a trigger at 00:05 IST:\nMessage from Asha: Trim RELIANCE; <b>keep</b> 2",
		"Its tool calls (2):\n• get_positions {} -> RELIANCE: long 5, avg 100.00; last 110.00\n• place_order {",
		"Its last words: Trimmed to 2; realised +60 today.",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("/desk alpha shows %q; want it to contain %q", got, want)
		}
	}
	// A call's result is clipped by characters.
	if strings.Contains(got, strings.Repeat("x", 300)) || !strings.Contains(got, "x…\n") {
		t.Errorf("/desk alpha shows %q; want the long result clipped with …", got)
	}
	if strings.Contains(got, "14:00 BUY") || strings.Contains(got, "23:50") {
		t.Errorf("/desk alpha lists fills of another India day: %q", got)
	}

	if got := h.replyTo(groupID, h.say(ravi, "/desk beta", 0)).Plain; !strings.Contains(got, "Trades today: none.") || !strings.Contains(got, "Held calls: none waiting.") || !strings.Contains(got, "Last turn: none yet.") || !strings.Contains(got, "Price watches: none.") {
		t.Errorf("/desk beta shows %q", got)
	}

	before, err := h.st.DeskStatus(ctx, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ text, want string }{
		{"/desk gamma", "There is no desk named gamma. Usage: /desk <desk>. Desks: alpha, beta."},
		{"/desk", "Usage: /desk <desk>. Desks: alpha, beta."},
	} {
		if got := h.replyTo(groupID, h.say(ravi, tc.text, 0)).Plain; got != tc.want {
			t.Errorf("%q answered %q, want %q", tc.text, got, tc.want)
		}
	}
	if after, err := h.st.DeskStatus(ctx, "alpha"); err != nil || after != before {
		t.Errorf("desk state after /desk: %+v, %v; want %+v unchanged", after, err, before)
	}
	if trs := h.triggers("alpha"); len(trs) != 0 {
		t.Errorf("/desk queued triggers: %+v", trs)
	}
	if help := h.replyTo(groupID, h.say(ravi, "/help", 0)).Plain; !strings.Contains(help, "/desk <desk> – one desk in full") {
		t.Errorf("/help reads %q; want /desk in it", help)
	}
}

// The last turn in /desk is in people's words: the notes the service
// wrote into the desk's history for its model (how old the trigger was
// when the model read it, a turn that ended without words) do not reach
// the chat.
func TestDeskLastTurnLeavesOutNotesForTheModel(t *testing.T) {
	h := mustE2E(t)
	ctx := t.Context()
	sent := h.clock.Now().Add(-3 * time.Hour)
	for _, tt := range []struct {
		name, words, want string
	}{
		{"no reply", words.NoReplyNote, "Its last words: " + words.NoReplyWords},
		{"cut off", words.CappedNote, "Its last words: " + words.CappedWords},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// The turn as the agent writes it (agent's triggerText and
			// summary): a message read three hours late.
			turn := []deskbot.Message{
				{Role: "user", Content: words.TriggerClock(sent) + words.TriggerAge(sent, h.clock.Now()) + "Message from Asha:\nTrim RELIANCE"},
				{Role: "assistant", Content: tt.words},
			}
			if _, err := h.st.CloseTurn(ctx, "alpha", deskbot.TurnEnd{History: turn, At: h.clock.Now()}); err != nil {
				t.Fatal(err)
			}
			got := h.replyTo(groupID, h.say(ravi, "/desk alpha", 0)).Plain
			for _, note := range []string{"This was sent", "before acting on it", tt.words} {
				if strings.Contains(got, note) {
					t.Errorf("/desk alpha shows the model's note %q:\n%s", note, got)
				}
			}
			if want := "Last turn, for a trigger at " + words.Time(sent) + " IST:\nMessage from Asha: Trim RELIANCE"; !strings.Contains(got, want) {
				t.Errorf("/desk alpha shows %q; want it to contain %q", got, want)
			}
			if !strings.Contains(got, tt.want) {
				t.Errorf("/desk alpha shows %q; want it to contain %q", got, tt.want)
			}
		})
	}
}
