package telegramtest

import (
	"encoding/json"
	"slices"
)

// Forum topics and reactions, as Bot API 7 serves them:
//   - A chat made a forum with SetForum takes createForumTopic (when the bot
//     has can_manage_topics), which posts the topic's service message; the
//     topic's message_thread_id is that message's id.
//   - A send naming message_thread_id lands in that topic and is a topic
//     message (is_topic_message); a send without one lands in General,
//     unless it replies to a message in a topic, where it follows it.
//   - A person's message in a topic (InjectTopicText) carries the thread id,
//     is_topic_message, and, like Telegram's, a reply_to_message pointing at
//     the topic's service message when it replies to nothing else.
//   - getChatMember of the bot reports its rights in the chat.
//   - setMessageReaction sets the bot's reaction on a message.

// forum is a forum supergroup's state.
type forum struct {
	canManageTopics bool
	topics          map[int]string // thread id → name
}

// standardReactions are emoji bots may react with (a subset of Telegram's list).
var standardReactions = []string{"👍", "👎", "❤", "🔥", "👌", "🫡", "✍", "👀", "🤝", "🙏"}

// SetForum makes chatID a forum supergroup in which the bot is an
// administrator, with or without the right to manage topics. It may be
// called again to change the right.
func (s *Server) SetForum(chatID int64, canManageTopics bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.forums == nil {
		s.forums = map[int64]*forum{}
	}
	f := s.forums[chatID]
	if f == nil {
		f = &forum{topics: map[int]string{}}
		s.forums[chatID] = f
	}
	f.canManageTopics = canManageTopics
}

// Topics returns the forum's topics: thread id → name.
func (s *Server) Topics(chatID int64) map[int]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[int]string{}
	if f := s.forums[chatID]; f != nil {
		for id, name := range f.topics {
			out[id] = name
		}
	}
	return out
}

// InjectTopicText queues a person's text message in a forum topic (thread
// 0 is General, which carries no thread id), as a reply to replyTo when it
// is not 0, and returns the message's id.
func (s *Server) InjectTopicText(from User, chatID int64, thread int, text string, replyTo int) (messageID int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.chat(chatID)
	c.nextID++
	m := &Message{ID: c.nextID, ChatID: chatID, From: from, Date: s.now(), Text: text, Plain: text, ReplyTo: replyTo, ThreadID: thread}
	if thread != 0 {
		m.TopicMessage = true
		if replyTo == 0 {
			m.ReplyTo = thread // the topic's service message, as Telegram does
		}
	}
	c.messages = append(c.messages, m)
	s.enqueue(update{Message: s.wire(m, true)})
	return m.ID
}

// createTopic serves createForumTopic.
func (s *Server) createTopic(p map[string]string) (any, int, *apiError) {
	chatID, _ := parseInt64(p["chat_id"])
	name := p["name"]
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.forums[chatID]
	switch {
	case f == nil:
		return nil, 0, badRequest("the chat is not a forum")
	case !f.canManageTopics:
		return nil, 0, badRequest("not enough rights to create a topic")
	case name == "" || utf16Len(name) > 128:
		return nil, 0, badRequest("TOPIC_NAME_INVALID")
	}
	color := 7322096
	if p["icon_color"] != "" {
		n, ok := parseInt64(p["icon_color"])
		if !ok || !slices.Contains([]int64{7322096, 16766590, 13338331, 9367192, 16749490, 16478047}, n) {
			return nil, 0, badRequest("TOPIC_ICON_COLOR_INVALID")
		}
		color = int(n)
	}
	c := s.chat(chatID)
	c.nextID++
	m := &Message{ID: c.nextID, ChatID: chatID, From: s.bot, FromBot: true, Date: s.now(), Service: "forum_topic_created", ThreadID: c.nextID, TopicMessage: true}
	c.messages = append(c.messages, m)
	f.topics[m.ID] = name
	return map[string]any{"message_thread_id": m.ID, "name": name, "icon_color": color}, m.ID, nil
}

// thread checks a send's message_thread_id. Caller holds mu.
func (s *Server) thread(chatID int64, p map[string]string) (int, *apiError) {
	if p["message_thread_id"] == "" {
		return 0, nil
	}
	id, ok := parseInt64(p["message_thread_id"])
	if f := s.forums[chatID]; !ok || f == nil || f.topics[int(id)] == "" {
		return 0, badRequest("message thread not found")
	}
	return int(id), nil
}

// chatMember serves getChatMember: the bot is an administrator of a forum
// with its topic right as set, or of a chat SetBotRights named with its pin
// right as set, a member elsewhere, unless SetMemberStatus set its status;
// people are members unless SetMemberStatus said otherwise, named as
// AddUser made them known.
func (s *Server) chatMember(p map[string]string) (any, *apiError) {
	chatID, ok := parseInt64(p["chat_id"])
	user, ok2 := parseInt64(p["user_id"])
	if !ok || !ok2 {
		return nil, badRequest("invalid user_id specified")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if user != s.bot.ID {
		status := s.members[user]
		if status == "" {
			status = "member"
		}
		u, ok := s.people[user]
		if !ok {
			u = User{ID: user}
		}
		return map[string]any{"status": status, "user": toWireUser(u, false)}, nil
	}
	if status := s.members[user]; status != "" { // SetMemberStatus of BotUser: a bot that left, or was never added
		return map[string]any{"status": status, "user": toWireUser(s.bot, true)}, nil
	}
	admin, canPin := s.botAdmin(chatID)
	if !admin {
		return map[string]any{"status": "member", "user": toWireUser(s.bot, true)}, nil
	}
	f := s.forums[chatID]
	return map[string]any{"status": "administrator", "user": toWireUser(s.bot, true),
		"can_manage_topics": f != nil && f.canManageTopics, "can_delete_messages": true, "can_pin_messages": canPin}, nil
}

// react serves setMessageReaction: the bot's reactions on the message are
// replaced by those given (none clears them).
func (s *Server) react(p map[string]string) (int, *apiError) {
	chatID, _ := parseInt64(p["chat_id"])
	id, _ := parseInt64(p["message_id"])
	var rs []struct {
		Type  string `json:"type"`
		Emoji string `json:"emoji"`
	}
	if p["reaction"] != "" {
		if err := json.Unmarshal([]byte(p["reaction"]), &rs); err != nil {
			return 0, badRequest("can't parse reaction types JSON object")
		}
	}
	var emoji []string
	for _, r := range rs {
		if r.Type != "emoji" || !slices.Contains(standardReactions, r.Emoji) {
			return 0, badRequest("REACTION_INVALID")
		}
		emoji = append(emoji, r.Emoji)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.chat(chatID).find(int(id))
	if m == nil || m.Service != "" {
		return 0, badRequest("message to react not found")
	}
	m.Reactions = emoji
	return m.ID, nil
}

// DeleteTopic deletes a forum topic, as a person may: sends naming it are
// refused with "message thread not found".
func (s *Server) DeleteTopic(chatID int64, thread int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.forums[chatID]; f != nil {
		delete(f.topics, thread)
	}
}
