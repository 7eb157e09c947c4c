package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot/bot"
	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/config"
	"github.com/deskbot/deskbot/config/configtest"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/model/modeltest"
	"github.com/deskbot/deskbot/ops"
	"github.com/deskbot/deskbot/store/storetest"
)

const (
	testToken = configtest.Token
	groupID   = configtest.GroupID
)

var (
	asha     = telegramtest.User{ID: 101, FirstName: "Asha"}
	ravi     = telegramtest.User{ID: 102, FirstName: "Ravi"}
	stranger = telegramtest.User{ID: 999, FirstName: "Mallory"}
)

// service is the whole deskbot running in-process against the fake Bot API,
// the fake model and the real Redis.
type service struct {
	main    *Main
	tg      *telegramtest.Server
	model   *modeltest.Server
	logs    *strings.Builder
	environ map[string]string // what it was started with
}

func mustStart(t *testing.T, extra map[string]string) *service {
	t.Helper()
	storetest.MustOpen(t) // skips (or fails in CI) without Redis
	return mustStartOn(t, telegramtest.New(t, testToken), modeltest.New(t), extra)
}

// mustStartOn starts a service on the given fakes: a second instance
// beside a first one shares them (and REDIS_PREFIX, from extra).
func mustStartOn(t *testing.T, tg *telegramtest.Server, model *modeltest.Server, extra map[string]string) *service {
	t.Helper()
	return mustStartClock(t, tg, model, extra, time.Now)
}

// mustStartClock starts a service whose clock is now.
func mustStartClock(t *testing.T, tg *telegramtest.Server, model *modeltest.Server, extra map[string]string, now func() time.Time) *service {
	t.Helper()
	s := &service{tg: tg, model: model, logs: &strings.Builder{}}
	dataDir := deskbottest.DataDir(t)
	environ := map[string]string{
		"TELEGRAM_TOKEN":     testToken,
		"TELEGRAM_API_URL":   s.tg.URL,
		"TELEGRAM_CHAT_ID":   fmt.Sprint(groupID),
		"TELEGRAM_APPROVERS": "101,102",
		"REDIS_PREFIX":       storetest.RandomPrefix(),
		"DATA_DIR":           dataDir,
		"MODEL_BASE_URL":     s.model.URL + "/v1",
		"MODEL_NAME":         "fake",
		"MODEL_TIMEOUT":      "5s",
		"HTTP_ADDR":          "127.0.0.1:0",
		"LOG_LEVEL":          "debug",
	}
	for k, v := range storetest.Env() { // REDIS_URL, or a Cluster's nodes
		environ[k] = v
	}
	for k, v := range extra {
		environ[k] = v
	}
	s.environ = environ
	cfg, err := config.Load(environ)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	// The test's logger scrubs nothing, so that a leak shows at its
	// source; the Redactor still learns what the service's would scrub.
	s.main = &Main{Config: cfg, Log: slog.New(slog.NewTextHandler(io.MultiWriter(s.logs, testWriter{t}), &slog.HandlerOptions{Level: slog.LevelDebug})),
		Redactor: ops.NewRedactor(cfg.Secrets()...), Now: now, StopTimeout: 10 * time.Second, Sender: fastSender}
	if err := s.main.Run(t.Context()); err != nil {
		s.main.Close()
		t.Fatalf("run: %v", err)
	}
	t.Cleanup(func() {
		if err := s.main.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		if strings.Contains(s.logs.String(), testToken) {
			t.Errorf("the bot token reached the logs")
		}
	})
	return s
}

// fastSender keeps the sender's rules (lanes, the group's reserve, retries)
// with gaps short enough that a whole-service test does not wait out
// Telegram's pace: one message a second per chat would make a test that
// sends twenty wait twenty seconds. The pacing itself is checked in bot
// (the sender's tests, on a fake clock) and in the drills (e2e/, against
// the fake Bot API's flood limits at Telegram's real pace).
var fastSender = bot.SenderOptions{PerChat: time.Millisecond, PerGroupPerMinute: 1 << 20, Overall: time.Microsecond,
	MinBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	if os.Getenv("DESKBOT_TEST_LOGS") == "1" {
		w.t.Log(strings.TrimSpace(string(p)))
	}
	return len(p), nil
}

// mustBotMessage waits for a message from the bot in the group that matches.
func (s *service) mustBotMessage(t *testing.T, what string, match func(telegramtest.Message) bool) telegramtest.Message {
	t.Helper()
	defer func() { // runs on the helper's t.Fatal too
		if t.Failed() {
			for _, m := range s.tg.ChatMessages(groupID) {
				t.Logf("chat: #%d %q %v", m.ID, m.Plain, m.Labels())
			}
		}
	}()
	var found telegramtest.Message
	deskbottest.EventuallyWithin(t, 15*time.Second, "bot message: "+what, func() bool {
		for _, m := range s.tg.BotMessages(groupID) {
			if match(m) {
				found = m
				return true
			}
		}
		return false
	})
	return found
}

func button(t *testing.T, m telegramtest.Message, label string) string {
	t.Helper()
	for _, row := range m.Keyboard {
		for _, b := range row {
			if b.Text == label {
				return b.Data
			}
		}
	}
	t.Fatalf("message %d has no %q button (has %v)", m.ID, label, m.Labels())
	return ""
}

