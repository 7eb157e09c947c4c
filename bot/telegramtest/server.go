// Package telegramtest is a fake Telegram Bot API server for tests. It speaks
// the HTTP API exactly as telebot v3 uses it (POST /bot<token>/<method>, JSON
// bodies whose values are mostly strings, multipart for uploads, answers read
// from the body), keeps what each chat sees (messages with their current text
// and keyboard after edits), records every call, and injects updates and
// failures on demand.
//
// Concurrency: a Server is safe for use from many goroutines; every accessor
// returns copies. Long polls (getUpdates) are held in real time up to the
// client's timeout and woken as soon as an update is injected.
//
// Delivery: like Telegram, an update stays queued until a later getUpdates
// confirms it with a higher offset, so a client that crashes after reading a
// batch is given the same batch again.
//
// Forums: SetForum makes a chat a forum supergroup with topics and the
// bot's right to create them (forum.go).
//
// Pins: pinChatMessage and unpinChatMessage need the bot to be an
// administrator with the right to pin (SetBotRights, or a forum), and every
// send records disable_notification (pin.go).
//
// Strictness: the fake is at least as strict as Telegram where mistakes cost
// messages: HTML that Telegram would refuse is refused (unknown or unbalanced
// tags, a bare '<' or '&'), text over 4,096 characters (UTF-16 units after
// entity parsing) is refused, callback data over 64 bytes is refused, and an
// edit with identical content gets "message is not modified".
package telegramtest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskbot/deskbot/deskbottest"
)

// User is a Telegram user, a person or the bot.
type User struct {
	ID        int64
	FirstName string
	LastName  string
	Username  string
}

// Button is one inline keyboard button.
type Button struct {
	Text string
	Data string // callback_data as on the wire, e.g. "\fa1|<uuid>"
	URL  string
	// WebApp is a web_app button's URL; Telegram takes such buttons only
	// in private chats.
	WebApp string
}

// Markup is a decoded reply_markup.
type Markup struct {
	Inline         [][]Button
	ForceReply     bool
	Placeholder    string
	Selective      bool
	RemoveKeyboard bool
}

// Message is a message as the chat shows it now.
type Message struct {
	ID        int
	ChatID    int64
	From      User
	FromBot   bool
	Date      time.Time
	Text      string // the text (or photo caption) as sent, HTML source included
	Plain     string // what people read: tags removed, entities decoded
	ParseMode string
	Keyboard  [][]Button // the current inline keyboard, nil when none
	ReplyTo   int
	// ForceReply is set when the message asked clients to reply to it.
	ForceReply bool
	Photo      bool
	PhotoName  string
	PhotoBytes int
	PhotoData  []byte // the uploaded bytes, as received
	// Forward is set on an injected message that is not the sender's own
	// words (see InjectForwarded).
	Forward *Forward
	Edits   int
	Deleted bool
	// ThreadID is the forum topic the message is in (0: General, or not a
	// forum); TopicMessage is Telegram's is_topic_message.
	ThreadID     int
	TopicMessage bool
	// Service names a service message ("forum_topic_created"); "" for others.
	Service string
	// Reactions are the bot's reactions on the message.
	Reactions []string
	// Silent is set when the message was sent with disable_notification:
	// people get it without a sound.
	Silent bool
}

// Labels returns the texts of the message's inline buttons, row by row.
func (m Message) Labels() []string {
	var out []string
	for _, row := range m.Keyboard {
		for _, b := range row {
			out = append(out, b.Text)
		}
	}
	return out
}

// Call is one request the fake received.
type Call struct {
	Method    string
	At        time.Time // by the server's clock (see SetNow)
	ChatID    int64
	MessageID int    // the message sent (assigned id) or edited/deleted
	Text      string // text or caption
	ParseMode string
	Markup    *Markup
	ReplyTo   int
	ThreadID  int // message_thread_id, when given
	// ForceReply mirrors Markup.ForceReply for convenience.
	ForceReply bool
	// Silent is disable_notification: the message arrives without a sound.
	Silent bool
	Params map[string]string // every parameter, objects as JSON text
	// Upload is the bytes of an uploaded photo or document, as received.
	Upload []byte
	// Status is the error_code answered (200 when accepted), -1 when the
	// connection was dropped (Down), 0 when the client gave up first.
	Status      int
	Description string
}

