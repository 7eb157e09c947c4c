package telegramtest

// Pinned messages, rights and notifications, as the Bot API serves them:
//   - pinChatMessage and unpinChatMessage work in a group only for a bot
//     that is an administrator with can_pin_messages (SetBotRights; a forum
//     made with SetForum has the bot an administrator with it); anyone else
//     is refused "not enough rights to manage pinned messages in the chat".
//   - A pin posts a service message ("pinned_message") in the chat, like
//     Telegram's; disable_notification only keeps it from sounding.
//   - unpinChatMessage without message_id unpins the most recent pin.
//   - Every send records disable_notification (Call.Silent, Message.Silent).

// rights is what the bot may do in a chat as an administrator.
type rights struct {
	canPin bool
}

// SetBotRights makes the bot an administrator of chatID, with or without
// the right to pin messages (a forum keeps its topic right as SetForum set
// it). It may be called again to change the right.
func (s *Server) SetBotRights(chatID int64, canPin bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.admins == nil {
		s.admins = map[int64]*rights{}
	}
	s.admins[chatID] = &rights{canPin: canPin}
}

// AddUser makes a person known, so getChatMember answers with their name
// as Telegram does.
func (s *Server) AddUser(u User) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.people == nil {
		s.people = map[int64]User{}
	}
	s.people[u.ID] = u
}

// botAdmin reports whether the bot is an administrator of chatID and may
// pin there. Caller holds mu.
func (s *Server) botAdmin(chatID int64) (admin, canPin bool) {
	if r := s.admins[chatID]; r != nil {
		return true, r.canPin
	}
	if s.forums[chatID] != nil {
		return true, true
	}
	return false, false
}

// Pinned returns the ids of chatID's pinned messages, oldest pin first.
func (s *Server) Pinned(chatID int64) []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.chat(chatID).pins...)
}

// pin serves pinChatMessage.
func (s *Server) pin(p map[string]string) (int, *apiError) {
	chatID, _ := parseInt64(p["chat_id"])
	id, _ := parseInt64(p["message_id"])
	s.mu.Lock()
	defer s.mu.Unlock()
	if aerr := s.mayPin(chatID); aerr != nil {
		return 0, aerr
	}
	c := s.chat(chatID)
	m := c.find(int(id))
	if m == nil || m.Service != "" {
		return 0, badRequest("message to pin not found")
	}
	for i, x := range c.pins {
		if x == m.ID {
			c.pins = append(c.pins[:i], c.pins[i+1:]...)
			break
		}
	}
	c.pins = append(c.pins, m.ID)
	c.nextID++
	c.messages = append(c.messages, &Message{ID: c.nextID, ChatID: chatID, From: s.bot, FromBot: true, Date: s.now(),
		Service: "pinned_message", ReplyTo: m.ID, ThreadID: m.ThreadID, TopicMessage: m.TopicMessage, Silent: p["disable_notification"] == "true"})
	return m.ID, nil
}

// unpin serves unpinChatMessage.
func (s *Server) unpin(p map[string]string) (int, *apiError) {
	chatID, _ := parseInt64(p["chat_id"])
	s.mu.Lock()
	defer s.mu.Unlock()
	if aerr := s.mayPin(chatID); aerr != nil {
		return 0, aerr
	}
	c := s.chat(chatID)
	if p["message_id"] == "" {
		if n := len(c.pins); n > 0 {
			id := c.pins[n-1]
			c.pins = c.pins[:n-1]
			return id, nil
		}
		return 0, nil
	}
	id, _ := parseInt64(p["message_id"])
	if c.find(int(id)) == nil {
		return 0, badRequest("message to unpin not found")
	}
	for i, x := range c.pins {
		if x == int(id) {
			c.pins = append(c.pins[:i], c.pins[i+1:]...)
			break
		}
	}
	return int(id), nil
}

// mayPin refuses a bot that may not pin in chatID. Private chats need no
// right. Caller holds mu.
func (s *Server) mayPin(chatID int64) *apiError {
	if chatID > 0 {
		return nil
	}
	if _, can := s.botAdmin(chatID); !can {
		return badRequest("not enough rights to manage pinned messages in the chat")
	}
	return nil
}
