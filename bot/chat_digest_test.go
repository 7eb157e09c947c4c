package bot_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/bot"
	"github.com/deskbot/deskbot/bot/telegramtest"
)

// A flood of held calls is shown as a digest: Deny on a row decides
// exactly that request; a row that shows its call whole offers Allow; a
// row that cannot offers Open, and a forged Allow on it is refused until
// the call is opened and allowed from its own message.
func TestDigestRowsDecideExactlyTheirRequest(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	h.shutdown()
	var reqs []*deskbot.Request
	for i := range 5 {
		args := fmt.Sprintf(`{"symbol":"S%d","side":"buy","quantity":%d}`, i, i+1)
		if i == 4 {
			args = `{"symbol":"LONG","side":"buy","quantity":1,"note":"` + strings.Repeat("n", 400) + `"}`
		}
		r, _, err := h.gate.Hold(t.Context(), "alpha", fmt.Sprintf("trigger-%d", i), deskbot.ToolCall{ID: fmt.Sprintf("call_%d", i), Name: "place_order", Arguments: json.RawMessage(args)})
		if err != nil {
			t.Fatalf("hold: %v", err)
		}
		reqs = append(reqs, r)
	}
	h.start()
	d := h.waitMessage(func(m telegramtest.Message) bool {
		return strings.Contains(m.Plain, "held calls waiting") && len(m.Keyboard) == 5
	})
	rowOf := map[string]int{} // request id -> row number
	for i, row := range d.Keyboard {
		_, id, _ := bot.ParseCallback(row[0].Data)
		rowOf[id] = i + 1
		want := []string{bot.CallbackData(bot.ActAllowOnce, id), bot.CallbackData(bot.ActDeny, id)}
		if id == reqs[4].ID {
			want[0] = bot.CallbackData(bot.ActOpen, id)
		}
		if got := []string{row[0].Data, row[1].Data}; got[0] != want[0] || got[1] != want[1] {
			t.Errorf("row %d: %q; want %q", i+1, got, want)
		}
	}
	if len(rowOf) != 5 {
		t.Fatalf("rows for %d requests; want 5", len(rowOf))
	}
	if n := len(h.tg.BotMessages(groupID)); n != 1 {
		t.Errorf("%d messages; want the one digest", n)
	}

	// A forged Allow on the row that does not show the call whole.
	q := h.tg.InjectCallback(asha, groupID, d.ID, bot.CallbackData(bot.ActAllowOnce, reqs[4].ID))
	if got, alert := h.answer(q); !strings.Contains(got, "Tap Open") || !alert {
		t.Errorf("forged Allow on a cut row answered %q (alert %v)", got, alert)
	}
	if r, _ := h.gate.Request(t.Context(), reqs[4].ID); r.State != deskbot.StateOpen || h.tool.Runs() != 0 {
		t.Fatalf("after a forged Allow: %s, %d runs; want open, none", r.State, h.tool.Runs())
	}

	// Deny on a row decides that row's request, and only it.
	if got, _ := h.answer(h.tap(asha, d, fmt.Sprintf("❌ Deny %d", rowOf[reqs[1].ID]))); got != "Denied; it will not run." {
		t.Errorf("Deny answered %q", got)
	}
	h.waitMessage(func(m telegramtest.Message) bool { return m.ID == d.ID && len(m.Keyboard) == 4 })
	for i, r := range reqs {
		got, _ := h.gate.Request(t.Context(), r.ID)
		if want := map[bool]deskbot.RequestState{true: deskbot.StateDenied, false: deskbot.StateOpen}[i == 1]; got.State != want {
			t.Errorf("request %d is %s; want %s", i+1, got.State, want)
		}
	}

	// Open sends the long call's own message; Allow there runs it.
	d, _ = h.tg.Message(groupID, d.ID)
	var open string
	for _, l := range d.Labels() {
		if strings.HasPrefix(l, "🔎 Open") {
			open = l
		}
	}
	h.answer(h.tap(asha, d, open))
	full := h.waitMessage(func(m telegramtest.Message) bool {
		return m.ID != d.ID && strings.Contains(m.Text, shortID(reqs[4].ID)) && strings.Contains(m.Plain, strings.Repeat("n", 400))
	})
	if got, _ := h.answer(h.tap(asha, full, "Allow once")); got != "Allowed; running…" {
		t.Errorf("Allow on the opened message answered %q", got)
	}
	h.waitMessage(func(m telegramtest.Message) bool {
		return m.ID == full.ID && len(m.Keyboard) == 0 && strings.Contains(m.Plain, "Ran")
	})
	h.waitMessage(func(m telegramtest.Message) bool { return m.ID == d.ID && len(m.Keyboard) == 3 })
	if h.tool.Runs() != 1 {
		t.Errorf("%d runs; want 1", h.tool.Runs())
	}
}

