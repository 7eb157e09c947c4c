package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/deskbot/deskbot/config"
	"github.com/deskbot/deskbot/demo"
	"github.com/deskbot/deskbot/deskbottest"
)

// mustDemo starts `deskbot demo` in-process as the command does, on the
// scripted desk model (MODEL_BASE_URL refuses), and stops it when the
// test ends. It needs nothing but Go: the demo runs the embedded Redis.
func mustDemo(t *testing.T) *demo.Run[*Main] {
	t.Helper()
	return mustDemoWith(t, nil)
}

// mustDemoWith is mustDemo with more variables in the environment.
func mustDemoWith(t *testing.T, extra map[string]string) *demo.Run[*Main] {
	t.Helper()
	logs := &syncBuffer{}
	environ := map[string]string{
		"MODEL_BASE_URL": "http://" + deskbottest.RefusedAddr(t) + "/v1",
		"LOG_LEVEL":      "debug",
		// Passed through by no demo: the demo's Redis is its own.
		"REDIS_URL": "redis://" + deskbottest.RefusedAddr(t),
	}
	for k, v := range extra {
		environ[k] = v
	}
	r, err := startDemo(t.Context(), environ, logWriter{t, logs})
	if err != nil {
		t.Fatalf("start the demo: %v", err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("close the demo: %v", err)
		}
		if strings.Contains(logs.String(), r.Main.Config.TelegramToken) || strings.Contains(logs.String(), config.TokenSecret(r.Main.Config.TelegramToken)) {
			t.Errorf("the demo's bot token reached the logs")
		}
	})
	if !r.Demo.Scripted {
		t.Fatal("the demo found a model server at a refused address")
	}
	if !strings.HasPrefix(r.Demo.URL, "http://127.0.0.1:") {
		t.Fatalf("the demo's page is at %s, want a loopback URL", r.Demo.URL)
	}
	return r
}

// logWriter keeps a demo's logs, and shows them with DESKBOT_TEST_LOGS=1.
type logWriter struct {
	t    *testing.T
	logs *syncBuffer
}

func (w logWriter) Write(p []byte) (int, error) {
	w.logs.Write(p)
	return testWriter{w.t}.Write(p)
}

// heldJS finds the chat page's message showing the held order.
const heldJS = `Array.from(document.querySelectorAll("#log .msg")).find(function(m){ return m.innerText.includes("wants to run place_order") && m.innerText.includes("INFY") })`

// TestDemoInBrowser plays one held call through the demo's chat in
// Chromium, as a newcomer does after `go run ./cmd/deskbot demo`: as an
// approver, tell the desk to buy; the order is held with its three
// buttons; the member's tap is refused with an alert; the other approver
// allows it once; the message shows it ran (told once: the desk adds no
// word about it), and the paper broker holds the position. The desks page then opens from the
// chat signed in as that approver, and shows it.
func TestDemoInBrowser(t *testing.T) {
	t.Parallel()
	r := mustDemo(t)
	ctx := mustBrowser(t) // closed before the demo stops

	do(t, ctx, "open the demo", chromedp.Navigate(r.Demo.URL))
	waitFor(t, ctx, "the three people", `document.querySelectorAll("#people .person").length === 3`)
	as := func(p demo.Person) {
		t.Helper()
		// A note of the page's may lie over the people: gone, as it goes
		// by itself after a few seconds.
		do(t, ctx, "dismiss the page's notes", chromedp.Evaluate[chromedp.Void](`document.getElementById("toast").hidden = true`))
		do(t, ctx, "speak as "+p.Name, chromedp.Click(chromedp.CSS(fmt.Sprintf(`#people .person[data-id="%d"]`, p.ID))))
		waitFor(t, ctx, p.Name+" chosen", fmt.Sprintf(`document.querySelector('#people .person[data-id="%d"]').getAttribute("aria-pressed") === "true"`, p.ID))
	}
	asha, ravi, vik := demo.People[0], demo.People[1], demo.People[2]

	as(asha)
	do(t, ctx, "tell the desk to buy",
		chromedp.SendKeys(chromedp.CSS("#text"), "/tell main buy 1 INFY"),
		chromedp.Click(chromedp.CSS("#send")))
	waitFor(t, ctx, "the held order with its buttons", `(function(){ var m = `+heldJS+`; return !!m && m.querySelectorAll(".kbtn").length === 5 })()`)
	if got, want := eval[string](t, ctx, `Array.from(`+heldJS+`.querySelectorAll(".kbtn")).map(function(b){ return b.textContent }).join(",")`), "Allow once,Always allow,Deny,Why?,Change…"; got != want {
		t.Errorf("buttons = %s, want %s", got, want)
	}
	id := eval[int](t, ctx, `Number(`+heldJS+`.dataset.id)`)
	allow := chromedp.CSS(fmt.Sprintf(`#log .msg[data-id="%d"] .kbrow .kbtn:first-child`, id))

	// The member taps Allow once: Telegram's alert, and nothing changes.
	as(vik)
	do(t, ctx, "the member taps Allow once", chromedp.Click(allow))
	waitFor(t, ctx, "the alert to the member", `!document.getElementById("alert").hidden && document.getElementById("alert-text").textContent.toLowerCase().includes("approver")`)
	do(t, ctx, "dismiss the alert", chromedp.Click(chromedp.CSS("#alert-ok")))
	if n := eval[int](t, ctx, ``+heldJS+`.querySelectorAll(".kbtn").length`); n != 5 {
		t.Fatalf("after the member's tap the held order has %d buttons, want 5", n)
	}

	// The other approver allows it once: it runs, on the paper broker.
	as(ravi)
	do(t, ctx, "Ravi taps Allow once", chromedp.Click(allow))
	waitFor(t, ctx, "the outcome in the chat", fmt.Sprintf(`(function(){ var m = document.querySelector('#log .msg[data-id="%d"]'); return !!m && m.innerText.includes("Allowed once by Ravi") && m.innerText.includes("Ran:") && m.querySelectorAll(".kbtn").length === 0 })()`, id))
	// The fill is told once, in the request's message: the desk's turn
	// that read the outcome (done before the next, asked for here) adds
	// no word about it.
	do(t, ctx, "ask for the book",
		chromedp.SendKeys(chromedp.CSS("#text"), "/tell main positions"),
		chromedp.Click(chromedp.CSS("#send")))
	waitFor(t, ctx, "the desk's book", `Array.from(document.querySelectorAll("#log .msg.bot")).some(function(m){ return !m.innerText.includes("wants to run") && m.innerText.includes("INFY") && m.innerText.includes("last") })`)
	if n := eval[int](t, ctx, `Array.from(document.querySelectorAll("#log .msg.bot")).filter(function(m){ return m.innerText.includes("· complete 1 @") }).length`); n != 1 {
		t.Errorf("the fill is told in %d messages, want 1 (the request's)", n)
	}
	book, err := r.Main.Broker.Book(t.Context(), demo.Desk)
	if err != nil {
		t.Fatal(err)
	}
	if len(book.Positions) != 1 || book.Positions[0].Symbol != "INFY" || book.Positions[0].Quantity != 1 {
		t.Errorf("paper book after the allow: %+v, want long 1 INFY", book.Positions)
	}

	// The desks page, opened from the chat: signed in as Ravi.
	href := eval[string](t, ctx, `document.getElementById("desks").href`)
	if !strings.HasSuffix(href, fmt.Sprintf("/desks?as=%d", ravi.ID)) {
		t.Fatalf("the desks link is %s, want one for Ravi", href)
	}
	do(t, ctx, "open the desks page", chromedp.Navigate(href))
	waitFor(t, ctx, "desk main on the desks page", `!!document.querySelector("#desk-main") && document.querySelector("#desk-main").innerText.includes("INFY")`)
	if n := eval[int](t, ctx, `document.querySelectorAll("#desk-main [data-ask=flatten], #desk-main [data-post=pause]").length`); n != 2 {
		t.Errorf("the desks page shows %d of Flatten and Pause to Ravi, an approver; want 2", n)
	}
}

