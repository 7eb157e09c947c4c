package main

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/model/modeltest"
)

// mustAudit runs `deskbot audit args...` against s's Redis and returns its
// exit status and output.
func (s *service) mustAudit(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut strings.Builder
	code := command(t.Context(), append([]string{"audit"}, args...), "", s.environ, &out, &errOut)
	return code, out.String(), errOut.String()
}

// The export of a day is what the chat showed: the order in the words of
// the held message, who asked, who allowed it, and the broker's order id,
// state and fill that the outcome told. Then the trail, changed by hand in
// Redis, fails verify, which names the entry changed.
func TestAuditExportIsWhatTheChatShowed(t *testing.T) {
	t.Parallel()
	s := mustStart(t, map[string]string{"APPROVAL_TOOLS": "place_order"})
	s.model.SetHandler(func(r modeltest.Request) modeltest.Reply {
		last := r.Last()
		switch {
		case last.Role == "user" && strings.Contains(last.Text, "buy INFY"):
			return modeltest.Calls(modeltest.ToolCall{Name: "place_order", Arguments: `{"symbol":"INFY","side":"buy","quantity":10,"price":5000}`})
		}
		return modeltest.Text("ok")
	})
	s.tg.InjectText(asha, groupID, "/tell main buy INFY now", 0)
	held := s.mustBotMessage(t, "the held order", func(m telegramtest.Message) bool {
		return len(m.Keyboard) > 0 && strings.Contains(m.Plain, "place_order")
	})
	s.tg.InjectCallback(ravi, groupID, held.ID, button(t, held, "Allow once"))
	done := s.mustBotMessage(t, "the order's outcome", func(m telegramtest.Message) bool {
		return m.ID == held.ID && len(m.Keyboard) == 0 && strings.Contains(m.Plain, "Ran")
	})
	told := regexp.MustCompile(`Ran: order (\S+) · (complete) (10 @ [\d,.]+ avg)`).FindStringSubmatch(done.Plain)
	if told == nil {
		t.Fatalf("the outcome reads %q; want the order's id and its fill", done.Plain)
	}

	day := deskbot.OrderDay(time.Now())
	code, out, errOut := s.mustAudit(t, "export", "--day", day)
	if code != 0 {
		t.Fatalf("export: exit %d, %s", code, errOut)
	}
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if err != nil || len(rows) < 2 {
		t.Fatalf("export %q: %v", out, err)
	}
	if got, want := strings.Join(rows[0], ","), "time (India),desk,tool,order,requested by,approvers,broker order id,algo id,final state,fills,trail"; got != want {
		t.Errorf("header = %s; want %s", got, want)
	}
	var row []string
	for _, r := range rows[1:] {
		if r[2] == "place_order" {
			row = r
		}
	}
	if row == nil {
		t.Fatalf("no row of the order in %q", out)
	}
	firstLine := func(text, of string) bool {
		for _, l := range strings.Split(text, "\n") {
			if strings.TrimSpace(l) == of {
				return true
			}
		}
		return false
	}
	if !strings.HasPrefix(row[3], "BUY 10 ") || !firstLine(held.Plain, row[3]) {
		t.Errorf("the export's order is %q; want a line of the held message:\n%s", row[3], held.Plain)
	}
	checks := []struct{ name, got, want string }{
		{"desk", row[1], "main"},
		{"requested by", row[4], "desk main"},
		{"broker order id", row[6], told[1]},
		{"algo id", row[7], ""}, // the paper broker sends none
		{"final state", row[8], told[2]},
		{"fills", row[9], told[3]},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %q; want %q, as the chat told it", c.name, c.got, c.want)
		}
	}
	if !strings.HasPrefix(row[5], "Ravi") || !strings.Contains(row[5], ": Allowed once at ") {
		t.Errorf("approvers = %q; want Ravi's allow once", row[5])
	}
	if _, err := time.ParseInLocation("2006-01-02 15:04:05", row[0], deskbot.IST); err != nil || !strings.HasPrefix(row[0], day) {
		t.Errorf("time = %q; want the India time of the day", row[0])
	}

	if code, out, _ := s.mustAudit(t, "verify"); code != 0 || !strings.HasPrefix(out, "The audit chain holds: ") {
		t.Fatalf("verify of the trail as written: exit %d, %q", code, out)
	}
	// By hand: the trail written again with Ravi's allow said to be Asha's.
	ctx := t.Context()
	rdb, key := s.main.Store.Client(), s.main.Store.Key("audit")
	raw, err := rdb.Do(ctx, "XRANGE", key, "-", "+").Slice()
	if err != nil {
		t.Fatal(err)
	}
	rdb.Del(ctx, key)
	changed := ""
	for _, x := range raw {
		entry := x.([]any)
		args := []any{"XADD", key, entry[0]}
		for _, f := range entry[1].([]any) {
			v := f.(string)
			if strings.HasPrefix(v, "Ravi") && changed == "" {
				v, changed = "Asha"+strings.TrimPrefix(v, "Ravi"), entry[0].(string)
			}
			args = append(args, v)
		}
		if err := rdb.Do(ctx, args...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if changed == "" {
		t.Fatal("no entry of Ravi's in the trail")
	}
	code, out, _ = s.mustAudit(t, "verify")
	if code != 1 || !strings.Contains(out, "breaks at entry "+changed+" ") {
		t.Errorf("verify after a change by hand: exit %d, %q; want 1, naming %s", code, out, changed)
	}
}

// Wrong commands are told what is right and read nothing.
func TestAuditCommandUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want string
	}{
		{nil, "deskbot audit export --day YYYY-MM-DD"},
		{[]string{"export"}, "export needs --day YYYY-MM-DD"},
		{[]string{"export", "--day", "04/12/2026"}, "--day is written YYYY-MM-DD"},
		{[]string{"verify", "now"}, "verify takes no arguments"},
		{[]string{"erase"}, `unknown command "erase"`},
	}
	for _, tc := range tests {
		var out, errOut strings.Builder
		code := command(t.Context(), append([]string{"audit"}, tc.args...), "", map[string]string{}, &out, &errOut)
		if code != 2 || !strings.Contains(errOut.String(), tc.want) || out.Len() != 0 {
			t.Errorf("deskbot audit %v: exit %d, %q; want 2 and %q", tc.args, code, errOut.String(), tc.want)
		}
	}
}

