package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/config/configtest"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/deskfs"
	"github.com/deskbot/deskbot/model/modeltest"
	"github.com/deskbot/deskbot/store/storetest"
	"github.com/deskbot/deskbot/words"
)

// scriptedDesk makes the fake model call the given tools in turn when
// told "market please", keeping each tool result it is shown.
type scriptedDesk struct {
	mu      sync.Mutex
	results []modeltest.Message
}

func (d *scriptedDesk) handler(calls []modeltest.ToolCall) func(modeltest.Request) modeltest.Reply {
	return func(r modeltest.Request) modeltest.Reply {
		res := r.ToolResults()
		d.mu.Lock()
		d.results = res
		d.mu.Unlock()
		started := false
		for _, m := range r.Messages() {
			started = started || m.Role == "user" && strings.Contains(m.Text, "market please")
		}
		if !started {
			return modeltest.Text("ok")
		}
		if len(res) < len(calls) {
			c := calls[len(res)]
			c.ID = fmt.Sprintf("call%d", len(res))
			return modeltest.Calls(c)
		}
		return modeltest.Text("read the market")
	}
}

func (d *scriptedDesk) mustResults(t *testing.T, n int) []modeltest.Message {
	t.Helper()
	deskbottest.Eventually(t, "the desk's tool results", func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return len(d.results) >= n
	})
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.results
}

// A desk asks each market tool through its model and reads the paper
// market's figures, in India time; a long series lands as CSV in its
// folder.
func TestDeskReadsTheMarket(t *testing.T) {
	t.Parallel()
	storetest.MustOpen(t)
	clock := newFakeClock(time.Date(2026, 12, 4, 11, 0, 0, 0, deskbot.IST))
	s := mustStartClock(t, telegramtest.New(t, testToken), modeltest.New(t), nil, clock.Now)
	desk := &scriptedDesk{}
	s.model.SetHandler(desk.handler([]modeltest.ToolCall{
		{Name: deskbot.ToolGetQuote, Arguments: `{"symbols":["INFY","RELIANCE"]}`},
		{Name: deskbot.ToolGetCandles, Arguments: `{"symbol":"INFY","interval":"day","last":5}`},
		{Name: deskbot.ToolGetCandles, Arguments: `{"symbol":"INFY","interval":"minute","from":"2026-12-03 09:15","to":"2026-12-03 15:29"}`},
		{Name: deskbot.ToolSearchInstruments, Arguments: `{"query":"INFY"}`},
		{Name: deskbot.ToolGetOptionChain, Arguments: `{"underlying":"NIFTY","strikes":2}`},
		{Name: deskbot.ToolGetFunds, Arguments: `{}`},
	}))
	s.tg.InjectText(asha, groupID, "/tell main market please", 0)
	res := desk.mustResults(t, 6)
	for i, r := range res {
		t.Logf("tool result %d:\n%s", i, r.Text)
		if r.IsError || strings.Contains(r.Text, "not run") {
			t.Errorf("tool result %d is an error: %q", i, r.Text)
		}
	}

	ctx := t.Context()
	qs, err := s.main.Broker.Quotes(ctx, []string{"INFY", "RELIANCE"})
	if err != nil {
		t.Fatal(err)
	}
	for _, sym := range []string{"INFY", "RELIANCE"} {
		q := qs[sym]
		want := fmt.Sprintf("%s: last %s, traded %s India time", sym, words.GroupedPrice(q.Last.Value), words.Time(q.Last.At))
		if !strings.Contains(res[0].Text, want) {
			t.Errorf("get_quote answered\n%s\nwant a line with %q", res[0].Text, want)
		}
	}
	if !strings.HasPrefix(res[0].Text, "Quotes at 11:0") {
		t.Errorf("get_quote does not say when in India time: %q", res[0].Text)
	}

	days, err := s.main.Broker.Candles(ctx, deskbot.CandleQuery{Symbol: "INFY", Interval: deskbot.IntervalDay,
		From: time.Date(2026, 11, 20, 0, 0, 0, 0, deskbot.IST), To: clock.Now()})
	if err != nil {
		t.Fatal(err)
	}
	last := days[len(days)-1]
	if row := fmt.Sprintf("%s,%v,%v,%v,%v,%d", last.At.In(deskbot.IST).Format("2006-01-02"), last.Open, last.High, last.Low, last.Close, last.Volume); !strings.Contains(res[1].Text, row) || !strings.HasPrefix(res[1].Text, "5 INFY day candles") {
		t.Errorf("get_candles answered\n%s\nwant 5 day candles ending with %q", res[1].Text, row)
	}

	rel := "market/INFY_minute_20261203_20261203.csv"
	if !strings.HasPrefix(res[2].Text, "Wrote 375 INFY minute candles (2026-12-03 09:15 to 2026-12-03 15:29 India time) to "+rel) {
		t.Errorf("long get_candles answered %q", res[2].Text)
	}
	csv, err := os.ReadFile(filepath.Join(deskfs.Dir(s.main.Config.DataDir, "main"), rel))
	if err != nil || strings.Count(string(csv), "\n") != 376 {
		t.Errorf("the CSV in the desk's folder: %d lines, %v", strings.Count(string(csv), "\n"), err)
	}

	if !strings.Contains(res[3].Text, "INFY EQ") {
		t.Errorf("search_instruments answered %q", res[3].Text)
	}
	chain, err := s.main.Broker.OptionChain(ctx, "NIFTY", "", 2)
	if err != nil {
		t.Fatal(err)
	}
	if want := chain.Underlying + " options expiring " + chain.Expiry; !strings.HasPrefix(res[4].Text, want) || strings.Count(res[4].Text, "\n") != 1+len(chain.Strikes) {
		t.Errorf("get_option_chain answered\n%s\nwant %s with %d strikes", res[4].Text, want, len(chain.Strikes))
	}
	if !strings.Contains(res[5].Text, "equity: available ₹") {
		t.Errorf("get_funds answered %q", res[5].Text)
	}
}