// TestHeldCallEndToEnd walks the product's main path: a person tells a
// desk to act, its model calls a guarded tool, the call is held and shown
// with three buttons, a stranger's tap changes nothing, an approver allows
// it, it runs once, the message shows the outcome and the desk continues
// with the result.
func TestHeldCallEndToEnd(t *testing.T) {
	t.Parallel()
	s := mustStart(t, nil)
	s.model.SetHandler(func(r modeltest.Request) modeltest.Reply {
		last := r.Last()
		switch {
		case last.Role == "tool" && strings.Contains(last.Text, "needs the user's permission"):
			return modeltest.Text("Asked the team to allow flatten_desk.")
		case strings.Contains(last.Text, "The user allowed flatten_desk"):
			return modeltest.Text("Desk is flat now.")
		case strings.Contains(last.Text, "flatten everything"):
			return modeltest.Calls(modeltest.ToolCall{Name: "flatten_desk", Arguments: `{}`})
		}
		return modeltest.Text("ok")
	})

	s.tg.InjectText(asha, groupID, "/tell main flatten everything", 0)

	held := s.mustBotMessage(t, "held call with buttons", func(m telegramtest.Message) bool {
		return len(m.Keyboard) > 0 && strings.Contains(m.Plain, "flatten_desk")
	})
	if got, want := held.Labels(), []string{"Allow once", "Always allow", "Deny", "Why?"}; !slices.Equal(got, want) {
		t.Fatalf("buttons = %v, want %v", got, want)
	}
	if !strings.Contains(held.Plain, "IST") {
		t.Errorf("held call message has no India time: %q", held.Plain)
	}
	// The call in trading words, from the desk's book.
	if !strings.Contains(held.Plain, "Would close nothing: the desk has no open positions.\nDesk P&L: realised +\u2060₹0.00, open +\u2060₹0.00") {
		t.Errorf("held flatten_desk does not say what it would close: %q", held.Plain)
	}

	// A stranger in the group taps Allow: an alert, and nothing changes.
	q := s.tg.InjectCallback(stranger, groupID, held.ID, button(t, held, "Allow once"))
	s.tg.WaitFor(t, 10*time.Second, func(srv *telegramtest.Server) bool { _, _, ok := srv.CallbackAnswer(q); return ok })
	if text, alert, _ := s.tg.CallbackAnswer(q); !alert || !strings.Contains(strings.ToLower(text), "approver") {
		t.Errorf("stranger's tap answered %q (alert %v)", text, alert)
	}
	if m, _ := s.tg.Message(groupID, held.ID); len(m.Keyboard) == 0 {
		t.Fatal("a stranger's tap removed the buttons")
	}

	// Two approvers tap at once: one decision, one run.
	q1 := s.tg.InjectCallback(asha, groupID, held.ID, button(t, held, "Allow once"))
	q2 := s.tg.InjectCallback(ravi, groupID, held.ID, button(t, held, "Allow once"))
	s.mustBotMessage(t, "the held call's outcome", func(m telegramtest.Message) bool {
		return m.ID == held.ID && len(m.Keyboard) == 0 && strings.Contains(m.Plain, "Ran:")
	})
	s.tg.WaitFor(t, 10*time.Second, func(srv *telegramtest.Server) bool {
		_, _, ok1 := srv.CallbackAnswer(q1)
		_, _, ok2 := srv.CallbackAnswer(q2)
		return ok1 && ok2
	})
	a1, _, _ := s.tg.CallbackAnswer(q1)
	a2, _, _ := s.tg.CallbackAnswer(q2)
	if n := strings.Count(a1+"\n"+a2, "Already allowed by"); n != 1 {
		t.Errorf("callback answers %q and %q: want exactly one 'Already allowed by'", a1, a2)
	}
	s.mustBotMessage(t, "the desk's words after the allow", func(m telegramtest.Message) bool {
		return strings.Contains(m.Plain, "Desk is flat now.")
	})
	// The words the desk closed the held turn with came before these, and
	// were not posted: the request said it.
	for _, m := range s.tg.BotMessages(groupID) {
		if strings.Contains(m.Plain, "Asked the team to allow flatten_desk.") {
			t.Errorf("the words closing a held turn were posted: %q", m.Plain)
		}
	}

	trail, err := s.main.Store.AuditTrail(t.Context(), 50)
	if err != nil {
		t.Fatal(err)
	}
	var ran int
	for _, e := range trail {
		if e.Action == "ran" || e.Action == "failed" {
			ran++
		}
	}
	if ran != 1 {
		t.Errorf("the held call ran %d times, want 1 (audit %+v)", ran, trail)
	}
}

func TestGCDefault(t *testing.T) {
	t.Parallel()
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	tests := []struct {
		name    string
		environ map[string]string
		want    int
	}{
		{"GOGC unset", map[string]string{}, defaultGOGC},
		{"GOGC set", map[string]string{"GOGC": "100"}, 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			debug.SetGCPercent(100)
			gcDefault(tt.environ)
			if got := debug.SetGCPercent(100); got != tt.want {
				t.Errorf("GC percent = %d; want %d", got, tt.want)
			}
		})
	}
}
