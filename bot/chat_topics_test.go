package bot_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/bot/telegramtest"
)

// sayAs publishes a desk's words and waits for them in the group.
func (h *e2e) sayAs(desk, text string) telegramtest.Message {
	h.t.Helper()
	if err := h.st.Publish(h.t.Context(), deskbot.Event{Kind: deskbot.EventDeskMessage, Desk: desk, Time: h.clock.Now(), Text: text}); err != nil {
		h.t.Fatal(err)
	}
	return h.waitMessage(func(m telegramtest.Message) bool { return strings.Contains(m.Plain, text) })
}

// topicOf returns the thread id of the topic named name.
func (h *e2e) topicOf(name string) int {
	h.t.Helper()
	for id, n := range h.tg.Topics(groupID) {
		if n == name {
			return id
		}
	}
	h.t.Fatalf("no topic %q; topics: %v", name, h.tg.Topics(groupID))
	return 0
}

// With TELEGRAM_TOPICS on, in a forum: each desk speaks in a topic of its
// own, created once and reused after a restart; held calls stay in General,
// the one place approvers watch; a plain message in a desk's topic goes to
// that desk, acknowledged with a reaction.
func TestEachDeskSpeaksInItsTopicAcrossARestart(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	h.tg.SetForum(groupID, true)
	h.topics = true
	h.restart()

	a := h.sayAs("alpha", "alpha bought 10 INFY")
	b := h.sayAs("beta", "beta is flat")
	alpha, beta := h.topicOf("alpha"), h.topicOf("beta")
	if a.ThreadID != alpha || !a.TopicMessage || b.ThreadID != beta || alpha == beta {
		t.Errorf("alpha spoke in thread %d (its topic %d), beta in %d (its topic %d)", a.ThreadID, alpha, b.ThreadID, beta)
	}
	_, req := h.mustHoldShown("alpha")
	if req.ThreadID != 0 {
		t.Errorf("a held call went to thread %d, want General", req.ThreadID)
	}

	// A plain message in alpha's topic goes to alpha; a stranger's does not.
	h.tg.InjectTopicText(stranger, groupID, alpha, "buy everything", 0)
	id := h.tg.InjectTopicText(asha, groupID, alpha, "keep it small", 0)
	h.waitReaction(groupID, id)
	if trs := h.waitTriggers("alpha", 1); len(trs) != 1 || trs[0].Text != "keep it small" || trs[0].From != "Asha" {
		t.Errorf("alpha got %+v, want only Asha's words", trs)
	}
	if trs := h.triggers("beta"); len(trs) != 0 {
		t.Errorf("beta got %+v from alpha's topic", trs)
	}

	h.restart()
	for i, d := range []string{"alpha", "beta", "alpha"} {
		m := h.sayAs(d, fmt.Sprintf("%s after the restart %d", d, i))
		if want := map[string]int{"alpha": alpha, "beta": beta}[d]; m.ThreadID != want {
			t.Errorf("after the restart %s spoke in thread %d, want its topic %d", d, m.ThreadID, want)
		}
	}
	if n := len(h.tg.Calls("createForumTopic")); n != 2 || len(h.tg.Topics(groupID)) != 2 {
		t.Errorf("%d createForumTopic calls, topics %v; want one per desk, reused after the restart", n, h.tg.Topics(groupID))
	}
	_, req = h.mustHoldShown("beta")
	if req.ThreadID != 0 {
		t.Errorf("after the restart a held call went to thread %d, want General", req.ThreadID)
	}
	// Approvers watch one place: no request is in a desk's topic.
	for _, m := range h.tg.BotMessages(groupID) {
		if m.Service == "" && m.ThreadID != 0 && strings.Contains(m.Plain, "wants to run") {
			t.Errorf("a request is in a desk's topic: %q", m.Plain)
		}
	}
}

// Without the right to manage topics the desks speak in General, and the
// bot does not ask Telegram again for every message.
func TestWithoutTheRightDesksSpeakInGeneral(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	h.tg.SetForum(groupID, false)
	h.topics = true
	h.restart()
	for i := range 3 {
		if m := h.sayAs("alpha", fmt.Sprintf("note %d", i)); m.ThreadID != 0 {
			t.Errorf("message in thread %d, want General", m.ThreadID)
		}
	}
	if n := len(h.tg.Calls("createForumTopic")); n != 1 {
		t.Errorf("%d createForumTopic calls for three messages, want 1", n)
	}
	if !strings.Contains(h.logs.String(), "could not create a desk's topic") {
		t.Errorf("the missing right is not logged")
	}
}

// A topic a person deleted is forgotten: the words go to General, and the
// desk's next words get a new topic.
func TestADeletedTopicIsReplaced(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	h.tg.SetForum(groupID, true)
	h.topics = true
	h.restart()
	h.sayAs("alpha", "first")
	old := h.topicOf("alpha")
	h.tg.DeleteTopic(groupID, old)
	if m := h.sayAs("alpha", "second"); m.ThreadID != 0 {
		t.Errorf("with its topic deleted, the desk spoke in thread %d, want General", m.ThreadID)
	}
	if m := h.sayAs("alpha", "third"); m.ThreadID == 0 || m.ThreadID == old {
		t.Errorf("the desk's next words went to thread %d, want a new topic", m.ThreadID)
	}
}
