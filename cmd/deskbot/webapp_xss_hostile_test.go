package main

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/model/modeltest"
)

// A desk's text reaches the desks page in more places than a request's
// arguments: its tool calls and their output on its own page, and a held
// call's arguments in the audit trail. In a real browser none of it runs
// script or adds an element, and it reads as the text it is.
func TestHostileDeskTextOnDeskPageAndAudit(t *testing.T) {
	t.Parallel()
	const payload = `<img src=x id=pwn onerror="window.pwned=1"><script>window.pwned=2</script><svg id=pwn2 onload="window.pwned=3"></svg>`
	s := startWithPage(t, map[string]string{"SANDBOX": "none"})
	ctx := mustBrowser(t) // closed before the service stops
	s.model.SetHandler(func(r modeltest.Request) modeltest.Reply {
		last := r.Last()
		switch {
		case last.Role == "tool":
			return modeltest.Text("done")
		case strings.Contains(last.Text, "print"):
			return modeltest.Calls(modeltest.ToolCall{Name: "bash", Arguments: `{"command":"printf '%s' '` + strings.ReplaceAll(payload, `"`, `\"`) + `'"}`})
		case strings.Contains(last.Text, "say"):
			return modeltest.Calls(modeltest.ToolCall{Name: "send_message", Arguments: `{"text":"` + strings.ReplaceAll(payload, `"`, `\"`) + `"}`})
		}
		return modeltest.Text("ok")
	})
	s.tg.InjectText(asha, groupID, "/tell main print", 0)
	s.mustBotMessage(t, "the desk done printing", func(m telegramtest.Message) bool { return strings.Contains(m.Plain, "done") })
	s.tg.InjectText(asha, groupID, "/tell main say", 0)
	s.mustBotMessage(t, "the hostile message held", func(m telegramtest.Message) bool {
		return len(m.Keyboard) > 0 && strings.Contains(m.Plain, "send_message")
	})

	clean := func(where string) {
		t.Helper()
		time.Sleep(300 * time.Millisecond) // an onerror or onload would have fired by now
		if v := eval[string](t, ctx, `String(window.pwned)`); v != "undefined" {
			t.Errorf("%s: the desk's text ran script: window.pwned = %s", where, v)
		}
		if n := eval[int](t, ctx, `document.querySelectorAll("#view script, #view img, #pwn, #pwn2").length`); n != 0 {
			t.Errorf("%s: the desk's text added %d elements", where, n)
		}
	}
	do(t, ctx, "open the page", chromedp.Navigate(s.pageURL(initDataFor(asha, time.Now()))))
	waitFor(t, ctx, "the desks", `!!document.querySelector("#desk-main")`)
	do(t, ctx, "open desk main", chromedp.Click(chromedp.CSS(`[data-view="desk/main"]`)))
	waitFor(t, ctx, "the recent calls", `!!document.querySelector(".call pre.result")`)
	clean("desk page")
	if got := eval[string](t, ctx, `Array.from(document.querySelectorAll(".call pre.result")).map(e => e.textContent).join("\n")`); !strings.Contains(got, "<script>window.pwned=2</script>") {
		t.Errorf("the bash output is not shown as text: %q", got)
	}
	do(t, ctx, "open Audit", chromedp.Click(chromedp.CSS(`#tabs [data-view=audit]`)))
	waitFor(t, ctx, "the audit trail", `!!document.querySelector(".trail .detail")`)
	clean("audit")
	if got := eval[string](t, ctx, `Array.from(document.querySelectorAll(".trail .detail")).map(e => e.textContent).join("\n")`); !strings.Contains(got, "window.pwned=2") {
		t.Errorf("the held call's arguments are not in the audit as text: %q", got)
	}
}
