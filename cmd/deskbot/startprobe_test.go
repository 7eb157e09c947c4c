package main

import (
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot/agent"
	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/config"
	"github.com/deskbot/deskbot/config/configtest"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/model"
	"github.com/deskbot/deskbot/model/modeltest"
	"github.com/deskbot/deskbot/store/storetest"
)

// The start says what check would: a bot that is not in TELEGRAM_CHAT_ID
// and a model endpoint that does not answer are each logged with their
// fix, in check's words; it used to log "deskbot started" and nothing else.
func TestStartWarnsInCheckWords(t *testing.T) {
	t.Parallel()
	storetest.MustOpen(t)
	tg := telegramtest.New(t, testToken)
	tg.SetMemberStatus(telegramtest.BotUser.ID, "left")
	dead := deskbottest.FreeAddr(t) // nothing listens there
	s := mustStartOn(t, tg, modeltest.New(t), map[string]string{"MODEL_BASE_URL": "http://" + dead + "/v1"})
	logs := s.logs.String() // Run returned: the start's probes are done
	for _, want := range []string{
		fmt.Sprintf(`msg="telegram chat: the bot is not a member of chat %d (left): add it to the group"`, groupID),
		`msg="model openai:fake: no answer from ` + dead + ` (is the model server running?)"`,
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("the start did not log %s; it logged:\n%s", want, logs)
		}
	}
}

// A start whose model answers and whose bot is in the chat warns of
// neither.
func TestStartWithEverythingUpWarnsOfNeither(t *testing.T) {
	t.Parallel()
	s := mustStart(t, nil)
	for _, no := range []string{"telegram chat:", "model openai:fake:"} {
		if strings.Contains(s.logs.String(), no) {
			t.Errorf("a healthy start logged %q:\n%s", no, s.logs.String())
		}
	}
}

// A token Telegram refuses stops the start in check's words, with the fix,
// not the client library's "Not Found (404)".
func TestBadTokenStopsTheStartInCheckWords(t *testing.T) {
	t.Parallel()
	storetest.MustOpen(t)
	tg := telegramtest.New(t, testToken)
	environ := map[string]string{
		"TELEGRAM_TOKEN": "123456:not-the-bots-token", "TELEGRAM_API_URL": tg.URL,
		"TELEGRAM_CHAT_ID": fmt.Sprint(groupID), "TELEGRAM_APPROVERS": "101",
		"REDIS_PREFIX": storetest.RandomPrefix(), "DATA_DIR": deskbottest.DataDir(t), "HTTP_ADDR": "127.0.0.1:0",
	}
	for k, v := range storetest.Env() {
		environ[k] = v
	}
	cfg, err := config.Load(environ)
	if err != nil {
		t.Fatal(err)
	}
	m := &Main{Config: cfg, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: time.Now}
	err = m.Run(t.Context())
	m.Close()
	if want := "telegram: TELEGRAM_TOKEN refused (401 Unauthorized): copy it again from @BotFather"; err == nil || err.Error() != want {
		t.Errorf("the start with a refused token = %v, want %q", err, want)
	}
}

// A desk no model answers tells the group at the start, once, and says so
// to whoever /tells it, rather than a thumbs-up and a wait of hours.
func TestADeskWithoutAModelSaysSo(t *testing.T) {
	t.Parallel()
	storetest.MustOpen(t)
	tg, model := telegramtest.New(t, testToken), modeltest.New(t)
	dead := deskbottest.FreeAddr(t)
	s := mustStartOn(t, tg, model, map[string]string{"MODEL_BASE_URL": "http://" + dead + "/v1"})
	notice := s.mustBotMessage(t, "the desk's outage", func(m telegramtest.Message) bool {
		return strings.Contains(m.Plain, "Desk main cannot reach any of its models")
	})
	if want := "openai:fake: no answer from " + dead + " (is the model server running?)"; !strings.Contains(notice.Plain, want) {
		t.Errorf("the outage notice %q does not say why (%q)", notice.Plain, want)
	}

	id := tg.InjectText(asha, groupID, "/tell main buy 10 INFY", 0)
	reply := s.mustBotMessage(t, "the answer to /tell", func(m telegramtest.Message) bool { return m.ReplyTo == id })
	if !strings.HasPrefix(reply.Plain, "Queued for main. ⚠️ None of its models answers since ") || !strings.HasSuffix(reply.Plain, ": its messages wait in its queue until one does.") {
		t.Errorf("/tell to a desk without a model answered %q", reply.Plain)
	}
}

// A TELEGRAM_CHAT_ID the bot cannot read (a wrong id: Telegram answers
// "chat not found") is logged at the start with check's fix.
func TestStartWarnsOfAChatTheBotCannotRead(t *testing.T) {
	t.Parallel()
	env := configtest.GoodEnv(t)
	tg := httptest.NewServer(&configtest.FakeBotAPI{Token: testToken}) // no member status: "chat not found"
	t.Cleanup(tg.Close)
	env["TELEGRAM_API_URL"] = tg.URL
	cfg, err := config.Load(env)
	if err != nil {
		t.Fatal(err)
	}
	desks, err := agent.LoadDesks(cfg.Desks, cfg.DesksFile, []model.Config{cfg.DefaultModel()})
	if err != nil {
		t.Fatal(err)
	}
	var logs strings.Builder
	m := &Main{Config: cfg, Log: slog.New(slog.NewTextHandler(&logs, nil)), Now: time.Now}
	m.probeAtStart(t.Context(), desks)
	want := fmt.Sprintf(`level=WARN msg="telegram chat: chat %d: Bad Request: chat not found (is TELEGRAM_CHAT_ID right? ask /whoami in the group)"`, groupID)
	if !strings.Contains(logs.String(), want) {
		t.Errorf("the start did not log %s; it logged:\n%s", want, &logs)
	}
	if strings.Contains(logs.String(), "model ") {
		t.Errorf("a model that answers was warned of:\n%s", &logs)
	}
}
