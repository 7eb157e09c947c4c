package bot_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/deskbottest"
)

// A person who types several /tell messages quickly expects the desk to
// read them in the order they were typed, even though taps on buttons are
// handled side by side.
func TestMessagesReachTheDeskInOrder(t *testing.T) {
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

// While Telegram refuses the bot's replies, the commands typed after one
// still reach the desks, in order: a reply is retried on its own queue.
func TestRefusedRepliesDoNotHoldUpCommands(t *testing.T) {
	h := mustE2E(t)
	h.tg.Fail(telegramtest.Failure{Method: "sendMessage", Code: 502})
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
	deskbottest.Eventually(t, "three replies once Telegram recovered", func() bool { return h.countReplies("Sent to alpha.") >= 3 })
	if n := h.countReplies("Sent to alpha."); n != 3 {
		t.Errorf("replies once Telegram recovered = %d, want 3", n)
	}
}

func (h *e2e) countReplies(text string) int {
	n := 0
	for _, m := range h.tg.BotMessages(groupID) {
		if strings.Contains(m.Plain, text) {
			n++
		}
	}
	return n
}
