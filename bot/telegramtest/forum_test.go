package telegramtest_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/deskbot/deskbot/bot/telegramtest"
	"gopkg.in/telebot.v3"
)

func TestForumTopics(t *testing.T) {
	srv := telegramtest.New(t, token)
	b := mustBot(t, srv)
	chat := &telebot.Chat{ID: group}

	if _, err := b.CreateTopic(chat, &telebot.Topic{Name: "alpha"}); err == nil || !strings.Contains(err.Error(), "not a forum") {
		t.Errorf("topic in an ordinary group: err = %v, want not a forum", err)
	}
	srv.SetForum(group, false)
	if _, err := b.CreateTopic(chat, &telebot.Topic{Name: "alpha"}); err == nil || !strings.Contains(err.Error(), "not enough rights") {
		t.Errorf("topic without the right: err = %v, want not enough rights", err)
	}
	m, err := b.ChatMemberOf(chat, &telebot.User{ID: telegramtest.BotUser.ID})
	if err != nil || m.Role != telebot.Administrator || m.CanManageTopics {
		t.Errorf("bot's membership = %+v, %v; want an administrator without can_manage_topics", m, err)
	}
	srv.SetForum(group, true)
	if m, err := b.ChatMemberOf(chat, &telebot.User{ID: telegramtest.BotUser.ID}); err != nil || !m.CanManageTopics {
		t.Errorf("bot's membership = %+v, %v; want can_manage_topics", m, err)
	}
	topic, err := b.CreateTopic(chat, &telebot.Topic{Name: "alpha"})
	if err != nil || topic.ThreadID == 0 || topic.Name != "alpha" {
		t.Fatalf("CreateTopic = %+v, %v", topic, err)
	}
	if got := srv.Topics(group); got[topic.ThreadID] != "alpha" || len(got) != 1 {
		t.Errorf("topics = %v", got)
	}

	sent, err := b.Send(chat, "in alpha", &telebot.SendOptions{ThreadID: topic.ThreadID})
	if err != nil || sent.ThreadID != topic.ThreadID || !sent.TopicMessage {
		t.Fatalf("send in a topic = %+v, %v", sent, err)
	}
	if _, err := b.Send(chat, "nowhere", &telebot.SendOptions{ThreadID: 999}); err == nil || !strings.Contains(err.Error(), "thread not found") {
		t.Errorf("send to a missing topic: err = %v", err)
	}
	general, err := b.Send(chat, "in general")
	if err != nil || general.ThreadID != 0 || general.TopicMessage {
		t.Errorf("send without a thread = %+v, %v; want General", general, err)
	}
	reply, err := b.Send(chat, "a reply", &telebot.SendOptions{ReplyTo: sent})
	if err != nil || reply.ThreadID != topic.ThreadID {
		t.Errorf("a reply to a topic message = %+v, %v; want it in the topic", reply, err)
	}

	got := make(chan *telebot.Message, 1)
	b.Handle(telebot.OnText, func(c telebot.Context) error { got <- c.Message(); return nil })
	start(t, b)
	srv.InjectTopicText(asha, group, topic.ThreadID, "hello alpha", 0)
	in := <-got
	if !in.TopicMessage || in.ThreadID != topic.ThreadID || in.ReplyTo == nil || in.ReplyTo.ID != topic.ThreadID || in.ReplyTo.TopicCreated == nil {
		t.Errorf("a person's topic message reads %+v", in)
	}
}

func TestReactions(t *testing.T) {
	srv := telegramtest.New(t, token)
	b := mustBot(t, srv)
	id := srv.InjectText(asha, group, "/tell alpha hi", 0)
	msg := telebot.StoredMessage{MessageID: strconv.Itoa(id), ChatID: group}
	like := telebot.ReactionOptions{Reactions: []telebot.Reaction{{Type: "emoji", Emoji: "👍"}}}
	if err := b.React(telebot.ChatID(group), msg, like); err != nil {
		t.Fatalf("React: %v", err)
	}
	if m, _ := srv.Message(group, id); !slices.Equal(m.Reactions, []string{"👍"}) {
		t.Errorf("reactions = %q", m.Reactions)
	}
	bad := telebot.ReactionOptions{Reactions: []telebot.Reaction{{Type: "emoji", Emoji: "X"}}}
	if err := b.React(telebot.ChatID(group), msg, bad); err == nil || !strings.Contains(err.Error(), "REACTION_INVALID") {
		t.Errorf("a reaction bots may not use: err = %v", err)
	}
	if err := b.React(telebot.ChatID(group), telebot.StoredMessage{MessageID: "999", ChatID: group}, like); err == nil {
		t.Errorf("a reaction on a missing message was accepted")
	}
	if calls := srv.Sent("setMessageReaction"); len(calls) != 1 || calls[0].MessageID != id {
		t.Errorf("accepted reactions = %+v", calls)
	}
}
