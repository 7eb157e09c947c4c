package telegramtest_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskbot/deskbot/bot/telegramtest"
	"gopkg.in/telebot.v3"
)

const token = "123456:TEST-token-never-logged"

const group int64 = -1001234567890

var asha = telegramtest.User{ID: 501, FirstName: "Asha"}

func mustBot(t *testing.T, srv *telegramtest.Server) *telebot.Bot {
	t.Helper()
	b, err := telebot.NewBot(telebot.Settings{
		URL: srv.URL, Token: token,
		Poller:  &telebot.LongPoller{Timeout: 2 * time.Second},
		OnError: func(err error, _ telebot.Context) { t.Errorf("handler error: %v", err) },
	})
	if err != nil {
		t.Fatalf("NewBot: %v", err)
	}
	return b
}

// start runs the bot's poller until the test ends.
func start(t *testing.T, b *telebot.Bot) {
	t.Helper()
	done := make(chan struct{})
	go func() { b.Start(); close(done) }()
	t.Cleanup(func() { b.Stop(); <-done })
}

func TestGetMeAndToken(t *testing.T) {
	srv := telegramtest.New(t, token)
	b := mustBot(t, srv)
	if got, want := b.Me.Username, telegramtest.BotUser.Username; got != want {
		t.Errorf("username = %q, want %q", got, want)
	}
	_, err := telebot.NewBot(telebot.Settings{URL: srv.URL, Token: "123456:wrong", Offline: false})
	if !errors.Is(err, telebot.ErrUnauthorized) {
		t.Errorf("wrong token: err = %v, want Unauthorized", err)
	}
}

func TestSendEditAndWhatTheChatShows(t *testing.T) {
	srv := telegramtest.New(t, token)
	b := mustBot(t, srv)
	kb := &telebot.ReplyMarkup{InlineKeyboard: [][]telebot.InlineButton{{
		{Unique: "a1", Data: "r1", Text: "Allow once"}, {Unique: "dn", Data: "r1", Text: "Deny"},
	}}}
	m, err := b.Send(telebot.ChatID(group), "<b>desk</b> &lt;script&gt; &#39;x&#39;", &telebot.SendOptions{ParseMode: telebot.ModeHTML, ReplyMarkup: kb})
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	if got, want := m.Text, "desk <script> 'x'"; got != want {
		t.Errorf("returned text = %q, want %q", got, want)
	}
	shown, _ := srv.Message(group, m.ID)
	if got, want := strings.Join(shown.Labels(), ","), "Allow once,Deny"; got != want {
		t.Errorf("labels = %q, want %q", got, want)
	}
	if got, want := shown.Keyboard[0][0].Data, "\fa1|r1"; got != want {
		t.Errorf("callback data = %q, want %q", got, want)
	}

	// Same content again: Telegram's "message is not modified".
	_, err = b.Edit(m, "<b>desk</b> &lt;script&gt; &#39;x&#39;", &telebot.SendOptions{ParseMode: telebot.ModeHTML, ReplyMarkup: kb})
	if !errors.Is(err, telebot.ErrSameMessageContent) {
		t.Errorf("identical edit: err = %v, want ErrSameMessageContent", err)
	}
	// An edit without reply_markup removes the keyboard.
	if _, err := b.Edit(m, "decided", &telebot.SendOptions{ParseMode: telebot.ModeHTML}); err != nil {
		t.Fatalf("edit: %v", err)
	}
	shown, _ = srv.Message(group, m.ID)
	if shown.Plain != "decided" || shown.Keyboard != nil || shown.Edits != 1 {
		t.Errorf("after edit: %+v", shown)
	}
	if _, err := b.EditReplyMarkup(m, nil); !errors.Is(err, telebot.ErrSameMessageContent) {
		t.Errorf("removing an absent keyboard: err = %v, want not modified", err)
	}
	if _, err := b.Edit(telebot.StoredMessage{MessageID: "999", ChatID: group}, "x"); err == nil {
		t.Error("edit of a missing message succeeded")
	}
}

