package telegramtest

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"unicode/utf16"
)

const descNotModified = "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message"

func utf16Len(s string) int { return len(utf16.Encode([]rune(s))) }

// render checks text against parse_mode like Telegram and returns what
// people would read.
func render(text, parseMode string) (string, *apiError) {
	switch parseMode {
	case "":
		return text, nil
	case "HTML":
		plain, err := parseHTML(text)
		if err != nil {
			return "", badRequest("can't parse entities: " + err.Error())
		}
		return plain, nil
	case "Markdown", "MarkdownV2":
		return text, nil // accepted, not checked
	}
	return "", badRequest("unsupported parse_mode")
}

// send serves sendMessage and sendPhoto.
func (s *Server) send(method string, p map[string]string, files map[string]upload) (*wireMessage, *apiError) {
	chatID, ok := parseInt64(p["chat_id"])
	if !ok || chatID == 0 {
		return nil, badRequest("chat not found")
	}
	m := &Message{ChatID: chatID, From: s.bot, FromBot: true, ParseMode: p["parse_mode"], Silent: p["disable_notification"] == "true"}
	if method == "sendPhoto" {
		f, ok := files["photo"]
		if !ok && p["photo"] == "" {
			return nil, badRequest("there is no photo in the request")
		}
		m.Photo, m.PhotoName, m.PhotoBytes, m.PhotoData, m.Text = true, f.name, f.size, f.data, p["caption"]
	} else {
		m.Text = p["text"]
	}
	plain, aerr := render(m.Text, m.ParseMode)
	if aerr != nil {
		return nil, aerr
	}
	m.Plain = plain
	switch {
	case !m.Photo && strings.TrimSpace(plain) == "":
		return nil, badRequest("message text is empty")
	case !m.Photo && utf16Len(plain) > 4096:
		return nil, badRequest("message is too long")
	case m.Photo && utf16Len(plain) > 1024:
		return nil, badRequest("message caption is too long")
	}
	mk, err := parseMarkup(p["reply_markup"])
	if err != nil {
		return nil, badRequest(err.Error())
	}
	if chatID, _ := parseInt64(p["chat_id"]); chatID < 0 && mk.hasWebApp() {
		return nil, badRequest("BUTTON_TYPE_INVALID")
	}
	if mk != nil {
		m.Keyboard, m.ForceReply = mk.Inline, mk.ForceReply
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.chat(chatID)
	thread, aerr := s.thread(chatID, p)
	if aerr != nil {
		return nil, aerr
	}
	m.ThreadID, m.TopicMessage = thread, thread != 0
	if id, ok := parseInt64(p["reply_to_message_id"]); ok {
		r := c.find(int(id))
		if r == nil && p["allow_sending_without_reply"] != "true" {
			return nil, badRequest("message to be replied not found")
		}
		m.ReplyTo = int(id)
		if r != nil && thread == 0 && r.ThreadID != 0 {
			m.ThreadID, m.TopicMessage = r.ThreadID, true // a reply stays in its topic
		}
	}
	now := s.now()
	if wait := s.floodWait(chatID, now); wait > 0 {
		return nil, &apiError{code: 429, desc: describe(429, wait), retryAfter: wait}
	}
	c.nextID++
	m.ID, m.Date = c.nextID, now
	c.messages = append(c.messages, m)
	return s.wire(m, true), nil
}

// edit serves editMessageText, editMessageCaption and editMessageReplyMarkup.
func (s *Server) edit(method string, p map[string]string) (*wireMessage, int, *apiError) {
	chatID, _ := parseInt64(p["chat_id"])
	id, _ := parseInt64(p["message_id"])
	mk, err := parseMarkup(p["reply_markup"])
	if err != nil {
		return nil, 0, badRequest(err.Error())
	}
	var kb [][]Button
	if mk != nil {
		kb = mk.Inline
	}
	var plain string
	if method != "editMessageReplyMarkup" {
		text := p["text"]
		if method == "editMessageCaption" {
			text = p["caption"]
		}
		var aerr *apiError
		if plain, aerr = render(text, p["parse_mode"]); aerr != nil {
			return nil, 0, aerr
		}
		if method == "editMessageText" && strings.TrimSpace(plain) == "" {
			return nil, 0, badRequest("message text is empty")
		}
		if method == "editMessageText" && utf16Len(plain) > 4096 {
			return nil, 0, badRequest("message is too long")
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.chat(chatID).find(int(id))
	switch {
	case m == nil:
		return nil, 0, badRequest("message to edit not found")
	case !m.FromBot:
		return nil, 0, badRequest("message can't be edited")
	case method == "editMessageText" && m.Photo:
		return nil, 0, badRequest("there is no text in the message to edit")
	case method == "editMessageCaption" && !m.Photo:
		return nil, 0, badRequest("there is no caption in the message to edit")
	}
	sameKB := keyboardsEqual(m.Keyboard, kb)
	if method == "editMessageReplyMarkup" {
		if sameKB {
			return nil, 0, &apiError{code: 400, desc: descNotModified}
		}
		m.Keyboard = kb
	} else {
		text := p["text"]
		if m.Photo {
			text = p["caption"]
		}
		if sameKB && text == m.Text && p["parse_mode"] == m.ParseMode {
			return nil, 0, &apiError{code: 400, desc: descNotModified}
		}
		// Like Telegram, an edit without reply_markup removes the keyboard.
		m.Text, m.Plain, m.ParseMode, m.Keyboard = text, plain, p["parse_mode"], kb
	}
	m.Edits++
	return s.wire(m, true), m.ID, nil
}

func (s *Server) deleteMessage(p map[string]string) (int, *apiError) {
	chatID, _ := parseInt64(p["chat_id"])
	id, _ := parseInt64(p["message_id"])
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.chat(chatID).find(int(id))
	if m == nil {
		return 0, badRequest("message to delete not found")
	}
	m.Deleted = true
	return m.ID, nil
}

func (s *Server) answerCallback(p map[string]string) *apiError {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.answers[p["callback_query_id"]]
	if a == nil || a.answered {
		return badRequest("query is too old and response timeout expired or query ID is invalid")
	}
	if utf16Len(p["text"]) > 200 {
		return badRequest("MESSAGE_TOO_LONG")
	}
	a.text, a.alert, a.answered = p["text"], p["show_alert"] == "true", true
	return nil
}

var commandRx = regexp.MustCompile(`^[a-z0-9_]{1,32}$`)

func (s *Server) setCommands(p map[string]string) *apiError {
	var cmds []Command
	if p["commands"] != "" {
		if err := json.Unmarshal([]byte(p["commands"]), &cmds); err != nil {
			return badRequest("can't parse commands JSON object")
		}
	}
	for _, c := range cmds {
		if !commandRx.MatchString(c.Command) {
			return badRequest("BOT_COMMAND_INVALID")
		}
		if n := utf16Len(c.Description); n < 1 || n > 256 {
			return badRequest("command description must be 1-256 characters")
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.commands = cmds
	return nil
}

// chat returns the chat's state, creating it. Caller holds mu.
func (s *Server) chat(id int64) *chat {
	c := s.chats[id]
	if c == nil {
		c = &chat{}
		s.chats[id] = c
	}
	return c
}

func (c *chat) find(id int) *Message {
	for _, m := range c.messages {
		if m.ID == id && !m.Deleted {
			return m
		}
	}
	return nil
}

// wire converts a stored message; with reply it nests the replied-to one.
// Caller holds mu.
func (s *Server) wire(m *Message, reply bool) *wireMessage {
	w := &wireMessage{
		MessageID:   m.ID,
		From:        toWireUser(m.From, m.FromBot),
		Chat:        wireChatOf(m.ChatID),
		Date:        m.Date.Unix(),
		ReplyMarkup: toWireMarkup(m.Keyboard),
		ThreadID:    m.ThreadID,
		TopicMsg:    m.TopicMessage,
	}
	if f := s.forums[m.ChatID]; f != nil {
		w.Chat.IsForum = true
		if m.Service == "forum_topic_created" {
			w.TopicCreated = &wireTopic{Name: f.topics[m.ID], IconColor: 7322096}
		}
	}
	if m.Edits > 0 {
		w.EditDate = s.now().Unix()
	}
	if m.Photo {
		w.Caption = m.Plain
		w.Photo = []wirePhotoSize{{FileID: "photo-" + itoa(m.ID), FileUniqueID: "u" + itoa(m.ID), Width: 640, Height: 480, FileSize: m.PhotoBytes}}
	} else {
		w.Text = m.Plain
		if !m.FromBot && strings.HasPrefix(m.Plain, "/") {
			cmd, _, _ := strings.Cut(m.Plain, " ")
			w.Entities = []wireEntity{{Type: "bot_command", Offset: 0, Length: utf16Len(cmd)}}
		}
	}
	if m.Forward != nil {
		m.Forward.wire(w, m.Date)
	}
	if reply && m.ReplyTo != 0 {
		if r := s.chat(m.ChatID).find(m.ReplyTo); r != nil {
			w.ReplyTo = s.wire(r, false)
		}
	}
	return w
}

func keyboardsEqual(a, b [][]Button) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !slices.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}
