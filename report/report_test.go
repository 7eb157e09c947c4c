package report_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"image"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/broker/brokertest"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/report"
	"github.com/deskbot/deskbot/store"
	"github.com/deskbot/deskbot/store/storetest"
)

// update rewrites the README's pictures of the report from the fixture:
// go test ./report -run Screenshot -update
var update = flag.Bool("update", false, "rewrite docs/screenshots/report*.png")

// A day of three desks on Thursday 3 December 2026, sampled every five
// minutes from the open, as the risk watcher samples them.
var (
	fixtureDay = time.Date(2026, 12, 3, 0, 0, 0, 0, deskbot.IST)
	openAt     = fixtureDay.Add(9*time.Hour + 15*time.Minute)
	reportAt   = fixtureDay.Add(15*time.Hour + 45*time.Minute)
	desks      = []string{"alpha", "beta", "gamma"}
)

// world is the report's ports on real Redis and the paper broker.
type world struct {
	st    *store.Store
	br    *broker.Paper
	quote *brokertest.Quotes
	clock *deskbottest.Clock
}

func mustWorld(t testing.TB) *world {
	t.Helper()
	st := storetest.MustOpen(t)
	w := &world{st: st, quote: &brokertest.Quotes{}, clock: deskbottest.NewClock(openAt)}
	w.br = broker.NewPaperMarket(st, w.clock.Now, w.quote)
	return w
}

func (w *world) deps() report.Deps {
	return report.Deps{Broker: w.br, Desks: w.st, Risk: w.st, Audit: w.st}
}

func (w *world) mustTrade(t testing.TB, desk, symbol, side string, qty, price float64) {
	t.Helper()
	w.quote.Set(symbol, price)
	if _, err := w.br.PlaceOrder(context.Background(), desk, deskbottest.NewKey(), deskbot.Order{Symbol: symbol, Side: side, Quantity: qty, Price: price}); err != nil {
		t.Fatalf("%s %s: %v", desk, side, err)
	}
}

func (w *world) mustAudit(t testing.TB, e deskbot.AuditEntry) {
	t.Helper()
	if err := w.st.Audit(context.Background(), e); err != nil {
		t.Fatal(err)
	}
}

// mustHeldAndDecided audits a held call of desk at the clock's time and
// its end after wait ("lapse" for none).
func (w *world) mustHeldAndDecided(t testing.TB, desk, id, action string, wait time.Duration) {
	t.Helper()
	at := w.clock.Now()
	w.mustAudit(t, deskbot.AuditEntry{Action: "hold", Desk: desk, Tool: deskbot.ToolPlaceOrder, RequestID: id, By: "system", At: at})
	w.mustAudit(t, deskbot.AuditEntry{Action: action, Desk: desk, Tool: deskbot.ToolPlaceOrder, RequestID: id, By: "Asha (101)", At: at.Add(wait)})
}