// A held call that joins a desk's digest reaches the bottom of the chat:
// once anything was posted below the digest, the digest is sent anew under
// it (Telegram notifies nobody of an edit) and its old page points there,
// with no buttons; while the digest is still the newest message, it is
// edited in place and nothing is sent.
func TestHeldCallJoiningADigestReachesTheBottom(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	h.shutdown()
	hold := func(i int) {
		t.Helper()
		args := fmt.Sprintf(`{"symbol":"S%d","side":"buy","quantity":%d}`, i, i+1)
		if _, _, err := h.gate.Hold(t.Context(), "alpha", fmt.Sprintf("trigger-%d", i), deskbot.ToolCall{ID: fmt.Sprintf("call_%d", i), Name: "place_order", Arguments: json.RawMessage(args)}); err != nil {
			t.Fatalf("hold: %v", err)
		}
	}
	for i := range 5 {
		hold(i)
	}
	h.start()
	digest := func(rows int) telegramtest.Message {
		t.Helper()
		return h.waitMessage(func(m telegramtest.Message) bool {
			return strings.Contains(m.Plain, fmt.Sprintf("%d held calls waiting", rows)) && len(m.Keyboard) == rows
		})
	}
	first := digest(5)

	if err := h.st.Publish(t.Context(), deskbot.Event{Kind: deskbot.EventDeskMessage, Desk: "beta", Time: h.clock.Now(), Text: "Bought 10 RELIANCE."}); err != nil {
		t.Fatal(err)
	}
	chatter := h.waitMessage(func(m telegramtest.Message) bool { return strings.Contains(m.Plain, "Bought 10 RELIANCE.") })

	hold(5)
	second := digest(6)
	if second.ID <= chatter.ID {
		t.Errorf("the digest with the new held call is message %d, above the chatter (%d); want it below", second.ID, chatter.ID)
	}
	h.waitMessage(func(m telegramtest.Message) bool {
		return m.ID == first.ID && strings.Contains(m.Plain, "moved to a newer message below") && len(m.Keyboard) == 0
	})

	sent := len(h.tg.BotMessages(groupID))
	hold(6)
	third := digest(7)
	if third.ID != second.ID {
		t.Errorf("a held call joining the newest digest was sent as message %d; want digest %d edited in place", third.ID, second.ID)
	}
	if got := len(h.tg.BotMessages(groupID)); got != sent {
		t.Errorf("%d messages after the call joined the newest digest, want %d (nothing sent)", got, sent)
	}
}

// A flatten in a digest offers Open, not Allow: what it would do is its
// plan, which only its own message shows; a forged Allow on its row is
// refused and runs nothing.
func TestDigestRowOfAFlattenOffersOpen(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	h.shutdown()
	var flat *deskbot.Request
	for i := range 4 {
		call := deskbot.ToolCall{ID: fmt.Sprintf("call_%d", i), Name: "place_order", Arguments: json.RawMessage(fmt.Sprintf(`{"symbol":"S%d","side":"buy","quantity":1}`, i))}
		if i == 3 {
			call = deskbot.ToolCall{ID: "call_f", Name: "flatten_desk", Arguments: json.RawMessage(`{}`)}
		}
		r, _, err := h.gate.Hold(t.Context(), "alpha", fmt.Sprintf("trigger-%d", i), call)
		if err != nil {
			t.Fatal(err)
		}
		if i == 3 {
			flat = r
		}
	}
	h.start()
	d := h.waitMessage(func(m telegramtest.Message) bool {
		return strings.Contains(m.Plain, "held calls waiting") && len(m.Keyboard) == 4
	})
	open := ""
	for _, row := range d.Keyboard {
		if _, id, _ := bot.ParseCallback(row[0].Data); id == flat.ID {
			if open = row[0].Text; row[0].Data != bot.CallbackData(bot.ActOpen, flat.ID) {
				t.Errorf("the flatten's row offers %q; want Open", row[0].Text)
			}
		}
	}
	// A tap may come between the page's send and its note: the page it
	// came from says it is a digest all the same. The note is written
	// after the send, so the test waits for it before taking it away.
	h.waitNote(bot.DigestKey("alpha"))
	note, err := h.st.Note(t.Context(), bot.DigestKey("alpha"))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.st.DeleteNote(t.Context(), bot.DigestKey("alpha")); err != nil {
		t.Fatal(err)
	}
	q := h.tg.InjectCallback(asha, groupID, d.ID, bot.CallbackData(bot.ActAllowOnce, flat.ID))
	if got, _ := h.answer(q); !strings.Contains(got, "Tap Open") {
		t.Errorf("forged Allow on the flatten's row answered %q", got)
	}
	if r, _ := h.gate.Request(t.Context(), flat.ID); r.State != deskbot.StateOpen {
		t.Errorf("the flatten after a forged Allow is %s; want open", r.State)
	}
	if err := h.st.PutNote(t.Context(), bot.DigestKey("alpha"), note, time.Hour); err != nil {
		t.Fatal(err)
	}
	// Open shows it with its plan.
	h.answer(h.tap(asha, d, open))
	h.waitMessage(func(m telegramtest.Message) bool {
		return m.ID > d.ID && strings.Contains(m.Plain, "Would close nothing") && len(m.Keyboard) > 0
	})
}
