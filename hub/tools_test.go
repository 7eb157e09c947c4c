package hub_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/deskfs"
	"github.com/deskbot/deskbot/hub"
)

// toolWorld is a hub over the fake market with the desks' tools and a
// desk's folder.
type toolWorld struct {
	h     *hub.Hub
	m     *market
	data  string
	tools map[string]deskbot.Tool
	now   time.Time
}

func newToolWorld(t *testing.T) *toolWorld {
	t.Helper()
	w := &toolWorld{m: newMarket(every, 10), data: t.TempDir(), now: time.Date(2026, 12, 4, 14, 2, 0, 0, deskbot.IST)}
	w.m.now = func() time.Time { return w.now }
	w.h = start(t, w.m, hub.Config{DataDir: w.data, Now: func() time.Time { return w.now }})
	w.tools = map[string]deskbot.Tool{}
	for _, tl := range w.h.Tools(w.data) {
		w.tools[tl.Name()] = tl
	}
	if err := os.MkdirAll(deskfs.Dir(w.data, "main"), 0o700); err != nil {
		t.Fatal(err)
	}
	return w
}

// call runs tool for desk main as the registry would: arguments checked,
// then run.
func (w *toolWorld) call(t *testing.T, tool, args string) (text string, isErr bool) {
	t.Helper()
	tl := w.tools[tool]
	if err := tl.CheckArguments(json.RawMessage(args)); err != nil {
		return deskbot.ErrorMessage(err), true
	}
	r, err := tl.Run(context.Background(), "main", json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s %s: system error %v", tool, args, err)
	}
	return r.Text, r.IsError
}

func TestGetQuoteReadsTheMarket(t *testing.T) {
	w := newToolWorld(t)
	got, isErr := w.call(t, deskbot.ToolGetQuote, `{"symbols":["NSE:S0001","S0002"]}`)
	if isErr {
		t.Fatal(got)
	}
	for _, want := range []string{"Quotes at 14:02 India time:", "S0001: last 101.00, traded 14:01 India time (3 s ago); change +1.00 (+1.00%) from the previous close 100.00; open 99.00, high 102.00, low 98.00; volume 1,000\n  bids: 100.95 × 10\n  offers: 101.05 × 12\nS0002: last 102.00"} {
		if !strings.Contains(got, want) {
			t.Errorf("answer lacks %q:\n%s", want, got)
		}
	}
}

func TestMarketToolsRefuseBadInput(t *testing.T) {
	w := newToolWorld(t)
	many := make([]string, 51)
	for i := range many {
		many[i] = `"` + sym(i%10) + `"`
	}
	for _, c := range []struct{ tool, args, want string }{
		{deskbot.ToolGetQuote, `{"symbols":[` + strings.Join(many, ",") + `]}`, "at most 50 symbols and was given 51"},
		{deskbot.ToolGetQuote, `{"symbols":["infy"]}`, "is not a symbol"},
		{deskbot.ToolGetQuote, `{"symbols":["NOPE"]}`, "NOPE is not an instrument the market lists"},
		{deskbot.ToolGetQuote, `{"symbols":["S0001"],"symbols":["S0002"]}`, "given twice"},
		{deskbot.ToolGetQuote, `{"symbol":"S0001"}`, `get_quote has no argument "symbol"; it takes symbols`},
		{deskbot.ToolGetCandles, `{"symbol":"S0001","interval":"2minute","last":5}`, "one of minute, 3minute"},
		{deskbot.ToolGetCandles, `{"symbol":"S0001","interval":"minute","from":"2016-12-01"}`, "minute candles can be read at most 60 days at a time"},
		{deskbot.ToolGetCandles, `{"symbol":"S0001","interval":"minute"}`, "either last"},
		{deskbot.ToolGetCandles, `{"symbol":"S0001","interval":"day","from":"1/12/2026"}`, "YYYY-MM-DD"},
		{deskbot.ToolGetCandles, `{"symbol":"S0001","interval":"day","last":40,"file":"../../x.csv"}`, "must be a path inside your folder"},
		{deskbot.ToolGetCandles, `{"symbol":"S0001","interval":"day","last":40,"file":"/etc/x.csv"}`, "must be a path inside your folder"},
		{deskbot.ToolSearchInstruments, `{}`, "needs query"},
		{deskbot.ToolGetOptionChain, `{"underlying":"NIFTY","strikes":99}`, "from 1 to 25"},
		{deskbot.ToolGetFunds, `{"segment":"equity"}`, "takes no arguments"},
	} {
		got, isErr := w.call(t, c.tool, c.args)
		if !isErr || !strings.Contains(got, c.want) {
			t.Errorf("%s %s: %q (error %v), want %q", c.tool, c.args, got, isErr, c.want)
		}
	}
	if n, _, k := w.m.stats(); n != 0 || k != 0 {
		t.Errorf("refused calls cost %d quote and %d candle requests", n, k)
	}
}

// A long series is written as CSV into the desk's folder, with its path
// and a summary; a short one is shown.
func TestGetCandlesWritesCSVInTheFolder(t *testing.T) {
	w := newToolWorld(t)
	got, isErr := w.call(t, deskbot.ToolGetCandles, `{"symbol":"S0001","interval":"minute","from":"2026-12-01 09:15","to":"2026-12-01 15:29"}`)
	if isErr {
		t.Fatal(got)
	}
	rel := "market/S0001_minute_20261201_20261201.csv"
	want := "Wrote 375 S0001 minute candles (2026-12-01 09:15 to 2026-12-01 15:29 India time) to " + rel + " in your folder; columns time,open,high,low,close,volume"
	if !strings.HasPrefix(got, want) {
		t.Fatalf("got %q\nwant prefix %q", got, want)
	}
	b, err := os.ReadFile(filepath.Join(deskfs.Dir(w.data, "main"), rel))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 376 || lines[1] != "2026-12-01 09:15,100,101,99,100.5,10" {
		t.Errorf("file has %d lines, first row %q", len(lines), lines[1])
	}
	got, isErr = w.call(t, deskbot.ToolGetCandles, `{"symbol":"S0001","interval":"minute","last":3}`)
	if isErr || !strings.HasPrefix(got, "3 S0001 minute candles, 2026-12-04 14:00 to 2026-12-04 14:02 India time") || !strings.HasSuffix(got, "\n2026-12-04 14:02,100,101,99,100.5,10") {
		t.Errorf("last 3: %q", got)
	}
}

// A desk that plants a symlink to a folder outside its own gets a
// refusal, and nothing is written outside.
func TestGetCandlesRefusesAPathOutOfTheFolder(t *testing.T) {
	w := newToolWorld(t)
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(deskfs.Dir(w.data, "main"), "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "f.csv"), filepath.Join(deskfs.Dir(w.data, "main"), "link.csv")); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{"out/x.csv", "link.csv"} {
		got, isErr := w.call(t, deskbot.ToolGetCandles, `{"symbol":"S0001","interval":"minute","last":100,"file":"`+file+`"}`)
		if !isErr || !strings.Contains(got, "cannot be written") {
			t.Errorf("%s: %q", file, got)
		}
	}
	if es, _ := os.ReadDir(outside); len(es) != 0 {
		t.Errorf("written outside the folder: %v", es)
	}
}

func TestGetFunds(t *testing.T) {
	w := newToolWorld(t)
	got, isErr := w.call(t, deskbot.ToolGetFunds, `{}`)
	want := "The account's funds at 14:02 India time (shared by every desk):\nequity: available ₹5,00,000.00, used ₹1,20,000.00"
	if isErr || got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
