package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskbot/deskbot/webapp/webapptest"
	"github.com/deskbot/deskbot/words"

	"github.com/chromedp/chromedp"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/model/modeltest"
	"github.com/deskbot/deskbot/webapp"
)

// The desks page, tested in a real browser (Debian's headless Chromium,
// driven by chromedp) against the whole service: the fake Bot API, the
// fake model and real Redis. The page is opened as Telegram opens a Mini
// App, with the signed initData in the URL's fragment; telegram-web-app.js
// cannot load here (no network), which the page must survive.

var vik = telegramtest.User{ID: 103, FirstName: "Vik"} // in the group, not an approver

const pagePath = "/desks/"

// screenshotDir is where the pages' screenshots go: docs/screenshots when
// DESKBOT_SCREENSHOTS=1 (to refresh the README's), else a temporary folder.
func screenshotDir(t *testing.T) string {
	if os.Getenv("DESKBOT_SCREENSHOTS") == "1" {
		dir, _ := filepath.Abs("../../docs/screenshots")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	return t.TempDir()
}

// mustBrowser starts a headless Chromium with a fresh profile and a
// phone's screen, or skips (fails under DESKBOT_REQUIRE_BROWSER=1, as CI
// sets) where there is none.
func mustBrowser(t *testing.T) context.Context {
	t.Helper()
	path := os.Getenv("DESKBOT_CHROMIUM")
	if path == "" {
		path = "/usr/bin/chromium"
	}
	if _, err := exec.LookPath(path); err != nil {
		if os.Getenv("DESKBOT_REQUIRE_BROWSER") == "1" {
			t.Fatalf("cmd/deskbot browser tests: no Chromium at %s (install the chromium package), and DESKBOT_REQUIRE_BROWSER=1", path)
		}
		t.Skipf("cmd/deskbot browser tests: skipped, no Chromium at %s (apt-get install chromium)", path)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("hide-scrollbars", true),
		// No network here: every name but loopback fails at once, as
		// telegram.org does for a phone offline.
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(390, 844),
	}
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	ctx, cancel3 := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(cancel3)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2))); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	return ctx
}

func initDataFor(u telegramtest.User, at time.Time) string {
	user, _ := json.Marshal(map[string]any{"id": u.ID, "first_name": u.FirstName})
	return webapptest.SignInitData(testToken, string(user), at, url.Values{"query_id": {"AAE" + fmt.Sprint(u.ID)}})
}

// pageURL is the page as Telegram opens it: initData and theme in the
// fragment, never sent to the server.
func (s *service) pageURL(initData string) string {
	theme := `{"bg_color":"#ffffff","secondary_bg_color":"#efeff3","text_color":"#000000","hint_color":"#707579","link_color":"#3390ec","button_color":"#3390ec","button_text_color":"#ffffff","destructive_text_color":"#e53935"}`
	return "http://" + s.main.HTTP.Addr() + pagePath + "#tgWebAppData=" + url.QueryEscape(initData) +
		"&tgWebAppVersion=7.10&tgWebAppPlatform=android&tgWebAppThemeParams=" + url.QueryEscape(theme)
}

func startWithPage(t *testing.T, extra map[string]string) *service {
	t.Helper()
	env := map[string]string{
		"WEBAPP_URL":     "http://127.0.0.1" + pagePath,
		"WEBAPP_NAME":    "desks",
		"DESKS":          "main,fno",
		"APPROVAL_TOOLS": "place_order,flatten_desk,send_message",
	}
	for k, v := range extra {
		env[k] = v
	}
	s := mustStart(t, env)
	s.tg.SetMemberStatus(stranger.ID, "left")
	return s
}

