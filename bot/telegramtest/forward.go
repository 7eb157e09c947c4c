package telegramtest

import "time"

// Forward describes a message that carries someone else's words: a forward,
// or a message sent via an inline bot. Set one or more fields.
type Forward struct {
	// From is the original sender (origin "user").
	From *User
	// HiddenName is a sender who hides their account (origin "hidden_user").
	HiddenName string
	// ChatID is the original chat (origin "chat", or "channel" when below
	// -1000000000000).
	ChatID int64
	// Automatic marks a channel post forwarded into its discussion group.
	Automatic bool
	// ViaBot is the inline bot the message was sent through (via_bot).
	ViaBot *User
	// Legacy sends the fields of Bot API before 7.0 (forward_from,
	// forward_from_chat, forward_sender_name, forward_date) instead of
	// forward_origin, as older servers and some proxies still do.
	Legacy bool
}

// wire sets the forward's fields on w.
func (f *Forward) wire(w *wireMessage, at time.Time) {
	if f.ViaBot != nil {
		w.ViaBot = toWireUser(*f.ViaBot, true)
	}
	w.AutomaticForward = f.Automatic
	if f.From == nil && f.HiddenName == "" && f.ChatID == 0 {
		return
	}
	date := at.Add(-time.Hour).Unix()
	if f.Legacy {
		w.ForwardDate = date
		if f.From != nil {
			w.ForwardFrom = toWireUser(*f.From, false)
		}
		if f.ChatID != 0 {
			c := wireChatOf(f.ChatID)
			w.ForwardFromChat = &c
		}
		w.ForwardSenderName = f.HiddenName
		return
	}
	o := &wireOrigin{Date: date}
	switch {
	case f.From != nil:
		o.Type, o.SenderUser = "user", toWireUser(*f.From, false)
	case f.HiddenName != "":
		o.Type, o.SenderUserName = "hidden_user", f.HiddenName
	default:
		c := wireChatOf(f.ChatID)
		o.Type, o.SenderChat = "chat", &c
		if f.ChatID < -1000000000000 {
			o.Type, o.SenderChat, o.Chat, o.MessageID = "channel", nil, &c, 7
		}
	}
	w.ForwardOrigin = o
}

// InjectForwarded queues a message like InjectText whose words are not
// from's own: forwarded, or sent via a bot, as fwd says. A text starting
// with "/" carries a bot_command entity, as a forwarded command does.
func (s *Server) InjectForwarded(from User, chatID int64, text string, replyTo int, fwd Forward) (messageID int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.chat(chatID)
	c.nextID++
	m := &Message{ID: c.nextID, ChatID: chatID, From: from, Date: s.now(), Text: text, Plain: text, ReplyTo: replyTo, Forward: &fwd}
	c.messages = append(c.messages, m)
	s.enqueue(update{Message: s.wire(m, true)})
	return m.ID
}
