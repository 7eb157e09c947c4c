package demo

import (
	"embed"
	"encoding/json"
	"fmt"
	"html"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/webapp/webapptest"
)

//go:embed assets
var assets embed.FS

// ist is India time, the team's clock.
var ist = time.FixedZone("IST", 5*3600+1800)

// tapWait bounds how long a tap waits for the bot's answer (the toast or
// alert Telegram shows the person who tapped).
const tapWait = 10 * time.Second

func (d *Demo) routes() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets")
	mux.Handle("GET /", http.FileServerFS(static))
	mux.HandleFunc("GET /api/chat", d.serveChat)
	mux.HandleFunc("POST /api/send", d.serveSend)
	mux.HandleFunc("POST /api/tap", d.serveTap)
	mux.HandleFunc("GET /api/photo/{id}", d.servePhoto)
	mux.HandleFunc("GET /desks", d.serveDesks)
	return mux
}

// guard answers only what this page's own origin asks: a request naming
// another host (a DNS rebinding of some site to 127.0.0.1) or sent from
// another site (Sec-Fetch-Site) is refused, and a post must carry the
// page's header, which a cross-site form cannot and a cross-site fetch
// may not without a preflight the page never grants.
func (d *Demo) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !d.ownHost(r.Host) {
			http.Error(w, "wrong host", http.StatusMisdirectedRequest)
			return
		}
		if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
			http.Error(w, "cross-site request", http.StatusForbidden)
			return
		}
		if r.Method != http.MethodGet && r.Header.Get("X-Deskbot-Demo") != "1" {
			http.Error(w, "missing X-Deskbot-Demo", http.StatusForbidden)
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' blob:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

func (d *Demo) ownHost(host string) bool {
	_, port, _ := net.SplitHostPort(d.host)
	return host == d.host || host == "localhost:"+port
}

// chatView is the group as the page draws it.
type chatView struct {
	Title    string                 `json:"title"`
	Bot      string                 `json:"bot"`
	People   []Person               `json:"people"`
	Messages []messageView          `json:"messages"`
	Commands []telegramtest.Command `json:"commands"`
	Desks    bool                   `json:"desks"` // the desks page can be opened
}

type messageView struct {
	ID     int    `json:"id"`
	From   string `json:"from"`
	FromID int64  `json:"fromId"`
	Bot    bool   `json:"bot"`
	Time   string `json:"time"`
	// Text is what people read; HTML, when set, is the same with
	// Telegram's formatting tags, for the page to draw from an allowed
	// few (it never inserts it as markup).
	Text       string         `json:"text"`
	HTML       string         `json:"html,omitempty"`
	ReplyTo    int            `json:"replyTo,omitempty"`
	Quote      string         `json:"quote,omitempty"`
	QuoteFrom  string         `json:"quoteFrom,omitempty"`
	Keyboard   [][]buttonView `json:"keyboard,omitempty"`
	Edited     bool           `json:"edited,omitempty"`
	Photo      bool           `json:"photo,omitempty"`
	Reactions  []string       `json:"reactions,omitempty"`
	ForceReply bool           `json:"forceReply,omitempty"`
}

type buttonView struct {
	Text string `json:"text"`
	Data string `json:"data,omitempty"`
	URL  string `json:"url,omitempty"`
	// Desks marks the button that opens the desks page (the Mini App's
	// t.me link), which the page opens signed in.
	Desks bool `json:"desks,omitempty"`
}

func (d *Demo) serveChat(w http.ResponseWriter, r *http.Request) {
	msgs := d.tg.ChatMessages(ChatID)
	byID := make(map[int]telegramtest.Message, len(msgs))
	for _, m := range msgs {
		byID[m.ID] = m
	}
	bot := d.tg.Bot()
	v := chatView{Title: "Desk team", Bot: bot.FirstName, People: People, Messages: []messageView{}, Commands: d.tg.Commands(), Desks: d.opts.DesksPage != ""}
	miniApp := "https://t.me/" + bot.Username + "/"
	for _, m := range msgs {
		mv := messageView{
			ID: m.ID, From: name(m.From), FromID: m.From.ID, Bot: m.FromBot, Time: m.Date.In(ist).Format("15:04"),
			Text: m.Plain, ReplyTo: m.ReplyTo, Edited: m.Edits > 0, Photo: m.Photo,
			Reactions: m.Reactions, ForceReply: m.ForceReply,
		}
		if m.ParseMode == "HTML" {
			mv.HTML = m.Text
		}
		if q, ok := byID[m.ReplyTo]; ok {
			mv.Quote, mv.QuoteFrom = clip(q.Plain, 90), name(q.From)
		}
		for _, row := range m.Keyboard {
			var rv []buttonView
			for _, b := range row {
				bv := buttonView{Text: b.Text, Data: b.Data, URL: b.URL}
				if strings.HasPrefix(b.URL, miniApp) {
					bv.URL, bv.Desks = "", d.opts.DesksPage != ""
				}
				rv = append(rv, bv)
			}
			mv.Keyboard = append(mv.Keyboard, rv)
		}
		v.Messages = append(v.Messages, mv)
	}
	writeJSON(w, http.StatusOK, v)
}

// person finds who the page speaks as.
func person(id int64) (telegramtest.User, bool) {
	i := slices.IndexFunc(People, func(p Person) bool { return p.ID == id })
	if i < 0 {
		return telegramtest.User{}, false
	}
	return telegramtest.User{ID: People[i].ID, FirstName: People[i].Name}, true
}

func (d *Demo) serveSend(w http.ResponseWriter, r *http.Request) {
	var in struct {
		As      int64  `json:"as"`
		Text    string `json:"text"`
		ReplyTo int    `json:"replyTo"`
	}
	if !readJSON(w, r, &in) {
		return
	}
	from, ok := person(in.As)
	text := strings.TrimSpace(in.Text)
	switch {
	case !ok:
		http.Error(w, "unknown person", http.StatusBadRequest)
		return
	case text == "" || len(text) > 4096:
		http.Error(w, "a message is 1 to 4096 characters", http.StatusBadRequest)
		return
	}
	if _, ok := d.tg.Message(ChatID, in.ReplyTo); !ok {
		in.ReplyTo = 0
	}
	id := d.tg.InjectText(from, ChatID, text, in.ReplyTo)
	writeJSON(w, http.StatusOK, map[string]int{"id": id})
}

// serveTap taps a button as the person and waits for the bot's answer to
// the tap, as Telegram shows it: a toast, or an alert to dismiss.
func (d *Demo) serveTap(w http.ResponseWriter, r *http.Request) {
	var in struct {
		As      int64  `json:"as"`
		Message int    `json:"message"`
		Data    string `json:"data"`
	}
	if !readJSON(w, r, &in) {
		return
	}
	from, ok := person(in.As)
	if !ok {
		http.Error(w, "unknown person", http.StatusBadRequest)
		return
	}
	// Only a button the message shows now: the page taps, it forges nothing.
	m, ok := d.tg.Message(ChatID, in.Message)
	if !ok || !slices.ContainsFunc(m.Keyboard, func(row []telegramtest.Button) bool {
		return slices.ContainsFunc(row, func(b telegramtest.Button) bool { return b.Data != "" && b.Data == in.Data })
	}) {
		http.Error(w, "that message has no such button now", http.StatusConflict)
		return
	}
	q := d.tg.InjectCallback(from, ChatID, in.Message, in.Data)
	deadline := time.Now().Add(tapWait)
	for time.Now().Before(deadline) {
		if text, alert, ok := d.tg.CallbackAnswer(q); ok {
			writeJSON(w, http.StatusOK, map[string]any{"text": text, "alert": alert, "answered": true})
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"answered": false})
}

func (d *Demo) servePhoto(w http.ResponseWriter, r *http.Request) {
	id, _ := strconv.Atoi(r.PathValue("id"))
	m, ok := d.tg.Message(ChatID, id)
	if !ok || !m.Photo {
		http.NotFound(w, r)
		return
	}
	ct := http.DetectContentType(m.PhotoData)
	if !strings.HasPrefix(ct, "image/") {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", ct)
	w.Write(m.PhotoData)
}

// serveDesks opens the desks page as Telegram opens a Mini App: signed
// in as the person (?as=), initData and theme in the URL's fragment, which
// the browser never sends to a server.
func (d *Demo) serveDesks(w http.ResponseWriter, r *http.Request) {
	id, _ := strconv.ParseInt(r.URL.Query().Get("as"), 10, 64)
	from, ok := person(id)
	if !ok || d.opts.DesksPage == "" {
		http.NotFound(w, r)
		return
	}
	user, _ := json.Marshal(map[string]any{"id": from.ID, "first_name": from.FirstName})
	initData := webapptest.SignInitData(d.token, string(user), time.Now(), url.Values{"query_id": {"AAdemo" + strconv.FormatInt(from.ID, 10)}})
	const theme = `{"bg_color":"#ffffff","secondary_bg_color":"#efeff3","text_color":"#000000","hint_color":"#707579","link_color":"#3390ec","button_color":"#3390ec","button_text_color":"#ffffff","destructive_text_color":"#e53935"}`
	http.Redirect(w, r, d.opts.DesksPage+"#tgWebAppData="+url.QueryEscape(initData)+
		"&tgWebAppVersion=7.10&tgWebAppPlatform=web&tgWebAppThemeParams="+url.QueryEscape(theme), http.StatusSeeOther)
}

func name(u telegramtest.User) string {
	return strings.TrimSpace(u.FirstName + " " + u.LastName)
}

func clip(s string, n int) string {
	r := []rune(strings.Join(strings.Fields(s), " "))
	if len(r) <= n {
		return string(r)
	}
	return string(r[:n-1]) + "…"
}

func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(v); err != nil {
		http.Error(w, "bad JSON: "+html.EscapeString(err.Error()), http.StatusBadRequest)
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, fmt.Sprint(err), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}
