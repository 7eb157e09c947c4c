package bot_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/deskbottest"
)

// Stopping the bot stops polling, not sending: a reply Telegram is still
// answering when the service stops arrives once. (telebot's Stop cancels
// every request of the client it stops; a send cancelled that way is either
// lost or, if Telegram had already taken it, sent again by the retry.)
func TestStopDoesNotCutOffASendInFlight(t *testing.T) {
	h := mustE2E(t)
	h.tg.Hang("sendMessage", 400*time.Millisecond)
	h.say(asha, "/tell alpha hold the hedge", 0)
	deskbottest.Eventually(t, "the reply to reach Telegram", func() bool { return h.tg.Count("sendMessage") > 0 })
	h.shutdown() // while the reply is held by "Telegram"
	var replies []string
	for _, m := range h.tg.BotMessages(groupID) {
		if strings.Contains(m.Plain, "Sent to alpha.") {
			replies = append(replies, m.Plain)
		}
	}
	if len(replies) != 1 {
		var calls []int
		for _, c := range h.tg.Calls("sendMessage") {
			calls = append(calls, c.Status)
		}
		t.Fatalf("replies after a stop mid-send = %d, want 1 (sendMessage statuses %v)", len(replies), calls)
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
	if got := h.replyTo(groupID, h.say(asha, "/tell alpha still here?", 0)).Plain; got != "Sent to alpha." {
		t.Errorf("after a refused second Run, /tell answered %q", got)
	}
}
