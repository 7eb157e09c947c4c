package bot

import (
	"testing"
	"time"

	tele "gopkg.in/telebot.v3"

	"github.com/deskbot/deskbot/bot/telegramtest"
)

// BenchmarkSenderSend measures what the Sender adds to a send (pacing
// bookkeeping, error handling) against its floor: the same telebot call to
// the fake on loopback, made directly. Pacing is set out of the way so only
// the overhead is measured.
func BenchmarkSenderSend(b *testing.B) {
	tg := telegramtest.New(b, dlToken)
	bot, err := tele.NewBot(tele.Settings{URL: tg.URL, Token: dlToken, Offline: true})
	if err != nil {
		b.Fatal(err)
	}
	s := NewSender(bot, SenderOptions{PerChat: time.Nanosecond, Overall: time.Nanosecond, PerGroupPerMinute: 1 << 30, Log: quietLog()})
	opt := &tele.SendOptions{ParseMode: tele.ModeHTML}
	var floor, sender time.Duration
	b.Run("floor-telebot", func(b *testing.B) {
		for b.Loop() {
			if _, err := bot.Send(tele.ChatID(dlGroup), "x", opt); err != nil {
				b.Fatal(err)
			}
		}
		floor = b.Elapsed() / time.Duration(b.N)
	})
	b.Run("sender", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.Send(b.Context(), dlGroup, "x", opt); err != nil {
				b.Fatal(err)
			}
		}
		sender = b.Elapsed() / time.Duration(b.N)
		if floor > 0 {
			b.ReportMetric(float64(sender)/float64(floor), "x-floor")
		}
	})
}
