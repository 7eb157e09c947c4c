package bot

import (
	"slices"
	"testing"
	"time"

	tele "gopkg.in/telebot.v3"

	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/deskbottest"
)

// While getUpdates fails the poller waits 250ms, doubling up to 30s, and
// starts again from 250ms once Telegram answers; a stop ends it at once.
func TestPollerBacksOff(t *testing.T) {
	t.Parallel()
	tg := telegramtest.New(t, dlToken)
	tg.Fail(telegramtest.Failure{Method: "getUpdates", Code: 502, Times: 9})
	b, err := tele.NewBot(tele.Settings{URL: tg.URL, Token: dlToken, Offline: true})
	if err != nil {
		t.Fatal(err)
	}
	w := &waits{}
	p := &poller{timeout: time.Second, log: quietLog(), scrub: func(s string) string { return s }, sleep: w.Sleep}
	dest, stop, done := make(chan tele.Update, 4), make(chan struct{}), make(chan struct{})
	go func() { defer close(done); p.Poll(b, dest, stop) }()

	user := telegramtest.User{ID: 101, FirstName: "Asha"}
	tg.InjectText(user, dlGroup, "after the outage", 0)
	if u := <-dest; u.Message == nil || u.Message.Text != "after the outage" {
		t.Fatalf("first update %+v", u)
	}
	tg.Fail(telegramtest.Failure{Method: "getUpdates", Code: 502, Times: 1})
	tg.InjectText(user, dlGroup, "after one more failure", 0)
	if u := <-dest; u.Message == nil || u.Message.Text != "after one more failure" {
		t.Fatalf("second update %+v", u)
	}
	// The failure may come before the second update or after it.
	deskbottest.Eventually(t, "ten waits", func() bool { return len(w.list()) >= 10 })
	close(stop)
	<-done

	want := []time.Duration{250 * ms, 500 * ms, sec, 2 * sec, 4 * sec, 8 * sec, 16 * sec, 30 * sec, 30 * sec, 250 * ms}
	if got := w.list(); !slices.Equal(got, want) {
		t.Errorf("waits %v, want %v", got, want)
	}
	if !p.alive.last().IsZero() {
		t.Error("a stopped poller still counts as polling")
	}
}
