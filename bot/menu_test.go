package bot_test

import (
	"testing"
	"time"

	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/deskbottest"
)

// The command menu is registered at start, tried three times 0.5s and 1s
// apart; when Telegram keeps refusing it the bot runs without it.
func TestCommandMenuRetried(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		failures  int
		wantCalls int
		wantSet   bool
	}{
		{"set on the third try", 2, 3, true},
		{"given up after three", 5, 3, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := mustE2E(t)
			deskbottest.Eventually(t, "the first bot's menu", func() bool { return len(h.tg.Sent("setMyCommands")) == 1 })
			h.tg.Fail(telegramtest.Failure{Method: "setMyCommands", Code: 502, Times: tt.failures})
			h.restart()
			// The bot polls only once the menu is settled: an answer to a
			// command shows the tries are over.
			h.waitReaction(groupID, h.say(asha, "/tell alpha menu?", 0))
			calls := h.tg.Calls("setMyCommands")[1:]
			if len(calls) != tt.wantCalls {
				t.Fatalf("%d setMyCommands calls after the restart, want %d", len(calls), tt.wantCalls)
			}
			if set := calls[len(calls)-1].OK(); set != tt.wantSet {
				t.Errorf("menu set = %v, want %v", set, tt.wantSet)
			}
			for i, least := range []time.Duration{500 * time.Millisecond, time.Second} {
				if gap := calls[i+1].At.Sub(calls[i].At); gap < least {
					t.Errorf("try %d came %v after try %d, want at least %v", i+2, gap, i+1, least)
				}
			}
		})
	}
}