// holdOrder makes desk main ask to place an order, and returns the held
// request's chat message and id.
func (s *service) holdOrder(t *testing.T, says string, args string) (telegramtest.Message, string) {
	t.Helper()
	s.tg.InjectText(asha, groupID, "/tell main "+says, 0)
	held := s.mustBotMessage(t, "held call: "+says, func(m telegramtest.Message) bool {
		return len(m.Keyboard) > 0 && strings.Contains(m.Plain, "wants to run") && strings.Contains(m.Plain, args)
	})
	data := button(t, held, "Deny")
	id := data[strings.LastIndex(data, "|")+1:]
	return held, id
}

func (s *service) orderModel(t *testing.T) {
	s.model.SetHandler(func(r modeltest.Request) modeltest.Reply {
		last := r.Last()
		switch {
		case last.Role == "tool" && strings.Contains(last.Text, "needs the user's permission"):
			return modeltest.Text("Asked the team.")
		case strings.Contains(last.Text, "buy nifty"):
			return modeltest.Calls(modeltest.ToolCall{Name: "place_order", Arguments: `{"symbol":"NIFTY24DECFUT","side":"buy","quantity":50,"price":24500}`})
		case strings.Contains(last.Text, "sell banknifty"):
			return modeltest.Calls(modeltest.ToolCall{Name: "place_order", Arguments: `{"symbol":"BANKNIFTY24DECFUT","side":"sell","quantity":15,"price":52100}`})
		case strings.Contains(last.Text, "say hostile"):
			return modeltest.Calls(modeltest.ToolCall{Name: "send_message", Arguments: `{"text":"</pre><script>window.pwned=1</script><img src=x id=pwn onerror=\"window.pwned=2\"><b style=\"position:fixed;inset:0;font-size:90px\">FAKE ALLOW</b>` + strings.Repeat("W", 600) + `"}`})
		}
		return modeltest.Text("ok")
	})
}

func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

func evalAsync[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

func waitFor(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	deskbottest.EventuallyWithin(t, 15*time.Second, what, func() bool {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		return err == nil && v
	})
}

func shot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	img, err := chromedp.Run(ctx, chromedp.FullScreenshot(80))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".jpg"), img, 0o644); err != nil {
		t.Fatal(err)
	}
}

// throughMarket prices o through the paper market's price now, so it fills
// there (at the market's price, not o's): the service's market walks with
// the real clock, and the page is to show a book, whatever it reads today.
func throughMarket(t *testing.T, b deskbot.Market, o deskbot.Order) deskbot.Order {
	t.Helper()
	px, ok, err := b.LastPrice(t.Context(), o.Symbol)
	if err != nil || !ok {
		t.Fatalf("market price of %s: %v %v", o.Symbol, ok, err)
	}
	o.Price = deskbot.RoundPaise(px.Value * 1.05)
	if o.Side == deskbot.Sell {
		o.Price = deskbot.RoundPaise(px.Value * 0.95)
	}
	return o
}