// A hostile desk asking 10,000 symbols, ten years of minute candles or a
// file outside its folder is refused, and another desk asking at the same
// time is served as usual.
func TestHostileDeskMarketRefused(t *testing.T) {
	t.Parallel()
	s := mustStart(t, map[string]string{"DESKS_FILE": configtest.DesksFile(t, "[[desk]]\nname = \"main\"\n[[desk]]\nname = \"evil\"\n")})
	outside := t.TempDir()
	evilDir := deskfs.Dir(s.main.Config.DataDir, "evil")
	if err := os.MkdirAll(evilDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(evilDir, "out")); err != nil {
		t.Fatal(err)
	}
	tools := map[string]deskbot.Tool{}
	for _, tl := range s.main.Hub.Tools(s.main.Config.DataDir) {
		tools[tl.Name()] = tl
	}
	many := make([]string, 10000)
	for i := range many {
		many[i] = fmt.Sprintf("S%d", i)
	}
	manyJSON, _ := json.Marshal(map[string]any{"symbols": many})
	before := s.main.Hub.Requests()
	var wg sync.WaitGroup
	var good deskbot.ToolResult
	var goodErr error
	wg.Go(func() {
		good, goodErr = tools[deskbot.ToolGetQuote].Run(context.Background(), "main", json.RawMessage(`{"symbols":["INFY"]}`))
	})
	for _, c := range []struct{ tool, args, want string }{
		{deskbot.ToolGetQuote, string(manyJSON), "at most 50 symbols and was given 10000"},
		{deskbot.ToolGetCandles, `{"symbol":"INFY","interval":"minute","from":"2016-12-01","to":"2026-12-01"}`, "at most 60 days at a time"},
		{deskbot.ToolGetCandles, `{"symbol":"INFY","interval":"minute","last":100,"file":"../main/x.csv"}`, "must be a path inside your folder"},
		{deskbot.ToolGetCandles, `{"symbol":"INFY","interval":"minute","last":100,"file":"out/x.csv"}`, "cannot be written"},
	} {
		r, err := tools[c.tool].Run(context.Background(), "evil", json.RawMessage(c.args))
		if err != nil || !r.IsError || !strings.Contains(r.Text, c.want) {
			t.Errorf("%s %.60s: %q %v, want a refusal with %q", c.tool, c.args, r.Text, err, c.want)
		}
	}
	wg.Wait()
	if goodErr != nil || good.IsError || !strings.Contains(good.Text, "INFY: last ") {
		t.Errorf("the other desk read %q, %v", good.Text, goodErr)
	}
	if es, _ := os.ReadDir(outside); len(es) != 0 {
		t.Errorf("written outside the desk's folder: %v", es)
	}
	if _, err := os.Stat(filepath.Join(deskfs.Dir(s.main.Config.DataDir, "main"), "x.csv")); err == nil {
		t.Errorf("the hostile desk wrote into another desk's folder")
	}
	if n := s.main.Hub.Requests() - before; n > 1 {
		t.Errorf("the refusals cost %d quote requests", n-1)
	}
}

