package bot_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/deskbottest"
)

// A person who types several /tell messages quickly expects the desk to
// read them in the order they were typed, even though taps on buttons are
// handled side by side.
func TestMessagesReachTheDeskInOrder(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	const n = 30
	for i := range n {
		h.say(asha, fmt.Sprintf("/tell alpha step %02d", i), 0)
	}
	trs := h.waitTriggers("alpha", n)
	for i, tr := range trs {
		if want := fmt.Sprintf("step %02d", i); tr.Text != want {
			t.Fatalf("trigger %d = %q, want %q (order: %v)", i, tr.Text, want, texts(trs))
		}
	}
}

func texts(trs []deskbot.Trigger) []string {
	var out []string
	for _, tr := range trs {
		out = append(out, tr.Text)
	}
	return out
}

// While Telegram refuses the bot's acknowledgements, the commands typed
// after one still reach the desks, in order: an acknowledgement is retried
// on its own queue.
func TestRefusedRepliesDoNotHoldUpCommands(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	h.tg.Fail(telegramtest.Failure{Method: "setMessageReaction", Code: 502})
	for i := range 3 {
		h.say(asha, fmt.Sprintf("/tell alpha job %d", i), 0)
	}
	trs := h.waitTriggers("alpha", 3)
	for i, tr := range trs {
		if want := fmt.Sprintf("job %d", i); tr.Text != want {
			t.Fatalf("trigger %d = %q, want %q (order: %v)", i, tr.Text, want, texts(trs))
		}
	}
	h.tg.ClearFailures()
	deskbottest.Eventually(t, "three reactions once Telegram recovered", func() bool { return len(h.tg.Sent("setMessageReaction")) >= 3 })
	if n := len(h.tg.Sent("setMessageReaction")); n != 3 {
		t.Errorf("reactions once Telegram recovered = %d, want 3", n)
	}
}

// waitReaction waits for the bot's acknowledging reaction on message id.
func (h *e2e) waitReaction(chat int64, id int) {
	h.t.Helper()
	deskbottest.Eventually(h.t, fmt.Sprintf("a reaction on message %d", id), func() bool {
		m, ok := h.tg.Message(chat, id)
		return ok && slices.Equal(m.Reactions, []string{"👍"})
	})
}
