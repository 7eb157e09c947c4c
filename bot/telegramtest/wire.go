package telegramtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
)

// The JSON shapes Telegram answers with, limited to what telebot reads.

type wireUser struct {
	ID        int64  `json:"id"`
	IsBot     bool   `json:"is_bot"`
	FirstName string `json:"first_name"`
	LastName  string `json:"last_name,omitempty"`
	Username  string `json:"username,omitempty"`
}

type wireChat struct {
	ID        int64  `json:"id"`
	Type      string `json:"type"`
	Title     string `json:"title,omitempty"`
	FirstName string `json:"first_name,omitempty"`
	IsForum   bool   `json:"is_forum,omitempty"`
}

type wireTopic struct {
	Name      string `json:"name"`
	IconColor int    `json:"icon_color"`
}

type wireEntity struct {
	Type   string `json:"type"`
	Offset int    `json:"offset"`
	Length int    `json:"length"`
}

type wirePhotoSize struct {
	FileID       string `json:"file_id"`
	FileUniqueID string `json:"file_unique_id"`
	Width        int    `json:"width"`
	Height       int    `json:"height"`
	FileSize     int    `json:"file_size,omitempty"`
}

type wireButton struct {
	Text   string      `json:"text"`
	Data   string      `json:"callback_data,omitempty"`
	URL    string      `json:"url,omitempty"`
	WebApp *wireWebApp `json:"web_app,omitempty"`
}

type wireWebApp struct {
	URL string `json:"url"`
}

type wireMarkup struct {
	Inline [][]wireButton `json:"inline_keyboard,omitempty"`
}

type wireMessage struct {
	MessageID   int             `json:"message_id"`
	From        *wireUser       `json:"from,omitempty"`
	Chat        wireChat        `json:"chat"`
	Date        int64           `json:"date"`
	EditDate    int64           `json:"edit_date,omitempty"`
	Text        string          `json:"text,omitempty"`
	Entities    []wireEntity    `json:"entities,omitempty"`
	Caption     string          `json:"caption,omitempty"`
	Photo       []wirePhotoSize `json:"photo,omitempty"`
	ReplyTo     *wireMessage    `json:"reply_to_message,omitempty"`
	ReplyMarkup *wireMarkup     `json:"reply_markup,omitempty"`
	ThreadID    int             `json:"message_thread_id,omitempty"`
	TopicMsg    bool            `json:"is_topic_message,omitempty"`
	// TopicCreated is set on a forum_topic_created service message.
	TopicCreated *wireTopic `json:"forum_topic_created,omitempty"`

	// Where a forwarded message came from: forward_origin since Bot API
	// 7.0, the forward_* fields before it.
	ForwardOrigin     *wireOrigin `json:"forward_origin,omitempty"`
	ForwardFrom       *wireUser   `json:"forward_from,omitempty"`
	ForwardFromChat   *wireChat   `json:"forward_from_chat,omitempty"`
	ForwardSenderName string      `json:"forward_sender_name,omitempty"`
	ForwardDate       int64       `json:"forward_date,omitempty"`
	AutomaticForward  bool        `json:"is_automatic_forward,omitempty"`
	ViaBot            *wireUser   `json:"via_bot,omitempty"`
}

// wireOrigin is a MessageOrigin: type "user", "hidden_user", "chat" or
// "channel".
type wireOrigin struct {
	Type           string    `json:"type"`
	Date           int64     `json:"date"`
	SenderUser     *wireUser `json:"sender_user,omitempty"`
	SenderUserName string    `json:"sender_user_name,omitempty"`
	SenderChat     *wireChat `json:"sender_chat,omitempty"`
	Chat           *wireChat `json:"chat,omitempty"`
	MessageID      int       `json:"message_id,omitempty"`
}

type wireCallback struct {
	ID           string       `json:"id"`
	From         wireUser     `json:"from"`
	Message      *wireMessage `json:"message,omitempty"`
	ChatInstance string       `json:"chat_instance"`
	Data         string       `json:"data"`
}

type update struct {
	ID       int           `json:"update_id"`
	Message  *wireMessage  `json:"message,omitempty"`
	Callback *wireCallback `json:"callback_query,omitempty"`
}

func toWireUser(u User, bot bool) *wireUser {
	return &wireUser{ID: u.ID, IsBot: bot, FirstName: u.FirstName, LastName: u.LastName, Username: u.Username}
}

func wireChatOf(id int64) wireChat {
	switch {
	case id > 0:
		return wireChat{ID: id, Type: "private", FirstName: "Person"}
	case id < -1000000000000:
		return wireChat{ID: id, Type: "supergroup", Title: "Desk team"}
	default:
		return wireChat{ID: id, Type: "group", Title: "Desk team"}
	}
}

