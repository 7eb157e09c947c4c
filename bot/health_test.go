package bot_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/deskbottest"
)

// /healthz reads PollingAlive: healthy while Telegram answers the long
// poll, unhealthy when answers stop coming and once the bot stopped.
func TestPollingAlive(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	deskbottest.Eventually(t, "the bot to poll", func() bool { return !h.bot.LastPoll().IsZero() })
	if err := h.bot.PollingAlive(time.Now()); err != nil {
		t.Fatalf("polling a live fake: %v", err)
	}
	if err := h.bot.PollingAlive(time.Now().Add(5 * time.Minute)); err == nil {
		t.Error("no answer from Telegram for 5 minutes still counts as alive")
	}
	h.shutdown()
	if err := h.bot.PollingAlive(time.Now()); err == nil {
		t.Error("a stopped bot counts as polling")
	}
}

// On a graceful stop, events published after the bot stopped polling still
// reach the chat through RunOutbox.
func TestRunOutboxFlushesAfterStop(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	h.shutdown()
	if err := h.st.Publish(t.Context(), deskbot.Event{Kind: deskbot.EventDeskMessage, Desk: "alpha", Time: time.Now(), Text: "last words before the stop"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- h.bot.RunOutbox(ctx) }()
	deskbottest.Eventually(t, "the last words in the chat", func() bool {
		for _, m := range h.tg.BotMessages(groupID) {
			if strings.Contains(m.Plain, "last words before the stop") {
				return true
			}
		}
		return false
	})
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("RunOutbox did not return after its context ended")
	}
}
