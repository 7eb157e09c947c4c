package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/deskbot/deskbot/bot/telegramtest"
)

// TestGrantConfirmOnThePageInBrowser: Always allow on an order from the
// page grants nothing until confirmed; the confirmation says the desk, the
// tool, the cap (GRANT_MAX_NOTIONAL) and the end (GRANT_TTL), under a
// button styled unlike Allow once; confirmed, it decides through the one
// flow (the chat's message shows the outcome) and Grants shows the cap and
// end. Its screenshot is docs/screenshots/grant-confirm.png.
func TestGrantConfirmOnThePageInBrowser(t *testing.T) {
	t.Parallel()
	s := startWithPage(t, map[string]string{"GRANT_TTL": "2h", "GRANT_MAX_NOTIONAL": "2000000"})
	ctx := mustBrowser(t)
	s.orderModel(t)
	dir := screenshotDir(t)
	held, id := s.holdOrder(t, "buy nifty", "NIFTY24DECFUT")

	do(t, ctx, "open the page", chromedp.Navigate(s.pageURL(initDataFor(asha, time.Now()))))
	waitFor(t, ctx, "the desks", `!!document.querySelector("#desk-main")`)
	do(t, ctx, "open Requests", chromedp.Click(chromedp.CSS(`#tabs [data-view=requests]`)))
	waitFor(t, ctx, "the held order", fmt.Sprintf(`!!document.getElementById("req-%s")`, id))
	do(t, ctx, "Always allow", chromedp.Click(chromedp.CSS(fmt.Sprintf(`#req-%s button[data-ask=grant]`, id))))
	waitFor(t, ctx, "the grant's confirmation", `!!document.querySelector("#dialog:not([hidden]) .grant-confirm")`)
	got := eval[string](t, ctx, `document.querySelector("#dialog .grant-confirm").innerText`)
	for _, want := range []string{"Always allow place_order for desk main?", "orders up to ₹20,00,000.00 of exposure each and over the India day, until ", "Larger orders are still held."} {
		if !strings.Contains(got, want) {
			t.Errorf("confirmation lacks %q:\n%s", want, got)
		}
	}
	if bg, allow := eval[string](t, ctx, `getComputedStyle(document.querySelector("#dialog button.grant")).backgroundColor`),
		eval[string](t, ctx, fmt.Sprintf(`getComputedStyle(document.querySelector("#req-%s button[data-decision=allow_once]")).backgroundColor`, id)); bg == allow {
		t.Errorf("the grant's button looks like Allow once (%s)", bg)
	}
	if gs, _ := s.main.Gate.Grants(t.Context()); len(gs) != 0 {
		t.Fatalf("asking to confirm granted %+v", gs)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // 100: PNG
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "grant-confirm.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}

	do(t, ctx, "confirm the grant", chromedp.Click(chromedp.CSS(`#dialog button.grant`)))
	waitFor(t, ctx, "the page's answer", `document.getElementById("toast").textContent.includes("Always allowed; running")`)
	s.mustBotMessage(t, "the chat message edited with the outcome", func(m telegramtest.Message) bool {
		return m.ID == held.ID && len(m.Keyboard) == 0 && strings.Contains(m.Plain, "Always allowed by Asha")
	})
	gs, err := s.main.Gate.Grants(t.Context())
	if err != nil || len(gs) != 1 || gs[0].Limit != 2000000 || gs[0].ExpiresAt.IsZero() {
		t.Fatalf("grants = %+v (%v); want one up to ₹20 lakh with an end", gs, err)
	}
	do(t, ctx, "open Grants", chromedp.Click(chromedp.CSS(`#tabs [data-view=grants]`)))
	waitFor(t, ctx, "grants", `!!document.querySelector("section.grants .grant")`)
	if got := eval[string](t, ctx, `document.querySelector("section.grants").innerText`); !strings.Contains(got, "Covers orders up to ₹20,00,000.00 of exposure each and over the India day, until ") {
		t.Errorf("Grants page lacks the cap and end:\n%s", got)
	}

	// The audit in words: decisions as people say them, how long a call
	// took rounded, none of the trail's codes.
	s.mustRanOnce(t, id)
	do(t, ctx, "open Audit", chromedp.Click(chromedp.CSS(`#tabs [data-view=audit]`)))
	waitFor(t, ctx, "audit", `!!document.querySelector("table.trail") && document.querySelector("table.trail").innerText.includes("Ran")`)
	trail := eval[string](t, ctx, `document.querySelector("table.trail").innerText`)
	if !strings.Contains(trail, "Always allowed") || !regexp.MustCompile(`took \d+(\.\d)? (ms|s)\b`).MatchString(trail) {
		t.Errorf("audit lacks the decision or the run in words:\n%s", trail)
	}
	if bad := regexp.MustCompile(`always_allow|allow_once|\d+\.\d{3,}m?s`).FindString(trail); bad != "" {
		t.Errorf("audit shows %q, a code or a raw duration:\n%s", bad, trail)
	}
}