// writeOK answers {"ok":true,"result":result}.
func writeOK(w http.ResponseWriter, result any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": result})
}

// writeError answers like Telegram; retryAfter is sent as a number, never a
// string (telebot panics on a string).
func writeError(w http.ResponseWriter, code int, description string, retryAfter int) {
	body := map[string]any{"ok": false, "error_code": code, "description": description}
	if retryAfter > 0 {
		body["parameters"] = map[string]any{"retry_after": retryAfter}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(body)
}

type upload struct {
	name string
	size int
	data []byte
}

// readParams flattens a JSON, URL-encoded or multipart body into strings
// (the Bot API takes all three): strings as they are, other JSON values as
// their JSON text.
func readParams(r *http.Request) (map[string]string, map[string]upload, error) {
	params := map[string]string{}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct == "application/x-www-form-urlencoded" {
		if err := r.ParseForm(); err != nil {
			return nil, nil, fmt.Errorf("bad form body")
		}
		for k, v := range r.PostForm {
			params[k] = v[0]
		}
		return params, nil, nil
	}
	if ct == "multipart/form-data" {
		if err := r.ParseMultipartForm(32 << 20); err != nil {
			return nil, nil, fmt.Errorf("bad multipart body")
		}
		for k, v := range r.MultipartForm.Value {
			params[k] = v[0]
		}
		files := map[string]upload{}
		// telebot uploads a photo with an empty file name, which Go's parser
		// files under values: take it back as the upload it is.
		for _, k := range []string{"photo", "document"} {
			if v, ok := params[k]; ok && !strings.HasPrefix(v, "attach://") {
				files[k] = upload{size: len(v), data: []byte(v)}
				delete(params, k)
			}
		}
		for k, fhs := range r.MultipartForm.File {
			u := upload{name: fhs[0].Filename, size: int(fhs[0].Size)}
			if f, err := fhs[0].Open(); err == nil {
				u.data, _ = io.ReadAll(f)
				f.Close()
			}
			files[k] = u
		}
		return params, files, nil
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, nil, err
	}
	body = bytes.TrimSpace(body)
	if len(body) == 0 || string(body) == "null" {
		return params, nil, nil
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, nil, errors.New("request body is not a JSON object")
	}
	for k, v := range raw {
		var s string
		if json.Unmarshal(v, &s) == nil {
			params[k] = s
		} else {
			params[k] = string(v)
		}
	}
	return params, nil, nil
}

func parseMarkup(s string) (*Markup, error) {
	if s == "" {
		return nil, nil
	}
	var m struct {
		Inline         [][]wireButton `json:"inline_keyboard"`
		ForceReply     bool           `json:"force_reply"`
		Placeholder    string         `json:"input_field_placeholder"`
		Selective      bool           `json:"selective"`
		RemoveKeyboard bool           `json:"remove_keyboard"`
	}
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, errors.New("can't parse reply keyboard markup JSON object")
	}
	out := &Markup{ForceReply: m.ForceReply, Placeholder: m.Placeholder, Selective: m.Selective, RemoveKeyboard: m.RemoveKeyboard}
	for _, row := range m.Inline {
		var r []Button
		for _, b := range row {
			if b.WebApp != nil && !strings.HasPrefix(b.WebApp.URL, "https://") {
				return nil, errors.New("BUTTON_URL_INVALID")
			}
			if b.URL == "" && b.WebApp == nil && (len(b.Data) < 1 || len(b.Data) > 64) {
				return nil, errors.New("BUTTON_DATA_INVALID")
			}
			if strings.TrimSpace(b.Text) == "" {
				return nil, errors.New("text buttons are unallowed in the inline keyboard")
			}
			btn := Button{Text: b.Text, Data: b.Data, URL: b.URL}
			if b.WebApp != nil {
				btn.WebApp = b.WebApp.URL
			}
			r = append(r, btn)
		}
		if len(r) > 0 {
			out.Inline = append(out.Inline, r)
		}
	}
	return out, nil
}

func toWireMarkup(kb [][]Button) *wireMarkup {
	if len(kb) == 0 {
		return nil
	}
	m := &wireMarkup{}
	for _, row := range kb {
		var r []wireButton
		for _, b := range row {
			wb := wireButton{Text: b.Text, Data: b.Data, URL: b.URL}
			if b.WebApp != "" {
				wb.WebApp = &wireWebApp{URL: b.WebApp}
			}
			r = append(r, wb)
		}
		m.Inline = append(m.Inline, r)
	}
	return m
}

func parseInt64(s string) (int64, bool) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	return n, err == nil
}