// 100 desks asking quotes at once through the service's hub cost at most
// one quote request a second.
func TestHundredDesksQuotesOneRequestASecond(t *testing.T) {
	t.Parallel()
	s := mustStart(t, nil)
	tl := s.main.Hub.Tools(s.main.Config.DataDir)[0]
	syms := []string{"INFY", "TCS", "RELIANCE", "SBIN", "HDFCBANK"}
	before := s.main.Hub.Requests()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan string, 100)
	for d := range 100 {
		wg.Go(func() {
			args := fmt.Sprintf(`{"symbols":[%q,%q]}`, syms[d%5], syms[(d+1)%5])
			r, err := tl.Run(context.Background(), fmt.Sprintf("desk%d", d), json.RawMessage(args))
			if err != nil || r.IsError || strings.Count(r.Text, ": last ") != 2 {
				errs <- fmt.Sprintf("desk %d: %q %v", d, r.Text, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	elapsed := time.Since(start)
	n := s.main.Hub.Requests() - before
	if limit := int64(elapsed/time.Second) + 1; n > limit {
		t.Errorf("100 desks cost %d quote requests in %v, want at most %d", n, elapsed, limit)
	}
	t.Logf("100 desks: %d quote request(s) in %v", n, elapsed)
}

// 100 desks asking quotes at once through the service's tools, and again
// right after, at the fake Kite with the official client: Kite sees at most one quote
// request a second and answers no 429, and every desk reads its price.
func TestKiteHundredDesksQuotes(t *testing.T) {
	t.Parallel()
	s, kt, _ := mustKiteTrading(t, nil)
	tl := s.main.Hub.Tools(s.main.Config.DataDir)[0]
	for wave := range 2 {
		var wg sync.WaitGroup
		errs := make(chan string, 100)
		for d := range 100 {
			wg.Go(func() {
				r, err := tl.Run(context.Background(), fmt.Sprintf("desk%d", d), json.RawMessage(`{"symbols":["INFY"]}`))
				if err != nil || r.IsError || !strings.Contains(r.Text, "INFY: last 1,500.00") {
					errs <- fmt.Sprintf("wave %d desk %d: %q %v", wave, d, r.Text, err)
				}
			})
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Error(e)
		}
	}
	if n := kt.MaxPerSecond("GET", "/quote*"); n > 1 {
		t.Errorf("Kite saw %d quote requests within one second, want at most 1", n)
	}
	if n := kt.Served429(); n != 0 {
		t.Errorf("Kite answered %d 429s", n)
	}
	t.Logf("200 desk quotes cost %d Kite quote requests", kt.Requests("GET", "/quote*"))
}