// The Audit tab's export saves the day's CSV in the browser, the same as
// `deskbot audit export` writes: the order in the chat's words, who
// allowed it, and the broker's order.
func TestAuditExportInBrowser(t *testing.T) {
	t.Parallel()
	s := startWithPage(t, nil)
	ctx := mustBrowser(t) // closed before the service stops
	s.orderModel(t)
	held, _ := s.holdOrder(t, "buy nifty", "NIFTY24DECFUT")
	s.tg.InjectCallback(ravi, groupID, held.ID, button(t, held, "Allow once"))
	s.mustBotMessage(t, "the order's outcome", func(m telegramtest.Message) bool {
		return m.ID == held.ID && len(m.Keyboard) == 0 && strings.Contains(m.Plain, "Ran")
	})
	day := deskbot.OrderDay(time.Now())
	code, want, errOut := s.mustAudit(t, "export", "--day", day)
	if code != 0 || !strings.Contains(want, "BUY 50 NIFTY24DECFUT LIMIT @ 24,500.00") {
		t.Fatalf("the command's export: exit %d, %s\n%s", code, errOut, want)
	}

	dir := t.TempDir()
	do(t, ctx, "open the page", chromedp.Navigate(s.pageURL(initDataFor(asha, time.Now()))))
	if _, err := chromedp.CallBrowser(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{Behavior: browser.SetDownloadBehaviorBehaviorAllow, DownloadPath: dir}); err != nil {
		t.Fatalf("allow downloads: %v", err)
	}
	waitFor(t, ctx, "the desks", `!!document.querySelector("#desk-main")`)
	do(t, ctx, "open Audit", chromedp.Click(chromedp.CSS(`#tabs [data-view=audit]`)))
	waitFor(t, ctx, "audit", `!!document.querySelector("table.trail")`)
	do(t, ctx, "export the day", chromedp.Click(chromedp.CSS(`[data-export=audit]`)))
	file := filepath.Join(dir, "audit-"+day+".csv")
	var got []byte
	deskbottest.Eventually(t, "the day's CSV saved by the browser", func() bool {
		b, err := os.ReadFile(file)
		got = b
		return err == nil && len(b) > 0
	})
	if string(got) != want {
		t.Errorf("the page saved\n%s\nwant what the command writes\n%s", got, want)
	}
}

// The page's export is the page's data: no sign-in, or a stranger outside
// the group, gets no CSV; a member of the group gets the day's; a day not
// written YYYY-MM-DD is refused in words.
func TestAuditExportOnThePageIsTheTeams(t *testing.T) {
	t.Parallel()
	s := startWithPage(t, nil)
	for _, c := range []struct {
		name, initData string
		want           int
	}{
		{"no sign-in", "", 401},
		{"a stranger outside the group", initDataFor(stranger, time.Now()), 403},
	} {
		code, body, h := s.pageCall(t, "GET", "x/audit.csv", c.initData, nil)
		if code != c.want || strings.Contains(body, "time (India)") || strings.HasPrefix(h.Get("Content-Type"), "text/csv") {
			t.Errorf("%s: %d %s %.60q; want %d and no CSV", c.name, code, h.Get("Content-Type"), body, c.want)
		}
	}
	code, body, h := s.pageCall(t, "GET", "x/audit.csv", initDataFor(vik, time.Now()), nil)
	if code != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/csv") || !strings.HasPrefix(body, "time (India),desk,") {
		t.Errorf("for a member: %d %s %.80q; want today's CSV", code, h.Get("Content-Type"), body)
	}
	if code, body, _ := s.pageCall(t, "GET", "x/audit.csv?day=04%2F12%2F2026", initDataFor(vik, time.Now()), nil); code != 400 || !strings.Contains(body, "A day is written like 2026-12-01") {
		t.Errorf("a day not written YYYY-MM-DD: %d %q", code, body)
	}
}
