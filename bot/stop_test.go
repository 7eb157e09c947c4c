package bot_test

import (
	"context"
	"slices"
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
	t.Parallel()
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
	t.Parallel()
	h := mustE2E(t)
	deskbottest.Eventually(t, "the bot to poll", func() bool { return !h.bot.LastPoll().IsZero() })
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second) // were it to run after all
	defer cancel()
	if err := h.bot.Run(ctx); deskbot.ErrorCode(err) != deskbot.ECONFLICT {
		t.Fatalf("second Run = %v, want %s", err, deskbot.ECONFLICT)
	}
	h.waitReaction(groupID, h.say(asha, "/tell alpha still here?", 0))
}

// blockingInbox holds every Enqueue until release is closed, then queues
// the trigger with the context the bot gave it.
type blockingInbox struct {
	deskbot.Inbox
	entered chan struct{}
	release chan struct{}
}

func (in *blockingInbox) Enqueue(ctx context.Context, t deskbot.Trigger) error {
	in.entered <- struct{}{}
	<-in.release
	return in.Inbox.Enqueue(ctx, t)
}

// An update taken before the stop is finished after it: the poller counted
// it as handed over, so neither Telegram nor the next leader gives it again,
// and a /tell cut off by the stop would be lost. The stop waits for it.
func TestStopFinishesATellUnderWay(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	in := &blockingInbox{entered: make(chan struct{}, 1), release: make(chan struct{})}
	h.inboxFor = func(inner deskbot.Inbox) deskbot.Inbox { in.Inbox = inner; return in }
	h.restart()
	id := h.say(asha, "/tell alpha cut the hedge by half", 0)
	select {
	case <-in.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the /tell never reached the desks' inbox")
	}
	h.stop() // the service stops while the message is being queued
	close(in.release)
	h.shutdown()
	trs := h.triggers("alpha")
	if got, want := len(trs), 1; got != want {
		t.Fatalf("desk got %d triggers after a stop mid-/tell, want %d; log:\n%s", got, want, h.logs.String())
	}
	if got, want := trs[0].Text, "cut the hedge by half"; got != want {
		t.Errorf("desk got %q, want %q", got, want)
	}
	if m, ok := h.tg.Message(groupID, id); !ok || !slices.Equal(m.Reactions, []string{"👍"}) {
		t.Errorf("Asha's /tell was not acknowledged before the stop ended (reactions %v)", m.Reactions)
	}
}
