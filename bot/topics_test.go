package bot

import (
	"testing"
	"time"

	tele "gopkg.in/telebot.v3"

	"github.com/deskbot/deskbot/store/storetest"
)

// A message goes to a desk by its topic only when Telegram says it is a
// topic message: in a group without topics a reply carries a thread id
// too, and must not reach a desk whose topic has that number.
func TestTopicDeskNeedsATopicMessage(t *testing.T) {
	t.Parallel()
	st := storetest.MustOpen(t)
	const chat = int64(-1001234567890)
	if err := st.PutNote(t.Context(), topicDeskKey(chat, 5), "alpha", 0); err != nil {
		t.Fatal(err)
	}
	b := &Bot{cfg: Config{ChatID: chat}, topics: newTopics(chat, st, nil, time.Now, quietLog())}
	tests := []struct {
		name string
		m    *tele.Message
		want string
	}{
		{"in alpha's topic", &tele.Message{ThreadID: 5, TopicMessage: true, Chat: &tele.Chat{ID: chat}}, "alpha"},
		{"a reply with a thread id, not a topic message", &tele.Message{ThreadID: 5, Chat: &tele.Chat{ID: chat}}, ""},
		{"another topic", &tele.Message{ThreadID: 6, TopicMessage: true, Chat: &tele.Chat{ID: chat}}, ""},
		{"another chat", &tele.Message{ThreadID: 5, TopicMessage: true, Chat: &tele.Chat{ID: -100999}}, ""},
	}
	for _, tt := range tests {
		got, err := b.topicDesk(t.Context(), tt.m)
		if err != nil || got != tt.want {
			t.Errorf("%s: desk %q (%v), want %q", tt.name, got, err, tt.want)
		}
	}
	b.topics = nil
	if got, _ := b.topicDesk(t.Context(), tests[0].m); got != "" {
		t.Errorf("with topics off a topic message went to %q", got)
	}
}
