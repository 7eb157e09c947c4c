package bot_test

import (
	"bytes"
	"image/png"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/deskbottest"
)

// mustPnLDay gives alpha a day to report at the harness's 14:00 IST: a
// round trip realising +₹125 (one held call allowed 90 seconds after it
// was held), two P&L samples, and 5,000 tokens.
func (h *e2e) mustPnLDay() {
	h.t.Helper()
	ctx := h.t.Context()
	start := h.clock.Now()
	for i, pnl := range []float64{0, 60} {
		if _, err := h.st.AddPnLSample(ctx, "alpha", deskbot.PnLSample{At: start.Add(-time.Duration(2-i) * time.Hour), PnL: pnl}); err != nil {
			h.t.Fatal(err)
		}
	}
	for _, e := range []deskbot.AuditEntry{
		{Action: "hold", Desk: "alpha", Tool: deskbot.ToolPlaceOrder, RequestID: "r1", By: "system", At: start},
		{Action: "allow_once", Desk: "alpha", Tool: deskbot.ToolPlaceOrder, RequestID: "r1", By: "Asha (101)", At: start.Add(90 * time.Second)},
	} {
		if err := h.st.Audit(ctx, e); err != nil {
			h.t.Fatal(err)
		}
	}
	h.trade("alpha", deskbot.Order{Symbol: "RELIANCE", Side: deskbot.Buy, Quantity: 10, Price: 100})
	h.clock.Add(30 * time.Minute)
	h.trade("alpha", deskbot.Order{Symbol: "RELIANCE", Side: deskbot.Sell, Quantity: 10, Price: 112.5})
	if _, err := h.st.CloseTurn(ctx, "alpha", deskbot.TurnEnd{Tokens: 5000, At: h.clock.Now()}); err != nil {
		h.t.Fatal(err)
	}
}

// checkTelegramPhoto fails unless m is a photo whose upload is a PNG that
// Telegram takes and a phone shows whole: at most 10 MB, at least 800
// pixels wide, width plus height at most 10,000, a ratio of at most 20.
func checkTelegramPhoto(t *testing.T, m telegramtest.Message) {
	t.Helper()
	if !m.Photo {
		t.Fatalf("message %d is not a photo: %q", m.ID, m.Plain)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(m.PhotoData))
	if err != nil {
		t.Fatalf("the photo is not a PNG: %v", err)
	}
	w, h := cfg.Width, cfg.Height
	if len(m.PhotoData) > 10<<20 || w < 800 || w+h > 10000 || max(w, h) > 20*min(w, h) {
		t.Errorf("photo of %d bytes, %dx%d: want ≤ 10 MB, ≥ 800 px wide, w+h ≤ 10,000, ratio ≤ 20", len(m.PhotoData), w, h)
	}
	if n := len([]rune(m.Plain)); n > 1024 {
		t.Errorf("caption of %d characters; Telegram takes 1,024", n)
	}
}

// /pnl is read-only: a member of the group who is no approver gets it.
func TestPnLSendsThePicture(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cmd  string
		want []string
		not  []string
	}{
		{"every desk", "/pnl", []string{
			"P&L of Mon 30 Nov 2026, at 14:30 India time",
			"alpha +\u2060₹125.00: realised +\u2060₹125.00, open +\u2060₹0.00, 2 trades",
			"beta +\u2060₹0.00: realised +\u2060₹0.00, open +\u2060₹0.00, 0 trades",
			"alpha: 1 call held, 1 allowed, 0 denied, 0 lapsed; median decision 1m30s; 5,000 tokens; no halts",
		}, nil},
		{"one desk", "/pnl alpha", []string{"alpha +\u2060₹125.00"}, []string{"beta"}},
		{"the week", "/pnl week", []string{
			"Realised P&L of the last five trading days, Tue 24 Nov to Mon 30 Nov",
			"alpha +\u2060₹125.00: Tue 24 Nov +\u2060₹0.00, Wed 25 Nov +\u2060₹0.00, Thu 26 Nov +\u2060₹0.00, Fri 27 Nov +\u2060₹0.00, Mon 30 Nov +\u2060₹125.00",
			"beta +\u2060₹0.00",
		}, nil},
		{"one desk's week", "/pnl week beta", []string{"beta +\u2060₹0.00: Tue 24 Nov"}, []string{"alpha"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := mustE2E(t)
			h.mustPnLDay()
			h.say(stranger, tt.cmd, 0)
			m := h.waitMessage(func(m telegramtest.Message) bool { return m.Photo })
			checkTelegramPhoto(t, m)
			for _, want := range tt.want {
				if !strings.Contains(m.Plain, want) {
					t.Errorf("caption lacks %q:\n%s", want, m.Plain)
				}
			}
			for _, not := range tt.not {
				if strings.Contains(m.Plain, not) {
					t.Errorf("caption has %q:\n%s", not, m.Plain)
				}
			}
		})
	}
}

// An unknown desk is answered in words; nothing is drawn or sent.
func TestPnLUnknownDesk(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	got := h.replyTo(groupID, h.say(asha, "/pnl omega", 0)).Plain
	if want := "There is no desk named omega. Usage: /pnl [desk], /pnl week [desk]. Desks: alpha, beta."; got != want {
		t.Errorf("/pnl omega answers %q, want %q", got, want)
	}
	if n := h.tg.Count("sendPhoto"); n != 0 {
		t.Errorf("%d photos sent for an unknown desk", n)
	}
}

// The day's report at REPORT_AT goes to the group's General topic once,
// however often the leader's job calls it (a hand-over at that minute).
func TestDayReportIsSentOnce(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	h.mustPnLDay()
	for range 2 {
		if err := h.bot.SendDayReport(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	m := h.waitMessage(func(m telegramtest.Message) bool { return m.Photo })
	checkTelegramPhoto(t, m)
	if m.ThreadID != 0 || !strings.Contains(m.Plain, "alpha +\u2060₹125.00") {
		t.Errorf("report in thread %d reads %q; want General and alpha's P&L", m.ThreadID, m.Plain)
	}
	time.Sleep(200 * time.Millisecond)
	if n := h.tg.Count("sendPhoto"); n != 1 {
		t.Errorf("%d reports sent, want 1", n)
	}
	// The next day's report is that day's.
	h.clock.Add(24 * time.Hour)
	if err := h.bot.SendDayReport(t.Context()); err != nil {
		t.Fatal(err)
	}
	deskbottest.Eventually(t, "the next day's report", func() bool { return h.tg.Count("sendPhoto") == 2 })
}
