package telegramtest

import (
	"net/http"
	"strconv"
	"time"
)

// getUpdates answers a long poll: confirms updates below offset, returns the
// rest at once, or holds the request up to timeout seconds for new ones. A
// second poll ends the first with 409, like Telegram.
func (s *Server) getUpdates(r *http.Request, p map[string]string) (any, *apiError) {
	offset, _ := strconv.Atoi(p["offset"])
	limit, _ := strconv.Atoi(p["limit"])
	if limit <= 0 || limit > 100 {
		limit = 100
	}
	timeout, _ := strconv.Atoi(p["timeout"])

	s.mu.Lock()
	if s.poller != nil {
		close(s.poller)
	}
	mine := make(chan struct{})
	s.poller = mine
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.poller == mine {
			s.poller = nil
		}
		s.mu.Unlock()
	}()

	deadline := time.NewTimer(time.Duration(timeout) * time.Second)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		if offset > 0 {
			i := 0
			for i < len(s.updates) && s.updates[i].ID < offset {
				i++
			}
			s.updates = s.updates[i:]
		}
		batch := s.updates[:min(limit, len(s.updates))]
		wake := s.wake
		s.mu.Unlock()
		if len(batch) > 0 || timeout == 0 {
			return append([]update{}, batch...), nil
		}
		select {
		case <-wake:
		case <-deadline.C:
			return []update{}, nil
		case <-mine:
			return nil, &apiError{code: 409, desc: describe(409, 0)}
		case <-r.Context().Done():
			return []update{}, nil
		case <-s.done:
			return []update{}, nil
		}
	}
}

// enqueue queues an update and wakes the poll. Caller holds mu.
func (s *Server) enqueue(u update) int {
	u.ID = s.nextUpd
	s.nextUpd++
	s.updates = append(s.updates, u)
	close(s.wake)
	s.wake = make(chan struct{})
	return u.ID
}

// InjectText queues a text message from a person in chatID, as a reply to
// replyTo when it is not 0, and returns the message's id. A text starting
// with "/" carries a bot_command entity, like Telegram's.
func (s *Server) InjectText(from User, chatID int64, text string, replyTo int) (messageID int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.chat(chatID)
	c.nextID++
	m := &Message{ID: c.nextID, ChatID: chatID, From: from, Date: s.now(), Text: text, Plain: text, ReplyTo: replyTo}
	c.messages = append(c.messages, m)
	s.enqueue(update{Message: s.wire(m, true)})
	return m.ID
}

// InjectCallback queues a tap on an inline button: from tapped a button with
// raw callback data on message messageID of chatID. The message need not
// exist (a forged query); when it does, the query carries it as it stands.
// It returns the query id, for CallbackAnswer.
func (s *Server) InjectCallback(from User, chatID int64, messageID int, data string) (queryID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextCbID++
	queryID = "cbq-" + strconv.Itoa(s.nextCbID)
	var msg *wireMessage
	if m := s.chat(chatID).find(messageID); m != nil {
		msg = s.wire(m, false)
	} else {
		msg = &wireMessage{MessageID: messageID, Chat: wireChatOf(chatID), Date: s.now().Unix()}
	}
	s.answers[queryID] = &answer{}
	s.enqueue(update{Callback: &wireCallback{
		ID: queryID, From: *toWireUser(from, false), Message: msg,
		ChatInstance: "ci" + strconv.FormatInt(chatID, 10), Data: data,
	}})
	return queryID
}

// PendingUpdates counts updates not yet confirmed by the client.
func (s *Server) PendingUpdates() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.updates)
}

// CallbackAnswer returns the answer given to a callback query; ok is false
// until it is answered.
func (s *Server) CallbackAnswer(queryID string) (text string, alert bool, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.answers[queryID]
	if a == nil || !a.answered {
		return "", false, false
	}
	return a.text, a.alert, true
}

// ChatMessages returns what chatID shows now, oldest first: people's
// messages and the bot's, deleted ones left out.
func (s *Server) ChatMessages(chatID int64) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, m := range s.chats[chatID].list() {
		if !m.Deleted {
			out = append(out, copyMessage(m))
		}
	}
	return out
}

// BotMessages returns the bot's messages in chatID, oldest first.
func (s *Server) BotMessages(chatID int64) []Message {
	var out []Message
	for _, m := range s.ChatMessages(chatID) {
		if m.FromBot {
			out = append(out, m)
		}
	}
	return out
}

// Message returns one message of chatID as it stands.
func (s *Server) Message(chatID int64, id int) (Message, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.chats[chatID]
	if c == nil {
		return Message{}, false
	}
	m := c.find(id)
	if m == nil {
		return Message{}, false
	}
	return copyMessage(m), true
}

// Commands returns the commands last registered with setMyCommands.
func (s *Server) Commands() []Command {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Command(nil), s.commands...)
}

func (c *chat) list() []*Message {
	if c == nil {
		return nil
	}
	return c.messages
}

func copyMessage(m *Message) Message {
	out := *m
	out.PhotoData = append([]byte(nil), m.PhotoData...)
	out.Reactions = append([]string(nil), m.Reactions...)
	out.Keyboard = nil
	for _, row := range m.Keyboard {
		out.Keyboard = append(out.Keyboard, append([]Button(nil), row...))
	}
	return out
}

// CallbackData is a button's data as Telegram sends it back,
// "\f<action>|<arg>": what a tap injected with InjectCallback carries.
func CallbackData(action, arg string) string { return "\f" + action + "|" + arg }
