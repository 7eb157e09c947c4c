package main

import (
	"context"
	"github.com/deskbot/deskbot/deskbottest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/deskbot/deskbot"
)

// brokenWordsJS lists every word of the view's table cells that the
// browser laid out over more than one line. A word here is what a reader
// takes in at once (a price, a symbol, a time); a word cut in two, as
// "24,512.5" over "0", reads as two numbers. The audit trail's details
// are left out: they are a desk's free text, clipped, and wrap anywhere
// so that one long word cannot widen the page.
const brokenWordsJS = `(function(){
  var bad = [];
  document.querySelectorAll("#view td, #view th").forEach(function(cell){
    var w = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (var n = w.nextNode(); n; n = w.nextNode()) {
      if (n.parentElement.closest(".detail")) { continue; }
      var re = /\S+/g, m;
      while ((m = re.exec(n.data))) {
        var r = document.createRange();
        r.setStart(n, m.index);
        r.setEnd(n, m.index + m[0].length);
        var rects = Array.from(r.getClientRects()).filter(function(b){ return b.width > 0; });
        if (rects.length < 2) { continue; }
        var tops = rects.map(function(b){ return b.top; });
        // Pieces of one line share a top, give or take a fallback font's
        // rounding; a second line starts at least half a line lower.
        if (Math.max.apply(null, tops) - Math.min.apply(null, tops) >= rects[0].height / 2) {
          bad.push(m[0] + " (in " + cell.closest("table").className + ")");
        }
      }
    }
  });
  return bad;
})()`

// mustWholeWords fails the test for each word of the view's tables that
// is split over two lines, and if the page is wider than the phone.
func mustWholeWords(t *testing.T, ctx context.Context, view string, width int) {
	t.Helper()
	if got := eval[[]string](t, ctx, brokenWordsJS); len(got) != 0 {
		t.Errorf("%s at %d px: words split over two lines: %q", view, width, got)
	}
	if got := eval[int](t, ctx, `document.documentElement.scrollWidth`); got > width {
		t.Errorf("%s: the page is %d px wide on a %d px phone", view, got, width)
	}
}

// TestDesksPageOnANarrowPhone opens the page on a small phone (360×740 at
// twice the pixels) and checks that no price, P&L, symbol or time in its
// tables is broken over two lines, that a desk's positions fit the screen
// without scrolling sideways, and that a desk card names its state once.
func TestDesksPageOnANarrowPhone(t *testing.T) {
	t.Parallel()
	const width, height = 360, 740
	s := startWithPage(t, nil)
	ctx := mustBrowser(t) // closed before the service stops
	do(t, ctx, "a narrow phone", chromedp.EmulateViewport(width, height, chromedp.EmulateScale(2)))
	s.orderModel(t)
	// Long symbols and five-figure prices, as a futures desk holds.
	for _, o := range []deskbot.Order{
		{Symbol: "NIFTY24DECFUT", Side: deskbot.Buy, Quantity: 75, Price: 24512.5},
		{Symbol: "BANKNIFTY24DECFUT", Side: deskbot.Sell, Quantity: 15, Price: 52104.75},
		{Symbol: "RELIANCE", Side: deskbot.Buy, Quantity: 100, Price: 1288.5},
		{Symbol: "RELIANCE", Side: deskbot.Sell, Quantity: 40, Price: 1279.25},
	} {
		if _, err := s.main.Broker.PlaceOrder(t.Context(), "main", deskbottest.NewKey(), throughMarket(t, s.main.Broker, o)); err != nil {
			t.Fatal(err)
		}
	}
	s.holdOrder(t, "buy nifty", "NIFTY24DECFUT")

	do(t, ctx, "open the page", chromedp.Navigate(s.pageURL(initDataFor(asha, time.Now()))))
	waitFor(t, ctx, "the desks", `!!document.querySelector("#desk-main table.positions") && !!document.querySelector("#desk-fno")`)
	mustWholeWords(t, ctx, "Desks", width)
	mustPositionsFit(t, ctx, "Desks")
	for desk, state := range map[string]string{"main": "waiting for approval", "fno": "idle"} {
		card := eval[string](t, ctx, `document.querySelector("#desk-`+desk+`").innerText`)
		if got, want := strings.Count(card, state), 1; got != want {
			t.Errorf("desk %s's card says %q %d times, want %d:\n%s", desk, state, got, want, card)
		}
	}

	do(t, ctx, "open desk main", chromedp.Click(chromedp.CSS(`#desk-main a.deskname`)))
	waitFor(t, ctx, "desk main's trades", `!!document.querySelector(".trades") && !!document.querySelector(".deskpage table.positions")`)
	mustWholeWords(t, ctx, "A desk", width)
	mustPositionsFit(t, ctx, "A desk")
	card := eval[string](t, ctx, `document.querySelector("#desk-main").innerText`)
	if got, want := strings.Count(card, "waiting for approval"), 1; got != want {
		t.Errorf("desk main's page says its state %d times, want %d:\n%s", got, want, card)
	}

	do(t, ctx, "open Audit", chromedp.Click(chromedp.CSS(`#tabs [data-view=audit]`)))
	waitFor(t, ctx, "audit", `!!document.querySelector("table.trail")`)
	mustWholeWords(t, ctx, "Audit", width)
}

// mustPositionsFit fails the test if a positions table is wider than its
// card's content: its P&L would then be out of sight until scrolled to.
func mustPositionsFit(t *testing.T, ctx context.Context, view string) {
	t.Helper()
	got := eval[[]int](t, ctx, `Array.from(document.querySelectorAll("table.positions")).map(function(t){ var c = t.closest(".card"); return Math.ceil(t.getBoundingClientRect().right - (c.getBoundingClientRect().right - parseFloat(getComputedStyle(c).paddingRight))); })`)
	for _, over := range got {
		if over > 0 {
			t.Errorf("%s: a positions table runs %d px past its card", view, over)
		}
	}
}
