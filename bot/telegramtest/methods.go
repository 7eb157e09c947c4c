package telegramtest

import (
	"net/http"
	"strconv"
	"time"
)

// apiError is an answer other than ok.
type apiError struct {
	code       int
	desc       string
	retryAfter int
}

func badRequest(desc string) *apiError { return &apiError{code: 400, desc: "Bad Request: " + desc} }

// serve applies the fault rules, then the method.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, method string, params map[string]string, files map[string]upload) {
	s.mu.Lock()
	i := s.record(method, params)
	for _, k := range []string{"photo", "document"} {
		if f, ok := files[k]; ok {
			s.calls[i].Upload = append(s.calls[i].Upload, f.data...)
		}
	}
	down, h := s.faults.down, s.hangFor(method)
	s.mu.Unlock()

	if down {
		if method == "getUpdates" {
			s.pause(r, 50*time.Millisecond)
		}
		s.finish(i, -1, "connection dropped", 0)
		drop(w)
		return
	}
	if h != nil && !s.hold(r, h) {
		s.finish(i, 0, "client gave up while held", 0)
		return
	}

	s.mu.Lock()
	f := s.failureFor(method)
	s.mu.Unlock()
	if f != nil {
		if method == "getUpdates" {
			s.pause(r, 50*time.Millisecond)
		}
		s.finish(i, f.Code, f.Description, 0)
		writeError(w, f.Code, f.Description, f.RetryAfter)
		return
	}

	var (
		result any
		msgID  int
		aerr   *apiError
	)
	switch method {
	case "getMe":
		result = toWireUser(s.bot, true)
	case "getUpdates":
		result, aerr = s.getUpdates(r, params)
	case "sendMessage", "sendPhoto":
		var m *wireMessage
		m, aerr = s.send(method, params, files)
		if m != nil {
			result, msgID = m, m.MessageID
		}
	case "editMessageText", "editMessageReplyMarkup", "editMessageCaption":
		result, msgID, aerr = s.edit(method, params)
	case "deleteMessage":
		msgID, aerr = s.deleteMessage(params)
		result = true
	case "answerCallbackQuery":
		aerr = s.answerCallback(params)
		result = true
	case "setMyCommands":
		aerr = s.setCommands(params)
		result = true
	case "deleteMyCommands":
		result = true
	case "createForumTopic":
		result, msgID, aerr = s.createTopic(params)
	case "getChatMember":
		result, aerr = s.chatMember(params)
	case "setChatMenuButton":
		aerr = s.setMenuButton(params)
		result = true
	case "pinChatMessage":
		msgID, aerr = s.pin(params)
		result = true
	case "unpinChatMessage":
		msgID, aerr = s.unpin(params)
		result = true
	case "setMessageReaction":
		msgID, aerr = s.react(params)
		result = true
	default:
		aerr = &apiError{code: 404, desc: "Not Found"}
	}
	if aerr != nil {
		s.finish(i, aerr.code, aerr.desc, msgID)
		writeError(w, aerr.code, aerr.desc, aerr.retryAfter)
		return
	}
	s.finish(i, http.StatusOK, "", msgID)
	writeOK(w, result)
}

// record appends the call as received. Caller holds mu.
func (s *Server) record(method string, params map[string]string) int {
	c := Call{Method: method, At: s.now(), Params: params, ParseMode: params["parse_mode"]}
	c.ChatID, _ = parseInt64(params["chat_id"])
	if id, ok := parseInt64(params["message_id"]); ok {
		c.MessageID = int(id)
	}
	c.Text = params["text"]
	c.Silent = params["disable_notification"] == "true"
	if method == "sendPhoto" || method == "editMessageCaption" {
		c.Text = params["caption"]
	}
	if method == "answerCallbackQuery" {
		c.Text = params["text"]
	}
	if id, ok := parseInt64(params["reply_to_message_id"]); ok {
		c.ReplyTo = int(id)
	}
	if id, ok := parseInt64(params["message_thread_id"]); ok {
		c.ThreadID = int(id)
	}
	if m, err := parseMarkup(params["reply_markup"]); err == nil && m != nil {
		c.Markup, c.ForceReply = m, m.ForceReply
	}
	s.calls = append(s.calls, c)
	return len(s.calls) - 1
}

func (s *Server) finish(i, status int, desc string, msgID int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[i].Status, s.calls[i].Description = status, desc
	if msgID != 0 {
		s.calls[i].MessageID = msgID
	}
}

// hold waits out a Hang; false when the client left or the server closed.
func (s *Server) hold(r *http.Request, h *hang) bool {
	var timer <-chan time.Time
	if h.d > 0 {
		t := time.NewTimer(h.d)
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-timer:
		return true
	case <-h.release:
		return r.Context().Err() == nil
	case <-r.Context().Done():
		return false
	case <-s.done:
		return false
	}
}

func (s *Server) pause(r *http.Request, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
	case <-s.done:
	}
}

// drop closes the connection without an answer.
func drop(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	conn.Close()
}

func itoa(n int) string { return strconv.Itoa(n) }

// Calls returns every call received for method ("" for all), failed ones
// included, in arrival order.
func (s *Server) Calls(method string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if method == "" || c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// Sent returns the calls to method that Telegram accepted.
func (s *Server) Sent(method string) []Call {
	var out []Call
	for _, c := range s.Calls(method) {
		if c.OK() {
			out = append(out, c)
		}
	}
	return out
}

// Count returns how many calls to method ("" for all) arrived.
func (s *Server) Count(method string) int { return len(s.Calls(method)) }