// TestDesksPageInBrowser opens the page as an approver, sees the desks,
// allows a held order from the page and sees it run once with the chat's
// message edited as if tapped there; sees a request decided in the chat
// leave the page within a second; and takes a screenshot of each page.
func TestDesksPageInBrowser(t *testing.T) {
	t.Parallel()
	s := startWithPage(t, nil)
	ctx := mustBrowser(t) // closed before the service stops
	s.orderModel(t)
	dir := screenshotDir(t)
	// The desk holds positions, as after a morning's trading.
	for _, o := range []deskbot.Order{
		{Symbol: "NIFTY24DECFUT", Side: deskbot.Buy, Quantity: 75, Price: 24410},
		{Symbol: "NIFTY24DECFUT", Side: deskbot.Sell, Quantity: 25, Price: 24480},
		{Symbol: "RELIANCE", Side: deskbot.Buy, Quantity: 100, Price: 1288.5},
		{Symbol: "RELIANCE", Side: deskbot.Sell, Quantity: 40, Price: 1279.25},
	} {
		if _, err := s.main.Broker.PlaceOrder(t.Context(), "main", deskbottest.NewKey(), throughMarket(t, s.main.Broker, o)); err != nil {
			t.Fatal(err)
		}
	}
	held, id := s.holdOrder(t, "buy nifty", "NIFTY24DECFUT")

	do(t, ctx, "open the page", chromedp.Navigate(s.pageURL(initDataFor(asha, time.Now()))))
	waitFor(t, ctx, "the desks", `!!document.querySelector("#desk-main") && !!document.querySelector("#desk-fno")`)
	if got := eval[string](t, ctx, `document.querySelector("#desk-main").innerText`); !strings.Contains(got, "NIFTY24DECFUT") || !strings.Contains(got, "1 open request") && !strings.Contains(got, "Open requests\n1") {
		t.Errorf("desk main's card: %q", got)
	}
	if got := eval[string](t, ctx, `document.querySelector("#desk-main").innerText`); !regexp.MustCompile(`Tokens today\s+[1-9][0-9,]*`).MatchString(got) {
		t.Errorf("desk main's card does not show its models' tokens today (it held an order, so its model spent some): %q", got)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("#desk-main [data-ask=flatten], #desk-main [data-post=pause]").length`); n != 2 {
		t.Errorf("an approver sees %d of Flatten and Pause on desk main, want 2", n)
	}
	waitFor(t, ctx, "the live stream", `document.body.dataset.live === "on"`)
	shot(t, ctx, dir, "desks")

	// Requests, in the chat's trading words.
	do(t, ctx, "open Requests", chromedp.Click(chromedp.CSS(`#tabs [data-view=requests]`)))
	waitFor(t, ctx, "the held order", fmt.Sprintf(`!!document.getElementById("req-%s")`, id))
	card := eval[string](t, ctx, fmt.Sprintf(`document.getElementById("req-%s").innerText`, id))
	for _, want := range []string{"BUY 50 NIFTY24DECFUT LIMIT @ 24,500.00 · MIS", "Notional ₹12,25,000.00", "Position after: long 100", `"symbol":"NIFTY24DECFUT"`} {
		if !strings.Contains(card, want) {
			t.Errorf("request card lacks %q:\n%s", want, card)
		}
	}
	shot(t, ctx, dir, "requests")

	// Allow once from the page: it runs once, and the chat's message shows
	// the outcome as if the button there had been tapped.
	do(t, ctx, "allow once", chromedp.Click(chromedp.CSS(fmt.Sprintf(`#req-%s button[data-decision=allow_once]`, id))))
	waitFor(t, ctx, "the page's answer", `document.getElementById("toast").textContent.includes("Allowed; running")`)
	s.mustBotMessage(t, "the chat message edited with the outcome", func(m telegramtest.Message) bool {
		return m.ID == held.ID && len(m.Keyboard) == 0 && strings.Contains(m.Plain, "Allowed once by Asha") && strings.Contains(m.Plain, "Ran")
	})
	s.mustRanOnce(t, id)

	// Decided in the chat: gone from the open page within a second.
	_, id2 := s.holdOrder(t, "sell banknifty", "BANKNIFTY24DECFUT")
	waitFor(t, ctx, "the second request, live", fmt.Sprintf(`!!document.getElementById("req-%s")`, id2))
	m2, _ := s.tg.Message(groupID, s.requestMessage(t, id2).ID)
	start := time.Now()
	s.tg.InjectCallback(ravi, groupID, m2.ID, button(t, m2, "Deny"))
	deskbottest.EventuallyWithin(t, 5*time.Second, "the denied request leaves the page", func() bool {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`!document.getElementById("req-%s")`, id2)))
		return err == nil && v
	})
	if took := time.Since(start); took > time.Second {
		t.Errorf("a request decided in the chat left the page after %v, want within a second", took)
	}

	// A desk's own page: its charts, trades, calls and schedule.
	do(t, ctx, "open Desks", chromedp.Click(chromedp.CSS(`#tabs [data-view=desks]`)))
	waitFor(t, ctx, "the desks again", `!!document.querySelector("#desk-main a.deskname")`)
	do(t, ctx, "open desk main", chromedp.Click(chromedp.CSS(`#desk-main a.deskname`)))
	waitFor(t, ctx, "desk main's charts", `document.querySelectorAll("svg.chart").length === 2 && document.querySelector(".trades") !== null`)
	if got := eval[string](t, ctx, `document.getElementById("view").innerText`); !strings.Contains(got, "bought 50 NIFTY24DECFUT") || !strings.Contains(got, "place_order") {
		t.Errorf("desk page lacks the allowed trade or its tool call:\n%s", got)
	}
	shot(t, ctx, dir, "desk")

	do(t, ctx, "open Grants", chromedp.Click(chromedp.CSS(`#tabs [data-view=grants]`)))
	waitFor(t, ctx, "grants", `!!document.querySelector("section.grants")`)
	shot(t, ctx, dir, "grants")

	do(t, ctx, "open Audit", chromedp.Click(chromedp.CSS(`#tabs [data-view=audit]`)))
	waitFor(t, ctx, "audit", `!!document.querySelector("table.trail")`)
	// Filter by tool and person: only Asha's allow of the order is left
	// among the decisions.
	eval[bool](t, ctx, `(function(){var f=document.querySelector("form[data-filter]");f.tool.value="place_order";f.by.value="Ravi (102)";f.by.dispatchEvent(new Event("change",{bubbles:true}));return true})()`)
	waitFor(t, ctx, "the filtered audit", `(function(){var t=document.querySelector("table.trail");return !!t && t.innerText.includes("Denied") && !t.innerText.includes("Allowed once")})()`)
	shot(t, ctx, dir, "audit")
	t.Logf("screenshots in %s", dir)
}

