package bot_test

import (
	"fmt"
	"testing"

	"github.com/deskbot/deskbot"
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