// TestDemoChatDrawsNoMarkup: what people type and what the bot sends
// reach the demo's chat as text and Telegram's few tags, never as markup
// of the page: no element, handler or javascript: link from the chat.
func TestDemoChatDrawsNoMarkup(t *testing.T) {
	t.Parallel()
	r := mustDemo(t)
	ctx := mustBrowser(t)
	do(t, ctx, "open the demo", chromedp.Navigate(r.Demo.URL))
	waitFor(t, ctx, "the three people", `document.querySelectorAll("#people .person").length === 3`)

	// A person's words, as Vik types them.
	do(t, ctx, "speak as Vik", chromedp.Click(chromedp.CSS(`#people .person[data-id="103"]`)))
	do(t, ctx, "send markup",
		chromedp.SendKeys(chromedp.CSS("#text"), `<img src=x id=pwn onerror="window.pwned=1"><script>window.pwned=2</script>`),
		chromedp.Click(chromedp.CSS("#send")))
	// The bot's words, as Telegram's HTML allows them: a link whose
	// target is script.
	msg, _ := json.Marshal(map[string]string{"chat_id": fmt.Sprint(demo.ChatID), "parse_mode": "HTML",
		"text": `<b>bold</b> <a href="javascript:window.pwned=3">tap me</a> <a href="https://example.com/">ok</a>`})
	resp, err := http.Post(r.Main.Config.TelegramAPIURL+"/bot"+r.Main.Config.TelegramToken+"/sendMessage", "application/json", bytes.NewReader(msg))
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("sendMessage: %d %s", resp.StatusCode, answer)
	}
	waitFor(t, ctx, "both messages drawn", `document.getElementById("log").innerText.includes("<img src=x") && document.getElementById("log").innerText.includes("tap me")`)
	do(t, ctx, "tap the script link", chromedp.Evaluate[chromedp.Void](`Array.from(document.querySelectorAll("#log .body *")).forEach(function(e){ e.click && e.click() })`))
	if got := eval[string](t, ctx, `String(window.pwned)`); got != "undefined" {
		t.Errorf("the chat ran script: window.pwned = %s", got)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("#log img, #log script, #pwn, #log [onerror], #log a[href^='javascript']").length`); n != 0 {
		t.Errorf("the chat holds %d elements from the chat's markup", n)
	}
	if got, want := eval[string](t, ctx, `Array.from(document.querySelectorAll("#log .msg.bot .body b")).map(function(b){ return b.textContent }).join(",")`), "bold"; !strings.Contains(got, want) {
		t.Errorf("the bot's <b> drawn as %q, want %q", got, want)
	}
	if got := eval[string](t, ctx, `(document.querySelector("#log .msg.bot .body a") || {}).href || ""`); got != "https://example.com/" {
		t.Errorf("the bot's https link drawn as %q", got)
	}
}