// requestMessage finds the chat message that shows request id.
func (s *service) requestMessage(t *testing.T, id string) telegramtest.Message {
	t.Helper()
	return s.mustBotMessage(t, "request "+id, func(m telegramtest.Message) bool {
		return strings.Contains(m.Plain, words.ShortID(id))
	})
}

// mustRanOnce checks the audit trail: the request's call ran exactly once.
func (s *service) mustRanOnce(t *testing.T, id string) {
	t.Helper()
	deskbottest.EventuallyWithin(t, 10*time.Second, "the call recorded as run", func() bool { return s.runs(t, id) >= 1 })
	time.Sleep(300 * time.Millisecond) // a second run would be recorded by now
	if n := s.runs(t, id); n != 1 {
		t.Errorf("request %s ran %d times, want once", id, n)
	}
}

func (s *service) runs(t *testing.T, id string) int {
	trail, err := s.main.Store.AuditTrail(t.Context(), 500)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range trail {
		if e.RequestID == id && (e.Action == "ran" || e.Action == "failed") {
			n++
		}
	}
	return n
}

// pageCall makes one of the page's requests as the page makes it: the
// initData in its header.
func (s *service) pageCall(t *testing.T, method, path, initData string, form url.Values) (int, string, http.Header) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(t.Context(), method, "http://"+s.main.HTTP.Addr()+pagePath+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if initData != "" {
		req.Header.Set(webapp.InitDataHeader, initData)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// TestDesksPageRefusesStrangers: no sign-in, a stranger's, an expired, a
// replayed old one, a tampered one and one forged for an approver's id
// are refused, and a sign-in in the URL's query is not taken.
func TestDesksPageRefusesStrangers(t *testing.T) {
	t.Parallel()
	s := startWithPage(t, map[string]string{"WEBAPP_MAX_AGE": "10m"})
	s.orderModel(t)
	_, id := s.holdOrder(t, "buy nifty", "NIFTY24DECFUT")
	good := initDataFor(asha, time.Now())
	forged := strings.Replace(initDataFor(vik, time.Now()), url.QueryEscape(`"id":103`), url.QueryEscape(`"id":101`), 1)
	cases := []struct {
		name, initData, path string
		want                 int
		says                 string
	}{
		{"no sign-in", "", "v/desks", 401, "carries no sign-in"},
		{"a stranger outside the group", initDataFor(stranger, time.Now()), "v/desks", 403, "Only members of the team's group"},
		{"expired", initDataFor(asha, time.Now().Add(-11*time.Minute)), "v/requests", 401, "expired"},
		{"replayed from yesterday", initDataFor(asha, time.Now().Add(-24*time.Hour)), "events", 401, "expired"},
		{"tampered", strings.Replace(good, "query_id=AAE", "query_id=AAF", 1), "v/desks", 401, "not valid"},
		{"forged for an approver's id", forged, "v/requests", 401, "not valid"},
		{"signed by another bot", webapptest.SignInitData("654321:other", `{"id":101,"first_name":"Asha"}`, time.Now(), nil), "v/desks", 401, "not valid"},
		{"in the URL instead of the header", "", "v/desks?tgWebAppData=" + url.QueryEscape(good), 401, "carries no sign-in"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, body, _ := s.pageCall(t, "GET", c.path, c.initData, nil)
			if code != c.want || !strings.Contains(body, c.says) {
				t.Errorf("got %d %q, want %d with %q", code, body, c.want, c.says)
			}
			if strings.Contains(body, "NIFTY") {
				t.Errorf("a refused request saw the desks' data: %q", body)
			}
			code, body, _ = s.pageCall(t, "POST", "a/decide", c.initData, url.Values{"id": {id}, "decision": {"allow_once"}})
			if code != c.want {
				t.Errorf("decide: got %d %q, want %d", code, body, c.want)
			}
		})
	}
	if r, err := s.main.Store.Request(t.Context(), id); err != nil || r.State != deskbot.StateOpen {
		t.Fatalf("after the refusals the request is %v (%v), want still open", r.State, err)
	}
	// The approver's own sign-in works, and every answer carries the
	// security headers.
	code, _, h := s.pageCall(t, "GET", "v/requests", good, nil)
	if code != 200 {
		t.Fatalf("an approver's view: %d", code)
	}
	for k, want := range map[string]string{
		"Content-Security-Policy": "frame-ancestors https://web.telegram.org",
		"X-Content-Type-Options":  "nosniff",
		"Referrer-Policy":         "no-referrer",
		"Cache-Control":           "no-store",
	} {
		if !strings.Contains(h.Get(k), want) {
			t.Errorf("%s = %q, want it to contain %q", k, h.Get(k), want)
		}
	}
	if csp := h.Get("Content-Security-Policy"); strings.Contains(csp, "unsafe-inline") || !strings.Contains(csp, "script-src 'self' https://telegram.org") {
		t.Errorf("CSP allows inline script or more: %q", csp)
	}
	if code, _, _ := s.pageCall(t, "GET", "", "", nil); code != 200 {
		t.Errorf("the page's shell (no data) answered %d", code)
	}
}

// TestDesksPageViewerCannotAct: a member of the group who is not an
// approver sees the desks and requests but no action buttons, and what
// they post anyway is refused and changes nothing.
func TestDesksPageViewerCannotAct(t *testing.T) {
	t.Parallel()
	s := startWithPage(t, nil)
	ctx := mustBrowser(t) // closed before the service stops
	s.orderModel(t)
	_, id := s.holdOrder(t, "buy nifty", "NIFTY24DECFUT")
	vikData := initDataFor(vik, time.Now())
	do(t, ctx, "open the page", chromedp.Navigate(s.pageURL(vikData)))
	waitFor(t, ctx, "the desks", `!!document.querySelector("#desk-main")`)
	if n := eval[int](t, ctx, `document.querySelectorAll("[data-post],[data-ask]").length`); n != 0 {
		t.Errorf("a viewer sees %d action buttons on Desks", n)
	}
	do(t, ctx, "open Requests", chromedp.Click(chromedp.CSS(`#tabs [data-view=requests]`)))
	waitFor(t, ctx, "the request", fmt.Sprintf(`!!document.getElementById("req-%s")`, id))
	if n := eval[int](t, ctx, `document.querySelectorAll("[data-post],[data-ask]").length`); n != 0 {
		t.Errorf("a viewer sees %d action buttons on Requests", n)
	}
	// Posting anyway, from the page's own script context.
	got := evalAsync[string](t, ctx, fmt.Sprintf(`(async function(){var r=await fetch(%q,{method:"POST",headers:{"X-Telegram-Init-Data":%q,"Content-Type":"application/x-www-form-urlencoded"},body:"id=%s&decision=allow_once"});return r.status+" "+await r.text()})()`,
		pagePath+"a/decide", vikData, id))
	if !strings.HasPrefix(got, "403 Only approvers can act") {
		t.Errorf("a viewer's allow answered %q", got)
	}
	for _, a := range []string{"a/flatten", "a/pause", "a/revoke"} {
		if code, body, _ := s.pageCall(t, "POST", a, vikData, url.Values{"desk": {"main"}, "tool": {"place_order"}}); code != 403 {
			t.Errorf("%s by a viewer: %d %q", a, code, body)
		}
	}
	if code, _, _ := s.pageCall(t, "GET", "v/flatten?desk=main", vikData, nil); code != 403 {
		t.Errorf("a viewer was offered a flatten confirmation (%d)", code)
	}
	if r, _ := s.main.Store.Request(t.Context(), id); r == nil || r.State != deskbot.StateOpen {
		t.Fatalf("a viewer's post changed the request")
	}
	if st, _ := s.main.Store.DeskStatus(t.Context(), "main"); st.Paused {
		t.Fatal("a viewer paused a desk")
	}
}

// TestDesksPageAndChatDecideAtOnce: an allow on the page and an allow in
// the chat for the same request at once: exactly one wins, the other is
// told who did, the call runs once.
func TestDesksPageAndChatDecideAtOnce(t *testing.T) {
	t.Parallel()
	s := startWithPage(t, nil)
	s.orderModel(t)
	for round := range 3 {
		held, id := s.holdOrder(t, fmt.Sprintf("buy nifty (%d)", round), "NIFTY24DECFUT")
		var wg sync.WaitGroup
		var code int
		var body string
		var q string
		wg.Go(func() {
			code, body, _ = s.pageCall(t, "POST", "a/decide", initDataFor(asha, time.Now()), url.Values{"id": {id}, "decision": {"allow_once"}})
		})
		wg.Go(func() { q = s.tg.InjectCallback(ravi, groupID, held.ID, button(t, held, "Allow once")) })
		wg.Wait()
		s.tg.WaitFor(t, 10*time.Second, func(srv *telegramtest.Server) bool { _, _, ok := srv.CallbackAnswer(q); return ok })
		tap, _, _ := s.tg.CallbackAnswer(q)
		pageWon, chatWon := code == 200, strings.Contains(tap, "Allowed; running")
		if pageWon == chatWon {
			t.Fatalf("round %d: page %d %q, chat %q: want exactly one winner", round, code, body, tap)
		}
		if pageWon && !strings.Contains(tap, "Already allowed by Asha") {
			t.Errorf("round %d: the chat's loser was told %q", round, tap)
		}
		if chatWon && (code != 409 || !strings.Contains(body, "Already allowed by Ravi")) {
			t.Errorf("round %d: the page's loser was told %d %q", round, code, body)
		}
		s.mustRanOnce(t, id)
		by := "Asha"
		if chatWon {
			by = "Ravi"
		}
		s.mustBotMessage(t, "the outcome in the chat", func(m telegramtest.Message) bool {
			return m.ID == held.ID && len(m.Keyboard) == 0 && strings.Contains(m.Plain, "Allowed once by "+by)
		})
	}
}

// TestDesksPageHostileDeskText: a desk's text shown on the page (its tool
// arguments) arrives as text: no script runs, no element is injected, and
// a long unbroken word does not push the page wider than the phone.
func TestDesksPageHostileDeskText(t *testing.T) {
	t.Parallel()
	s := startWithPage(t, nil)
	ctx := mustBrowser(t) // closed before the service stops
	s.orderModel(t)
	s.tg.InjectText(asha, groupID, "/tell main say hostile", 0)
	held := s.mustBotMessage(t, "the hostile call held", func(m telegramtest.Message) bool {
		return len(m.Keyboard) > 0 && strings.Contains(m.Plain, "send_message")
	})
	data := button(t, held, "Deny")
	id := data[strings.LastIndex(data, "|")+1:]
	do(t, ctx, "open the page", chromedp.Navigate(s.pageURL(initDataFor(asha, time.Now()))))
	waitFor(t, ctx, "the desks", `!!document.querySelector("#desk-main")`)
	do(t, ctx, "open Requests", chromedp.Click(chromedp.CSS(`#tabs [data-view=requests]`)))
	waitFor(t, ctx, "the hostile request", fmt.Sprintf(`!!document.getElementById("req-%s")`, id))
	time.Sleep(300 * time.Millisecond) // an onerror would have fired by now
	if v := eval[string](t, ctx, `String(window.pwned)`); v != "undefined" {
		t.Errorf("the desk's text ran script: window.pwned = %s", v)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("#view script, #view img, #pwn, #view b[style]").length`); n != 0 {
		t.Errorf("the desk's text added %d elements", n)
	}
	if got := eval[string](t, ctx, fmt.Sprintf(`document.querySelector("#req-%s pre.args").textContent`, id)); !strings.Contains(got, "<script>window.pwned=1</script>") {
		t.Errorf("the arguments are not shown as text: %q", got)
	}
	if w := eval[int](t, ctx, `document.documentElement.scrollWidth`); w > 390 {
		t.Errorf("the page is %d px wide on a 390 px phone", w)
	}
	// Denied from the page with a reason: the desk is told at once.
	do(t, ctx, "type a reason", chromedp.SendKeys(chromedp.CSS(fmt.Sprintf(`#req-%s input[name=reason]`, id)), "not <b>this</b>"))
	do(t, ctx, "deny", chromedp.Click(chromedp.CSS(fmt.Sprintf(`#req-%s button[data-decision=deny]`, id))))
	s.mustBotMessage(t, "the denial in the chat", func(m telegramtest.Message) bool {
		return m.ID == held.ID && strings.Contains(m.Plain, "Denied by Asha") && strings.Contains(m.Plain, "Reason: not <b>this</b>")
	})
}

// TestDesksPageButtons: /desks in the group links to the Mini App, in an
// approver's private chat it opens it as a web app, and approvers' menu
// buttons open it.
func TestDesksPageButtons(t *testing.T) {
	t.Parallel()
	s := mustStart(t, map[string]string{"WEBAPP_URL": "https://desks.example.com/desks/", "WEBAPP_NAME": "desks"})
	s.tg.InjectText(asha, groupID, "/desks", 0)
	m := s.mustBotMessage(t, "/desks", func(m telegramtest.Message) bool { return strings.Contains(m.Plain, "main") && len(m.Keyboard) > 0 })
	if got, want := m.Keyboard[0][0], (telegramtest.Button{Text: "Open the desks page", URL: "https://t.me/" + telegramtest.BotUser.Username + "/desks"}); got != want {
		t.Errorf("/desks in the group: first button %+v, want %+v", got, want)
	}
	s.tg.InjectText(asha, asha.ID, "/desks", 0)
	deskbottest.EventuallyWithin(t, 15*time.Second, "/desks in a private chat", func() bool {
		for _, m := range s.tg.BotMessages(asha.ID) {
			if len(m.Keyboard) > 0 && m.Keyboard[0][0].WebApp == "https://desks.example.com/desks/" {
				return true
			}
		}
		return false
	})
	for _, u := range []telegramtest.User{asha, ravi} {
		deskbottest.EventuallyWithin(t, 15*time.Second, "the menu button", func() bool {
			mb, ok := s.tg.MenuButtonOf(u.ID)
			return ok && mb.Type == "web_app" && mb.WebApp == "https://desks.example.com/desks/"
		})
	}
	if _, ok := s.tg.MenuButtonOf(vik.ID); ok {
		t.Error("a non-approver got the menu button")
	}
}

// TestDesksPageFlattenAndPause: Flatten from the page needs its
// confirmation, acts once however often the confirmation is sent, closes
// the positions as /flatten does and tells the group; Pause and Resume
// switch the desk and tell the group.
func TestDesksPageFlattenAndPause(t *testing.T) {
	t.Parallel()
	s := startWithPage(t, nil)
	s.orderModel(t) // the desk is told of its flatten and answers
	if _, err := s.main.Broker.PlaceOrder(t.Context(), "main", deskbottest.NewKey(), deskbot.Order{Symbol: "NIFTY24DECFUT", Side: deskbot.Buy, Quantity: 50, Price: 24500}); err != nil {
		t.Fatal(err)
	}
	asks := initDataFor(asha, time.Now())
	if code, body, _ := s.pageCall(t, "POST", "a/flatten", asks, url.Values{"desk": {"main"}, "token": {"made-up"}}); code != 409 {
		t.Errorf("a flatten without its confirmation: %d %q", code, body)
	}
	code, body, _ := s.pageCall(t, "GET", "v/flatten?desk=main", asks, nil)
	i := strings.Index(body, `data-token="`)
	if code != 200 || i < 0 || !strings.Contains(body, "Yes, flatten main") {
		t.Fatalf("the confirmation: %d %q", code, body)
	}
	token := body[i+len(`data-token="`):]
	token = token[:strings.Index(token, `"`)]
	// Ravi cannot use Asha's confirmation.
	if code, _, _ := s.pageCall(t, "POST", "a/flatten", initDataFor(ravi, time.Now()), url.Values{"desk": {"main"}, "token": {token}}); code != 409 {
		t.Errorf("another approver used Asha's confirmation: %d", code)
	}
	var wg sync.WaitGroup
	codes := make([]int, 3)
	for n := range codes {
		wg.Go(func() {
			codes[n], _, _ = s.pageCall(t, "POST", "a/flatten", asks, url.Values{"desk": {"main"}, "token": {token}})
		})
	}
	wg.Wait()
	ok := 0
	for _, c := range codes {
		if c == 200 {
			ok++
		}
	}
	if ok != 1 {
		t.Errorf("three sends of one confirmation answered %v, want exactly one 200", codes)
	}
	book, err := s.main.Broker.Book(t.Context(), "main")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range book.Positions {
		if p.Quantity != 0 {
			t.Errorf("after the flatten: %+v", p)
		}
	}
	s.mustBotMessage(t, "the group told of the flatten", func(m telegramtest.Message) bool {
		return strings.Contains(m.Plain, "Flattened by Asha") && strings.Contains(m.Plain, "from the desks page")
	})
	if code, body, _ := s.pageCall(t, "POST", "a/pause", asks, url.Values{"desk": {"main"}}); code != 200 {
		t.Fatalf("pause: %d %q", code, body)
	}
	if st, _ := s.main.Store.DeskStatus(t.Context(), "main"); !st.Paused {
		t.Error("the desk is not paused")
	}
	s.mustBotMessage(t, "the group told of the pause", func(m telegramtest.Message) bool { return strings.HasPrefix(m.Plain, "Paused main (Asha") })
	if code, _, _ := s.pageCall(t, "POST", "a/resume", asks, url.Values{"desk": {"main"}}); code != 200 {
		t.Fatal("resume refused")
	}
	if st, _ := s.main.Store.DeskStatus(t.Context(), "main"); st.Paused {
		t.Error("the desk is still paused")
	}
	if code, _, _ := s.pageCall(t, "POST", "a/pause", asks, url.Values{"desk": {"nosuch"}}); code != 404 {
		t.Errorf("pausing an unknown desk answered %d", code)
	}
}
