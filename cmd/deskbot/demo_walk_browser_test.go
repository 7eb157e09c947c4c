package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/deskbot/deskbot/demo"
)

// The README's walk through the demo, in Chromium at a phone's size: the
// desks of docs/desks.example.toml, four eyes above ₹5,00,000 and a hard
// limit at ₹20,00,000 an order.

// phoneShot saves what the phone's screen shows now as name.png in dir.
func phoneShot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	img, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), img, 0o644); err != nil {
		t.Fatal(err)
	}
}

// chatSays is true when the page showed text to the person who tapped,
// as an alert or a passing note.
func chatSays(text string) string {
	return fmt.Sprintf(`(function(){ var a = document.getElementById("alert"), n = document.getElementById("toast");
		return (!a.hidden && document.getElementById("alert-text").textContent.includes(%[1]q)) || (!n.hidden && n.textContent.includes(%[1]q)) })()`, text)
}

// TestDemoWalkInBrowser plays the README's demo walk: Asha tells desk main
// to buy 400 INFY (about ₹6,60,000 at its limit, above the example's
// two_approvers_above of ₹5,00,000); the held order says it needs two
// approvers; Asha's Allow once counts one and a second tap of hers
// counts nothing; Why? gets the desk's reason under the request; Ravi's
// Allow once runs it, once. Then 2,000 INFY (₹33,00,000) is refused by
// the hard limit before anyone is asked: no request, the desk says why.
// With DESKBOT_SCREENSHOTS=1 it refreshes docs/screenshots/held-order.png
// and demo-two-approvers.png.
func TestDemoWalkInBrowser(t *testing.T) {
	t.Parallel()
	// The walk runs no command: no terminal, so the chat (and its
	// pictures) show no word about the machine's sandbox.
	r := mustDemoWith(t, map[string]string{"SANDBOX": "none"})
	ctx := mustBrowser(t)
	dir := screenshotDir(t)

	do(t, ctx, "open the demo", chromedp.Navigate(r.Demo.URL))
	waitFor(t, ctx, "the three people", `document.querySelectorAll("#people .person").length === 3`)
	quiet := func() {
		t.Helper()
		do(t, ctx, "dismiss the page's notes", chromedp.Evaluate[chromedp.Void](`document.getElementById("alert").hidden = true; document.getElementById("toast").hidden = true`))
	}
	as := func(p demo.Person) {
		t.Helper()
		quiet()
		do(t, ctx, "speak as "+p.Name, chromedp.Click(chromedp.CSS(fmt.Sprintf(`#people .person[data-id="%d"]`, p.ID))))
		waitFor(t, ctx, p.Name+" chosen", fmt.Sprintf(`document.querySelector('#people .person[data-id="%d"]').getAttribute("aria-pressed") === "true"`, p.ID))
	}
	say := func(text string) {
		t.Helper()
		do(t, ctx, "send "+text, chromedp.SendKeys(chromedp.CSS("#text"), text), chromedp.Click(chromedp.CSS("#send")))
	}
	asha, ravi := demo.People[0], demo.People[1]

	// 1. The order, held for two approvers.
	as(asha)
	say("/tell main buy 400 INFY")
	held := `Array.from(document.querySelectorAll("#log .msg")).find(function(m){ return m.innerText.includes("wants to run place_order") && m.innerText.includes("BUY 400 INFY") })`
	waitFor(t, ctx, "the held order with its buttons", `(function(){ var m = `+held+`; return !!m && m.querySelectorAll(".kbtn").length > 0 })()`)
	id := eval[int](t, ctx, `Number(`+held+`.dataset.id)`)
	msg := fmt.Sprintf(`document.querySelector('#log .msg[data-id="%d"]')`, id)
	text := func() string { return eval[string](t, ctx, msg+`.innerText`) }
	if got := text(); !strings.Contains(got, "needs 2 approvers") || !strings.Contains(got, "₹6,60,000.00") {
		t.Errorf("the held order reads:\n%s\nwant it to need 2 approvers for ₹6,60,000.00", got)
	}
	tap := func(label string) {
		t.Helper()
		do(t, ctx, "tap "+label, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`Array.from(%s.querySelectorAll(".kbtn")).find(function(b){ return b.textContent === %q }).click()`, msg, label)))
	}
	quiet()
	do(t, ctx, "show the held order", chromedp.Evaluate[chromedp.Void](msg+`.scrollIntoView({block: "end"})`))
	phoneShot(t, ctx, dir, "held-order")

	// 2. Asha allows: one of two. Her second tap counts nothing.
	tap("Allow once")
	waitFor(t, ctx, "Asha's approval counted", `(function(){ var m = `+msg+`; return m.innerText.includes("Asha ✓") && m.querySelectorAll(".kbtn").length > 0 })()`)
	waitFor(t, ctx, "the chat says it needs one more", chatSays("it needs one more"))
	quiet()
	tap("Allow once")
	waitFor(t, ctx, "a second tap of hers refused", chatSays("You already approved; it needs one more."))
	quiet()

	// 3. Why? before Ravi decides: the desk's reason, under the request.
	as(ravi)
	tap("Why?")
	waitFor(t, ctx, "the desk's reason", `Array.from(document.querySelectorAll("#log .msg.bot")).some(function(m){ return m.innerText.includes("Asha told me") && m.innerText.includes("buy 400 INFY") && m.innerText.includes("If it is denied") })`)
	if book, err := r.Main.Broker.Book(t.Context(), demo.Desk); err != nil || len(book.Positions) != 0 {
		t.Fatalf("before the second approval the book is %+v (%v), want empty", book.Positions, err)
	}

	// 4. Ravi allows: the order runs, once.
	tap("Allow once")
	waitFor(t, ctx, "the outcome in the chat", `(function(){ var m = `+msg+`; return m.innerText.includes("Ravi") && m.innerText.includes("Ran:") && m.querySelectorAll(".kbtn").length === 0 })()`)
	book, err := r.Main.Broker.Book(t.Context(), demo.Desk)
	if err != nil {
		t.Fatal(err)
	}
	if len(book.Positions) != 1 || book.Positions[0].Symbol != "INFY" || book.Positions[0].Quantity != 400 {
		t.Errorf("paper book after two approvals: %+v, want long 400 INFY", book.Positions)
	}
	quiet()
	do(t, ctx, "show the walk", chromedp.Evaluate[chromedp.Void](msg+`.scrollIntoView({block: "start"})`))
	phoneShot(t, ctx, dir, "demo-two-approvers")

	// 5. Above the hard limit: refused before anyone is asked.
	as(asha)
	say("/tell main buy 2000 INFY")
	waitFor(t, ctx, "the desk says the limit refused it", `Array.from(document.querySelectorAll("#log .msg.bot")).some(function(m){ return m.innerText.includes("A hard limit of this desk refused place_order before anyone was asked") && m.innerText.includes("20,00,000") })`)
	if n := eval[int](t, ctx, `Array.from(document.querySelectorAll("#log .msg")).filter(function(m){ return m.innerText.includes("BUY 2,000 INFY") || m.innerText.includes("BUY 2000 INFY") }).length`); n != 0 {
		t.Errorf("the refused order reached the chat as a request (%d messages)", n)
	}
	if got := eval[string](t, ctx, `document.getElementById("log").innerText`); strings.Contains(got, "Do not split") || strings.Contains(got, "End this turn") {
		t.Errorf("the chat shows words written for the model:\n%s", got)
	}
	if book, err := r.Main.Broker.Book(t.Context(), demo.Desk); err != nil || len(book.Positions) != 1 || book.Positions[0].Quantity != 400 {
		t.Errorf("after the refusal the book is %+v (%v), want long 400 INFY still", book.Positions, err)
	}
}