// OK reports whether the call was accepted.
func (c Call) OK() bool { return c.Status == http.StatusOK }

type answer struct {
	text     string
	alert    bool
	answered bool
}

// Server is the fake. Create it with New.
type Server struct {
	URL   string // for telebot.Settings.URL
	Token string

	http *httptest.Server
	done chan struct{}

	mu       sync.Mutex
	now      func() time.Time
	bot      User
	updates  []update // unconfirmed, ascending ids
	nextUpd  int
	wake     chan struct{} // closed and replaced when an update is queued
	poller   chan struct{} // closed to end the current long poll with 409
	chats    map[int64]*chat
	calls    []Call
	answers  map[string]*answer
	commands []Command
	faults   faults
	nextCbID int
	forums   map[int64]*forum
	members  map[int64]string  // getChatMember's status of a person (default "member")
	people   map[int64]User    // getChatMember's user of a person (AddUser); else only the id
	admins   map[int64]*rights // chats the bot administers (SetBotRights)
	menus    map[int64]MenuButton
}

// Command is one entry registered with setMyCommands.
type Command struct {
	Command     string `json:"command"`
	Description string `json:"description"`
}

type chat struct {
	nextID   int
	messages []*Message
	pins     []int // pinned message ids, oldest pin first
}

// BotUser is the identity getMe returns.
var BotUser = User{ID: 7000001, FirstName: "Deskbot", Username: "deskbot_test_bot"}

// New starts a fake on loopback that accepts token, and closes it when the
// test ends (after cleanups registered later, such as stopping a bot).
func New(tb testing.TB, token string) *Server {
	tb.Helper()
	s := Start(token)
	tb.Cleanup(s.Close)
	return s
}

// Start starts a fake on loopback that accepts token and runs until Close:
// for a program that plays Telegram itself (deskbot demo) rather than a
// test.
func Start(token string) *Server {
	s := &Server{
		Token:   token,
		done:    make(chan struct{}),
		now:     time.Now,
		bot:     BotUser,
		nextUpd: 1,
		wake:    make(chan struct{}),
		chats:   map[int64]*chat{},
		answers: map[string]*answer{},
		members: map[int64]string{},
		menus:   map[int64]MenuButton{},
	}
	s.http = httptest.NewServer(s)
	s.URL = s.http.URL
	return s
}

// Close ends held requests and long polls, then stops the server. It is
// called by the test's cleanup (for a Server from New); calling it earlier
// simulates Telegram gone for good.
func (s *Server) Close() {
	s.mu.Lock()
	select {
	case <-s.done:
		s.mu.Unlock()
		return
	default:
	}
	close(s.done)
	s.mu.Unlock()
	s.http.CloseClientConnections()
	s.http.Close()
}

// SetNow sets the clock used for Call.At, message dates and rate limits, so a
// test with an injected clock can check pacing without waiting.
func (s *Server) SetNow(now func() time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = now
}

// ServeHTTP routes /bot<token>/<method>.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/bot")
	token, method, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 || method == "" {
		writeError(w, http.StatusNotFound, "Not Found", 0)
		return
	}
	if token != s.Token {
		writeError(w, http.StatusUnauthorized, "Unauthorized", 0)
		return
	}
	params, files, err := readParams(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, "Bad Request: "+err.Error(), 0)
		return
	}
	s.serve(w, r, method, params, files)
}

// WaitFor waits until cond holds, failing the test after timeout. It is
// deskbottest.EventuallyWithin, the one way tests wait; prefer that, with
// words that say what is awaited.
func (s *Server) WaitFor(tb testing.TB, timeout time.Duration, cond func(*Server) bool) {
	tb.Helper()
	deskbottest.EventuallyWithin(tb, timeout, "a condition on the fake Telegram", func() bool { return cond(s) })
}

// Bot returns the bot's own identity.
func (s *Server) Bot() User { return s.bot }
