package bot_test

import (
	"context"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/deskbottest"
)

// Stopping the bot stops polling, not sending: an acknowledgement Telegram
// is still answering when the service stops arrives once. (telebot's Stop cancels
// every request of the client it stops; a send cancelled that way is either
// lost or, if Telegram had already taken it, sent again by the retry.)
func TestStopDoesNotCutOffASendInFlight(t *testing.T) {
	h := mustE2E(t)
	h.tg.Hang("setMessageReaction", 400*time.Millisecond)
	h.say(asha, "/tell alpha hold the hedge", 0)
	deskbottest.Eventually(t, "the reaction to reach Telegram", func() bool { return h.tg.Count("setMessageReaction") > 0 })
	h.shutdown() // while the reaction is held by "Telegram"
	if calls := h.tg.Calls("setMessageReaction"); len(calls) != 1 || !calls[0].OK() {
		var statuses []int
		for _, c := range calls {
			statuses = append(statuses, c.Status)
		}
		t.Fatalf("reactions after a stop mid-send: statuses %v, want one accepted", statuses)
	}
	if trs := h.triggers("alpha"); len(trs) != 1 {
		t.Errorf("desk got %d triggers, want 1", len(trs))
	}
}

// A bot runs once: a second Run, while the first runs, is refused and
// leaves the first alone.
func TestSecondRunRefused(t *testing.T) {
	h := mustE2E(t)
	deskbottest.Eventually(t, "the bot to poll", func() bool { return !h.bot.LastPoll().IsZero() })
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second) // were it to run after all
	defer cancel()
	if err := h.bot.Run(ctx); deskbot.ErrorCode(err) != deskbot.ECONFLICT {
		t.Fatalf("second Run = %v, want %s", err, deskbot.ECONFLICT)
	}
	h.waitReaction(groupID, h.say(asha, "/tell alpha still here?", 0))
}