// mustFixture plays the fixture's day: each desk trades its symbol as its
// price walks, and its P&L is sampled every five minutes.
func mustFixture(t testing.TB) *world {
	t.Helper()
	w := mustWorld(t)
	ctx := context.Background()
	type leg struct {
		desk, symbol, side string
		qty                float64
	}
	// The trades, by minutes after the open.
	plan := map[int][]leg{
		5:   {{"alpha", "NIFTY26DECFUT", "buy", 50}, {"beta", "RELIANCE", "sell", 400}},
		20:  {{"gamma", "INFY", "buy", 600}},
		95:  {{"alpha", "NIFTY26DECFUT", "sell", 25}},
		150: {{"beta", "RELIANCE", "buy", 200}},
		200: {{"gamma", "INFY", "sell", 600}, {"gamma", "INFY", "buy", 900}},
		240: {{"alpha", "NIFTY26DECFUT", "buy", 25}},
		300: {{"beta", "RELIANCE", "buy", 200}},
		355: {{"alpha", "NIFTY26DECFUT", "sell", 50}},
	}
	price := func(symbol string, m float64) float64 {
		switch symbol {
		case "NIFTY26DECFUT":
			return 24500 + 60*math.Sin(m/40) + 0.35*m
		case "RELIANCE":
			return 1310 - 4*math.Sin(m/25) - 0.05*m
		}
		return 1580 + 10*math.Sin(m/55+1) - 0.09*m
	}
	symbols := map[string]string{"alpha": "NIFTY26DECFUT", "beta": "RELIANCE", "gamma": "INFY"}
	ids := 0
	for m := 0; m <= 375; m += 5 {
		w.clock.Set(openAt.Add(time.Duration(m) * time.Minute))
		for _, s := range symbols {
			w.quote.Set(s, math.Round(price(s, float64(m))*20)/20)
		}
		for _, l := range plan[m] {
			ids++
			w.mustHeldAndDecided(t, l.desk, "req-"+string(rune('a'+ids)), "allow_once", time.Duration(30+17*ids)*time.Second)
			w.mustTrade(t, l.desk, l.symbol, l.side, l.qty, math.Round(price(l.symbol, float64(m))*20)/20)
		}
		for _, d := range desks {
			ts, _ := w.br.Trades(ctx, d, 1000)
			b, _ := w.br.Book(ctx, d)
			realised, open, _, _ := deskbot.DayPnL(ts, b, deskbot.OrderDay(w.clock.Now()), false)
			if _, err := w.st.AddPnLSample(ctx, d, deskbot.PnLSample{At: w.clock.Now(), PnL: realised + open}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// What else the day saw: a denial, a lapse, the models' tokens, and
	// gamma halted by its daily loss.
	w.clock.Set(openAt.Add(3 * time.Hour))
	w.mustHeldAndDecided(t, "beta", "req-deny", "deny", 4*time.Minute)
	w.mustHeldAndDecided(t, "alpha", "req-lapse", "lapse", 5*time.Minute)
	for d, n := range map[string]int64{"alpha": 412_350, "beta": 96_120, "gamma": 1_250_000} {
		if _, err := w.st.CloseTurn(ctx, d, deskbot.TurnEnd{Tokens: n, At: w.clock.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	haltAt := openAt.Add(5*time.Hour + 50*time.Minute)
	if _, err := w.st.HaltDesk(ctx, "gamma", deskbot.Halt{Rule: deskbot.RuleMaxDailyLoss, Figures: "P&L -₹15,120.00 at or below -₹15,000.00", At: haltAt},
		deskbot.AuditEntry{Action: "halt", Desk: "gamma", By: "risk", At: haltAt, Detail: deskbot.RuleMaxDailyLoss}); err != nil {
		t.Fatal(err)
	}
	w.clock.Set(reportAt)
	return w
}

// checkPhoto fails unless pic is a PNG Telegram takes as a photo and a
// phone shows whole: at most 10 MB, width and height together at most
// 10,000 pixels, neither side more than 20 times the other, and at least
// 800 pixels wide so its type reads.
func checkPhoto(t testing.TB, pic []byte) image.Config {
	t.Helper()
	if !bytes.HasPrefix(pic, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("not a PNG: starts %q", pic[:min(8, len(pic))])
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(pic))
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	if _, err := png.Decode(bytes.NewReader(pic)); err != nil {
		t.Fatalf("the PNG does not decode: %v", err)
	}
	w, h := cfg.Width, cfg.Height
	switch {
	case len(pic) > 10<<20:
		t.Errorf("%d bytes; Telegram takes a photo of at most 10 MB", len(pic))
	case w < 800:
		t.Errorf("%d px wide; want at least 800 to read on a phone", w)
	case w+h > 10000:
		t.Errorf("%dx%d; Telegram takes width plus height up to 10,000", w, h)
	case max(w, h) > 20*min(w, h):
		t.Errorf("%dx%d; Telegram takes a ratio of at most 20", w, h)
	}
	return cfg
}

func TestDay(t *testing.T) {
	w := mustFixture(t)
	rep, err := report.Day(t.Context(), w.deps(), report.Scope{Desks: desks}, w.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	checkPhoto(t, rep.PNG)
	if got := len([]rune(rep.Caption)); got > report.MaxCaption {
		t.Errorf("caption has %d characters; Telegram takes %d", got, report.MaxCaption)
	}
	// The figures the fixture's day makes, in the chat's words.
	for _, want := range []string{
		"P&L of Thu 3 Dec 2026, at 15:45 India time",
		"alpha +₹", "4 trades",
		"beta ", "3 trades",
		"gamma ", "HALTED by max_daily_loss",
		"alpha: 5 calls held, 4 allowed, 0 denied, 1 lapsed; median decision ",
		"beta: 4 calls held, 3 allowed, 1 denied, 0 lapsed",
		"4,12,350 tokens", "12,50,000 tokens",
		"gamma: 3 calls held, 3 allowed, 0 denied, 0 lapsed", "1 halt (halted since 15:05: P&L -₹15,120.00 at or below -₹15,000.00)",
		"beta: 4 calls held, 3 allowed, 1 denied, 0 lapsed; median decision ",
	} {
		if !strings.Contains(rep.Caption, want) {
			t.Errorf("caption lacks %q:\n%s", want, rep.Caption)
		}
	}
	// Every desk's P&L comes before anyone's details: a clip cuts details first.
	if i, j := strings.Index(rep.Caption, "gamma "), strings.Index(rep.Caption, "alpha:"); i > j {
		t.Errorf("gamma's P&L comes after alpha's details:\n%s", rep.Caption)
	}
	if *update {
		mustWrite(t, "report.png", rep.PNG)
	}
}

func TestDayOneDesk(t *testing.T) {
	w := mustFixture(t)
	rep, err := report.Day(t.Context(), w.deps(), report.Scope{Desks: desks, Only: "beta"}, w.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	checkPhoto(t, rep.PNG)
	if strings.Contains(rep.Caption, "alpha") || !strings.Contains(rep.Caption, "beta ") {
		t.Errorf("caption of beta's report:\n%s", rep.Caption)
	}
}

func TestUnknownDesk(t *testing.T) {
	w := mustWorld(t)
	_, err := report.Day(t.Context(), w.deps(), report.Scope{Desks: desks, Only: "omega"}, w.clock.Now())
	if got, want := deskbot.ErrorCode(err), deskbot.ENOTFOUND; got != want {
		t.Errorf("code %q (%v), want %q", got, err, want)
	}
}

// A desk with no samples and no trades yet still gets a picture: its
// curve is the one point of now.
func TestDayOfNothing(t *testing.T) {
	w := mustWorld(t)
	rep, err := report.Day(t.Context(), w.deps(), report.Scope{Desks: desks}, openAt.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	checkPhoto(t, rep.PNG)
	if want := "alpha +₹0.00: realised +₹0.00, open +₹0.00, 0 trades"; !strings.Contains(rep.Caption, want) {
		t.Errorf("caption lacks %q:\n%s", want, rep.Caption)
	}
}

func TestWeek(t *testing.T) {
	w := mustWorld(t)
	// Realised P&L on Friday, Monday and Thursday; a trade on Sunday is
	// no trading day's.
	for _, d := range []struct {
		at    time.Time
		desk  string
		price float64
	}{
		{fixtureDay.AddDate(0, 0, -6).Add(11 * time.Hour), "alpha", 110},
		{fixtureDay.AddDate(0, 0, -4).Add(11 * time.Hour), "alpha", 95},
		{fixtureDay.AddDate(0, 0, -3).Add(11 * time.Hour), "beta", 120},
		{fixtureDay.Add(11 * time.Hour), "alpha", 130},
	} {
		w.clock.Set(d.at.Add(-time.Hour))
		w.mustTrade(t, d.desk, "TCS", "buy", 10, 100)
		w.clock.Set(d.at)
		w.mustTrade(t, d.desk, "TCS", "sell", 10, d.price)
	}
	rep, err := report.Week(t.Context(), w.deps(), report.Scope{Desks: desks}, reportAt)
	if err != nil {
		t.Fatal(err)
	}
	checkPhoto(t, rep.PNG)
	for _, want := range []string{
		"Realised P&L of the last five trading days, Fri 27 Nov to Thu 3 Dec",
		"alpha +₹400.00: Fri 27 Nov +₹100.00, Mon 30 Nov +₹0.00, Tue 1 Dec +₹0.00, Wed 2 Dec +₹0.00, Thu 3 Dec +₹300.00",
		"beta +₹200.00: Fri 27 Nov +₹0.00, Mon 30 Nov +₹200.00",
		"gamma +₹0.00",
	} {
		if !strings.Contains(rep.Caption, want) {
			t.Errorf("caption lacks %q:\n%s", want, rep.Caption)
		}
	}
	if *update {
		mustWrite(t, "report-week.png", rep.PNG)
	}
}

func TestDuration(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want string
	}{
		{0, "0s"},
		{45 * time.Second, "45s"},
		{185 * time.Second, "3m05s"},
		{62 * time.Minute, "1h02m"},
	}
	for _, tt := range tests {
		if got := report.Duration(tt.in); got != tt.want {
			t.Errorf("Duration(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func mustWrite(t testing.TB, name string, data []byte) {
	t.Helper()
	path := filepath.Join("..", "docs", "screenshots", name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkDay measures a whole day's report of the fixture's three
// desks: the reads and the drawing.
func BenchmarkDay(b *testing.B) {
	w := mustFixture(b)
	var size int
	for b.Loop() {
		rep, err := report.Day(b.Context(), w.deps(), report.Scope{Desks: desks}, reportAt)
		if err != nil {
			b.Fatal(err)
		}
		size = len(rep.PNG)
	}
	b.ReportMetric(float64(size), "png-bytes")
}

// BenchmarkWeek measures the week's report of three desks.
func BenchmarkWeek(b *testing.B) {
	w := mustFixture(b)
	var size int
	for b.Loop() {
		rep, err := report.Week(b.Context(), w.deps(), report.Scope{Desks: desks}, reportAt)
		if err != nil {
			b.Fatal(err)
		}
		size = len(rep.PNG)
	}
	b.ReportMetric(float64(size), "png-bytes")
}

// Many desks outgrow a caption: the clip keeps every desk's P&L and cuts
// the details of the last ones.
func TestCaptionClipKeepsEveryPnL(t *testing.T) {
	w := mustWorld(t)
	var many []string
	for i := range 12 {
		many = append(many, fmt.Sprintf("desk%02d", i))
	}
	rep, err := report.Day(t.Context(), w.deps(), report.Scope{Desks: many}, reportAt)
	if err != nil {
		t.Fatal(err)
	}
	checkPhoto(t, rep.PNG)
	if got := len([]rune(rep.Caption)); got > report.MaxCaption {
		t.Errorf("caption of %d characters; Telegram takes %d", got, report.MaxCaption)
	}
	for _, d := range many {
		if !strings.Contains(rep.Caption, d+" +₹0.00: realised") {
			t.Errorf("caption lacks %s's P&L:\n%s", d, rep.Caption)
		}
	}
	if !strings.HasSuffix(rep.Caption, "…") || strings.Contains(rep.Caption, "desk11: ") {
		t.Errorf("caption not clipped at the details:\n%s", rep.Caption)
	}
}
