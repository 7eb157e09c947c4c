package telegramtest

import "encoding/json"

// MenuButton is a private chat's menu button as setChatMenuButton set it.
type MenuButton struct {
	Type   string
	Text   string
	WebApp string // the web_app's URL
}

// SetMemberStatus sets what getChatMember answers for a person in every
// chat: "member" (the default), "administrator", "left", "kicked"...
func (s *Server) SetMemberStatus(user int64, status string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.members[user] = status
}

// MenuButtonOf returns the menu button set for a private chat.
func (s *Server) MenuButtonOf(chat int64) (MenuButton, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.menus[chat]
	return m, ok
}

// setMenuButton serves setChatMenuButton (telebot sends it as typed JSON).
// Only private chats have one; a web_app needs an https URL.
func (s *Server) setMenuButton(p map[string]string) *apiError {
	chat, ok := parseInt64(p["chat_id"])
	if !ok || chat <= 0 {
		return badRequest("chat not found")
	}
	var mb struct {
		Type   string      `json:"type"`
		Text   string      `json:"text"`
		WebApp *wireWebApp `json:"web_app"`
	}
	if err := json.Unmarshal([]byte(p["menu_button"]), &mb); err != nil {
		return badRequest("can't parse menu button JSON object")
	}
	m := MenuButton{Type: mb.Type, Text: mb.Text}
	if mb.Type == "web_app" {
		if mb.WebApp == nil || len(mb.WebApp.URL) < 8 || mb.WebApp.URL[:8] != "https://" || mb.Text == "" {
			return badRequest("BUTTON_URL_INVALID")
		}
		m.WebApp = mb.WebApp.URL
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.menus[chat] = m
	return nil
}

// hasWebApp reports whether a keyboard carries a web_app button.
func (m *Markup) hasWebApp() bool {
	if m == nil {
		return false
	}
	for _, row := range m.Inline {
		for _, b := range row {
			if b.WebApp != "" {
				return true
			}
		}
	}
	return false
}