func TestRefusesWhatTelegramRefuses(t *testing.T) {
	srv := telegramtest.New(t, token)
	b := mustBot(t, srv)
	html := &telebot.SendOptions{ParseMode: telebot.ModeHTML}
	tests := []struct {
		name, text string
		opts       *telebot.SendOptions
		want       string
	}{
		{"model markup", "<script>alert(1)</script>", html, "can't parse entities"},
		{"bare less-than", "P < L", html, "can't parse entities"},
		{"bare ampersand", "P&L", html, "can't parse entities"},
		{"unclosed tag", "<b>bold", html, "can't parse entities"},
		{"crossed tags", "<b><i>x</b></i>", html, "can't parse entities"},
		{"too long", strings.Repeat("é", 4097), &telebot.SendOptions{}, "message is too long"},
		{"tags only", "<b></b>", html, "text is empty"},
		{"long button data", "x", &telebot.SendOptions{ReplyMarkup: &telebot.ReplyMarkup{InlineKeyboard: [][]telebot.InlineButton{{{Unique: "a1", Data: strings.Repeat("x", 62), Text: "A"}}}}}, "BUTTON_DATA_INVALID"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := b.Send(telebot.ChatID(group), tt.text, tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
	// 4,096 characters of HTML-escaped text is within the limit: Telegram
	// counts what people read, not the markup.
	if _, err := b.Send(telebot.ChatID(group), strings.Repeat("&lt;", 4096), html); err != nil {
		t.Errorf("4096 escaped characters: %v", err)
	}
}

func TestUpdatesReachHandlers(t *testing.T) {
	srv := telegramtest.New(t, token)
	b := mustBot(t, srv)
	var mu sync.Mutex
	var texts, replies, data []string
	var whoamiAnswered, tapAnswered bool
	b.Handle(telebot.OnText, func(c telebot.Context) error {
		mu.Lock()
		defer mu.Unlock()
		texts = append(texts, c.Text())
		if c.Message().ReplyTo != nil {
			replies = append(replies, c.Message().ReplyTo.Text)
		}
		return nil
	})
	b.Handle("/whoami", func(c telebot.Context) error {
		err := c.Send("you are " + c.Sender().FirstName)
		mu.Lock()
		whoamiAnswered = true
		mu.Unlock()
		return err
	})
	b.Handle(telebot.OnCallback, func(c telebot.Context) error {
		mu.Lock()
		data = append(data, c.Callback().Data)
		mu.Unlock()
		err := c.Respond(&telebot.CallbackResponse{Text: "Only approvers can decide.", ShowAlert: true})
		mu.Lock()
		tapAnswered = true
		mu.Unlock()
		return err
	})
	start(t, b)

	sent, err := b.Send(telebot.ChatID(group), "desk says hi")
	if err != nil {
		t.Fatal(err)
	}
	srv.InjectText(asha, group, "hello", 0)
	srv.InjectText(asha, group, "buy less", sent.ID)
	srv.InjectText(asha, group, "/whoami", 0)
	q := srv.InjectCallback(asha, group, sent.ID, "\fa1|r1")

	srv.WaitFor(t, 5*time.Second, func(s *telegramtest.Server) bool {
		_, _, answered := s.CallbackAnswer(q)
		mu.Lock()
		defer mu.Unlock()
		// The handler's own send must have returned, not only reached the
		// server: the test's end stops the bot and would cancel it.
		return answered && tapAnswered && whoamiAnswered && len(s.Sent("sendMessage")) == 2 && s.PendingUpdates() == 0
	})
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(texts) // telebot runs handlers in their own goroutines
	if got, want := strings.Join(texts, "|"), "buy less|hello"; got != want {
		t.Errorf("texts = %q, want %q", got, want)
	}
	if got, want := strings.Join(replies, "|"), "desk says hi"; got != want {
		t.Errorf("replies to = %q, want %q", got, want)
	}
	if got, want := strings.Join(data, "|"), "\fa1|r1"; got != want { // raw: no handler for the button
		t.Errorf("callback data = %q, want %q", got, want)
	}
	if text, alert, _ := srv.CallbackAnswer(q); text != "Only approvers can decide." || !alert {
		t.Errorf("answer = %q alert=%v", text, alert)
	}
	if got := srv.Sent("sendMessage")[1].Text; got != "you are Asha" {
		t.Errorf("/whoami answered %q", got)
	}
}

// poll calls getUpdates directly to see the confirmation protocol.
func poll(t *testing.T, srv *telegramtest.Server, offset, timeout int) []int {
	t.Helper()
	body := strings.NewReader(`{"offset":"` + itoa(offset) + `","timeout":"` + itoa(timeout) + `"}`)
	resp, err := http.Post(srv.URL+"/bot"+token+"/getUpdates", "application/json", body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		OK     bool `json:"ok"`
		Result []struct {
			ID int `json:"update_id"`
		} `json:"result"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || !r.OK {
		t.Fatalf("getUpdates: ok=%v err=%v", r.OK, err)
	}
	var ids []int
	for _, u := range r.Result {
		ids = append(ids, u.ID)
	}
	return ids
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestUnconfirmedBatchIsDeliveredAgain(t *testing.T) {
	srv := telegramtest.New(t, token)
	srv.InjectText(asha, group, "one", 0)
	srv.InjectText(asha, group, "two", 0)
	first := poll(t, srv, 0, 0)
	again := poll(t, srv, 0, 0) // crashed before confirming
	if len(first) != 2 || len(again) != 2 || first[0] != again[0] {
		t.Fatalf("first %v, again %v: want the same two updates", first, again)
	}
	if got := poll(t, srv, first[1]+1, 0); len(got) != 0 {
		t.Errorf("after confirming: %v, want none", got)
	}

	// An empty poll is held until an update arrives.
	go func() { time.Sleep(100 * time.Millisecond); srv.InjectText(asha, group, "three", 0) }()
	began := time.Now()
	got := poll(t, srv, first[1]+1, 5)
	if len(got) != 1 || time.Since(began) > 4*time.Second {
		t.Errorf("held poll returned %v after %v", got, time.Since(began))
	}
}

func TestFailuresOnDemand(t *testing.T) {
	srv := telegramtest.New(t, token)
	b := mustBot(t, srv)
	send := func() error { _, err := b.Send(telebot.ChatID(group), "x"); return err }

	srv.Fail(telegramtest.Failure{Method: "sendMessage", Code: 429, RetryAfter: 7, Times: 2})
	for range 2 {
		var flood telebot.FloodError
		if err := send(); !errors.As(err, &flood) || flood.RetryAfter != 7 {
			t.Errorf("err = %v, want FloodError retry after 7", err)
		}
	}
	if err := send(); err != nil {
		t.Errorf("after Times ran out: %v", err)
	}

	srv.Fail(telegramtest.Failure{Code: 500})
	if err := send(); err == nil || !strings.Contains(err.Error(), "500") {
		t.Errorf("500: err = %v", err)
	}
	srv.ClearFailures()

	srv.Down(true)
	if err := send(); err == nil {
		t.Error("send while down succeeded")
	}
	srv.Down(false)

	srv.Hang("sendMessage", 200*time.Millisecond)
	began := time.Now()
	if err := send(); err != nil || time.Since(began) < 200*time.Millisecond {
		t.Errorf("hung send: err=%v after %v", err, time.Since(began))
	}
	srv.Release()

	got := srv.Calls("sendMessage")
	var statuses []int
	for _, c := range got {
		statuses = append(statuses, c.Status)
	}
	if want := []int{429, 429, 200, 500, -1, 200}; !slices.Equal(statuses, want) {
		t.Errorf("recorded statuses %v, want %v", statuses, want)
	}
	if got := len(srv.BotMessages(group)); got != 2 {
		t.Errorf("chat shows %d messages, want 2", got)
	}
}

func TestLimitsOnInjectedClock(t *testing.T) {
	srv := telegramtest.New(t, token)
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	srv.SetNow(func() time.Time { return now })
	srv.Limit(&telegramtest.Limits{PerChat: time.Second, PerGroupPerMinute: 20})
	b := mustBot(t, srv)
	if _, err := b.Send(telebot.ChatID(group), "1"); err != nil {
		t.Fatal(err)
	}
	var flood telebot.FloodError
	if _, err := b.Send(telebot.ChatID(group), "2"); !errors.As(err, &flood) || flood.RetryAfter != 1 {
		t.Fatalf("second send in the same second: %v, want retry after 1", err)
	}
	for i := range 19 {
		now = now.Add(time.Second)
		if _, err := b.Send(telebot.ChatID(group), "n"); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	now = now.Add(time.Second) // 21st in the minute
	if _, err := b.Send(telebot.ChatID(group), "late"); !errors.As(err, &flood) || flood.RetryAfter != 40 {
		t.Errorf("21st send in a minute: %v, want retry after 40", err)
	}
}

func TestPhotoAndCommands(t *testing.T) {
	srv := telegramtest.New(t, token)
	b := mustBot(t, srv)
	path := filepath.Join(t.TempDir(), "chart.png")
	if err := os.WriteFile(path, []byte("\x89PNG fake"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := &telebot.Photo{File: telebot.FromDisk(path), Caption: "<b>alpha</b>: chart"}
	if _, err := b.Send(telebot.ChatID(group), p, &telebot.SendOptions{ParseMode: telebot.ModeHTML}); err != nil {
		t.Fatalf("sendPhoto: %v", err)
	}
	m := srv.BotMessages(group)[0]
	if !m.Photo || m.PhotoBytes != 9 || m.Plain != "alpha: chart" {
		t.Errorf("photo message = %+v", m)
	}
	if err := b.SetCommands([]telebot.Command{{Text: "desks", Description: "Every desk"}}); err != nil {
		t.Fatal(err)
	}
	if got := srv.Commands(); len(got) != 1 || got[0].Command != "desks" {
		t.Errorf("commands = %+v", got)
	}
}

func TestHangUntilReleaseAndPollConflict(t *testing.T) {
	srv := telegramtest.New(t, token)
	b := mustBot(t, srv)
	srv.Hang("sendMessage", 0)
	done := make(chan error, 2)
	go func() { _, err := b.Send(telebot.ChatID(group), "held"); done <- err }()
	srv.WaitFor(t, 5*time.Second, func(s *telegramtest.Server) bool { return s.Count("sendMessage") == 1 })
	// A second send arriving is the later event: the first is still held.
	go func() { _, err := b.Send(telebot.ChatID(group), "held too"); done <- err }()
	srv.WaitFor(t, 5*time.Second, func(s *telegramtest.Server) bool { return s.Count("sendMessage") == 2 })
	select {
	case err := <-done:
		t.Fatalf("hung send returned early: %v", err)
	default:
	}
	srv.Release()
	for range 2 {
		if err := <-done; err != nil {
			t.Fatalf("released send: %v", err)
		}
	}

	// A second poller ends the first with 409, like Telegram.
	first := make(chan int, 1)
	go func() {
		resp, err := http.Post(srv.URL+"/bot"+token+"/getUpdates", "application/json", strings.NewReader(`{"timeout":"5"}`))
		if err != nil {
			first <- -1
			return
		}
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	deadline := time.After(4 * time.Second)
	for {
		poll(t, srv, 0, 0) // until the first poll, once it is held, is ended by one
		select {
		case got := <-first:
			if got != http.StatusConflict {
				t.Errorf("first poller got %d, want 409", got)
			}
			return
		case <-deadline:
			t.Fatal("first poller was not ended by the second")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// A photo uploaded from a reader arrives with its bytes recorded, on the
// message and on the call.
func TestPhotoFromReaderKeepsItsBytes(t *testing.T) {
	srv := telegramtest.New(t, token)
	b := mustBot(t, srv)
	p := &telebot.Photo{File: telebot.FromReader(strings.NewReader("\x89PNG from a reader")), Caption: "c"}
	if _, err := b.Send(telebot.ChatID(group), p); err != nil {
		t.Fatalf("sendPhoto: %v", err)
	}
	if got, want := string(srv.BotMessages(group)[0].PhotoData), "\x89PNG from a reader"; got != want {
		t.Errorf("message photo bytes %q, want %q", got, want)
	}
	if got := srv.Calls("sendPhoto"); len(got) != 1 || string(got[0].Upload) != "\x89PNG from a reader" {
		t.Errorf("sendPhoto calls = %+v", got)
	}
}

// Forwarded messages and messages via a bot reach the client with the
// fields Telegram sends, in today's shape and the older one.
func TestInjectForwarded(t *testing.T) {
	srv := telegramtest.New(t, token)
	someone := telegramtest.User{ID: 55, FirstName: "Someone"}
	tests := []struct {
		name string
		fwd  telegramtest.Forward
		ok   func(m *telebot.Message) bool
	}{
		{"user", telegramtest.Forward{From: &someone}, func(m *telebot.Message) bool {
			return m.Origin != nil && m.Origin.Type == "user" && m.Origin.Sender.ID == 55 && m.OriginalSender == nil
		}},
		{"hidden user", telegramtest.Forward{HiddenName: "Anon"}, func(m *telebot.Message) bool {
			return m.Origin != nil && m.Origin.Type == "hidden_user" && m.Origin.SenderUsername == "Anon"
		}},
		{"channel", telegramtest.Forward{ChatID: -1009000000001}, func(m *telebot.Message) bool {
			return m.Origin != nil && m.Origin.Type == "channel" && m.Origin.Chat.ID == -1009000000001
		}},
		{"legacy user", telegramtest.Forward{From: &someone, Legacy: true}, func(m *telebot.Message) bool {
			return m.Origin == nil && m.OriginalSender != nil && m.OriginalSender.ID == 55 && m.OriginalUnixtime != 0
		}},
		{"legacy hidden", telegramtest.Forward{HiddenName: "Anon", Legacy: true}, func(m *telebot.Message) bool {
			return m.Origin == nil && m.OriginalSenderName == "Anon" && !m.IsForwarded()
		}},
		{"via bot", telegramtest.Forward{ViaBot: &telegramtest.User{ID: 66, Username: "gif"}}, func(m *telebot.Message) bool {
			return m.Via != nil && m.Via.ID == 66 && m.Origin == nil
		}},
	}
	for _, tt := range tests {
		srv.InjectForwarded(someone, group, "/pause all", 0, tt.fwd)
	}
	got := rawUpdates(t, srv)
	if len(got) != len(tests) {
		t.Fatalf("%d updates, want %d", len(got), len(tests))
	}
	for i, tt := range tests {
		if m := got[i].Message; m == nil || m.Text != "/pause all" || !tt.ok(m) {
			t.Errorf("%s: message %+v", tt.name, m)
		}
	}
}

// rawUpdates reads the queued updates as telebot decodes them.
func rawUpdates(t *testing.T, srv *telegramtest.Server) []telebot.Update {
	t.Helper()
	resp, err := http.Post(srv.URL+"/bot"+token+"/getUpdates", "application/json", strings.NewReader(`{"timeout":"0"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		OK     bool             `json:"ok"`
		Result []telebot.Update `json:"result"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || !r.OK {
		t.Fatalf("getUpdates: ok=%v err=%v", r.OK, err)
	}
	return r.Result
}
