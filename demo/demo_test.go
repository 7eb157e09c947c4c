package demo

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/model/modeltest"
	"github.com/deskbot/deskbot/webapp"
)

func mustStart(t *testing.T) *Demo {
	t.Helper()
	d, err := Start(t.Context(), Options{DesksPage: "http://127.0.0.1:1/desks/", ProbeTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return d
}

func post(t *testing.T, d *Demo, path, body string, header map[string]string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, d.URL+strings.TrimPrefix(path, "/"), strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// The page acts only for itself: another site open in the same browser
// (a cross-site post, a DNS name rebound to loopback) cannot speak or tap
// as an approver; the page itself can.
func TestPageRefusesOtherSites(t *testing.T) {
	d := mustStart(t)
	send := `{"as":101,"text":"/whoami"}`
	tests := []struct {
		name   string
		header map[string]string
		want   int
	}{
		{"without the page's header", nil, http.StatusForbidden},
		{"from another site", map[string]string{"X-Deskbot-Demo": "1", "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"to another host name", map[string]string{"X-Deskbot-Demo": "1", "Host": "evil.example:80"}, http.StatusMisdirectedRequest},
		{"from the page", map[string]string{"X-Deskbot-Demo": "1", "Sec-Fetch-Site": "same-origin"}, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := post(t, d, "/api/send", send, tt.header); got != tt.want {
				t.Errorf("status %d, want %d", got, tt.want)
			}
		})
	}
	if got, want := len(d.tg.ChatMessages(ChatID)), 1; got != want {
		t.Errorf("%d messages reached the group, want %d (the page's own)", got, want)
	}
}

// A tap names a button the message shows; the page forges no callback.
func TestTapOnlyShownButtons(t *testing.T) {
	d := mustStart(t)
	id := d.tg.InjectText(telegramtest.User{ID: 101, FirstName: "Asha"}, ChatID, "hello", 0)
	body, _ := json.Marshal(map[string]any{"as": 101, "message": id, "data": "\fa1|forged"})
	if got, want := post(t, d, "/api/tap", string(body), map[string]string{"X-Deskbot-Demo": "1"}), http.StatusConflict; got != want {
		t.Errorf("a tap on a button nobody sees: status %d, want %d", got, want)
	}
	if n := d.tg.PendingUpdates(); n != 1 {
		t.Errorf("%d updates queued, want only the message", n)
	}
	body, _ = json.Marshal(map[string]any{"as": 999, "text": "hi"})
	if got, want := post(t, d, "/api/send", string(body), map[string]string{"X-Deskbot-Demo": "1"}), http.StatusBadRequest; got != want {
		t.Errorf("someone outside the team: status %d, want %d", got, want)
	}
}

func TestStartRefusesOtherThanLoopback(t *testing.T) {
	if _, err := Start(t.Context(), Options{Addr: "0.0.0.0:0"}); err == nil {
		t.Fatal("the demo served on every interface")
	}
}

func openAIRequest(messages ...map[string]any) modeltest.Request {
	return modeltest.Request{API: modeltest.APIOpenAI, Body: map[string]any{"messages": anySlice(messages)}}
}

func anySlice(ms []map[string]any) []any {
	out := make([]any, len(ms))
	for i, m := range ms {
		out[i] = m
	}
	return out
}

// personSays is a person's words as the harness hands them to the desk.
func personSays(name, said string) map[string]any {
	return map[string]any{"role": "user", "content": "[14:02 India time] Message from " + name + ":\n" + said}
}

// notice is the harness's words to the desk (a trigger of its own).
func notice(text string) map[string]any {
	return map[string]any{"role": "user", "content": "[14:02 India time] " + text}
}

// called is the desk's call and the harness's result of it.
func called(tool, args, result string) []map[string]any {
	return []map[string]any{
		{"role": "assistant", "content": "", "tool_calls": []any{map[string]any{"id": "c1", "type": "function", "function": map[string]any{"name": tool, "arguments": args}}}},
		{"role": "tool", "tool_call_id": "c1", "content": result},
	}
}

// The scripted desk turns a person's words into the call they name, and
// nothing else into a call: the harness's notices (a flatten, a halt, an
// order's update, a scheduled task) end its turn without a word, so a
// notice can never make it trade or flatten again.
func TestScriptedDesk(t *testing.T) {
	tests := []struct {
		name     string
		messages []map[string]any
		wantCall string
		wantArgs string
		wantText string // "" with no wantCall: no words at all
	}{
		{"a buy", []map[string]any{personSays("Asha", "buy 1 INFY")}, "place_order", `{"price":1650,"quantity":1,"side":"buy","symbol":"INFY"}`, ""},
		{"a sell at a price", []map[string]any{personSays("Ravi", "sell 5 tcs at 4100.5")}, "place_order", `{"price":4100.5,"quantity":5,"side":"sell","symbol":"TCS"}`, ""},
		{"a symbol without a start price", []map[string]any{personSays("Asha", "Buy 2 ACME")}, "place_order", `{"price":1100,"quantity":2,"side":"buy","symbol":"ACME"}`, ""},
		{"positions", []map[string]any{personSays("Vik", "show me the positions")}, "get_positions", `{}`, ""},
		{"flatten", []map[string]any{personSays("Asha", "flatten everything")}, "flatten_desk", `{}`, ""},
		{"words it does not know", []map[string]any{personSays("Asha", "good morning")}, "", "", scriptHelp},

		{"the user flattened the desk", []map[string]any{notice("The user flattened this desk at 14:02 India time: closed long 10 INFY at 1,604.36 (flatten_desk ran)")}, "", "", ""},
		{"the harness squared it off", []map[string]any{notice("The harness squared off this desk at 15:15 India time (its square_off_at): flatten the desk: sold 10 INFY. Until the next trading day, orders that open or grow a position are refused.")}, "", "", ""},
		{"a risk rule halted it", []map[string]any{notice("The harness halted this desk at 14:02 India time: its risk rule max_daily_loss tripped (P&L -₹50,100.00). Nothing you hold can run until an approver resumes the desk; when you are resumed, start from the book as it is then.")}, "", "", ""},
		{"an order's update names an order", []map[string]any{notice("Your order 1234 (BUY 10 INFY LIMIT @ 1,650.00) is complete: 10 filled at 1,604.36 on average.")}, "", "", ""},
		{"a scheduled task", []map[string]any{notice("Scheduled task (10 15 * * 1-5):\nFive minutes to your flat-by time: close what is open and report the day's P&L.")}, "", "", ""},

		{"a held call ran", []map[string]any{notice("Answer to your permission request:\nThe user allowed place_order (request x), and the harness ran it with the arguments you gave. It was run:\nFilled: bought 1 INFY")}, "", "", ""},
		{"a held call was denied", []map[string]any{notice("Answer to your permission request:\nThe user denied place_order (request x), so it was not run.")}, "", "", "Understood"},
		{"a held call lapsed", []map[string]any{notice("Your permission request lapsed:\nRequest x for place_order lapsed at 14:07 India time without an answer, so it was not run. Ask the user again only if it still matters.")}, "", "", "Nobody answered in time"},

		{"its call was held", append([]map[string]any{personSays("Asha", "buy 400 INFY")}, called("place_order", `{"price":1650,"quantity":400,"side":"buy","symbol":"INFY"}`,
			"place_order needs the user's permission, so it was not run. Request 1f3a was sent to them and lapses at 14:07 India time. End this turn now; do not retry place_order or reach the same result another way. If they allow it, the harness runs exactly this call and tells you the result in a new message.")...), "", "", ""},
		{"a hard limit refused its call", append([]map[string]any{personSays("Asha", "buy 2000 INFY")}, called("place_order", `{"price":1650,"quantity":2000,"side":"buy","symbol":"INFY"}`,
			"place_order was refused by a hard limit of this desk, so it was not run and nobody was asked: its exposure ₹33,00,000.00 is above max_order_notional ₹20,00,000.00. Do not split it into smaller calls or reach the same result another way; tell the user if it still matters.")...), "", "",
			"A hard limit of this desk refused place_order before anyone was asked: its exposure ₹33,00,000.00 is above max_order_notional ₹20,00,000.00. I will not split it or try another way."},
		{"a halt stopped its call", append([]map[string]any{personSays("Asha", "buy 1 INFY")}, called("place_order", `{"price":1650,"quantity":1,"side":"buy","symbol":"INFY"}`,
			"place_order was not run: a risk rule halted this desk. Nothing runs until an approver resumes it. End this turn.")...), "", "",
			"That did not go through: place_order was not run: a risk rule halted this desk. Nothing runs until an approver resumes it."},
		{"a quote", []map[string]any{personSays("Asha", "quote INFY")}, "get_quote", `{"symbols":["INFY"]}`, ""},
		{"a watch", []map[string]any{personSays("Asha", "watch INFY above 1,600")}, "watch_price", `{"direction":"above","level":1600,"note":"the team asked: INFY above 1,600","symbol":"INFY"}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := scriptedDesk(openAIRequest(tt.messages...))
			if tt.wantCall != "" {
				if len(got.ToolCalls) != 1 || got.ToolCalls[0].Name != tt.wantCall || got.ToolCalls[0].Arguments != tt.wantArgs {
					t.Errorf("reply %+v, want %s %s", got, tt.wantCall, tt.wantArgs)
				}
				return
			}
			if len(got.ToolCalls) != 0 {
				t.Fatalf("reply calls %+v, want no call", got.ToolCalls)
			}
			if tt.wantText == "" && got.Text != "" {
				t.Errorf("reply %q, want no words", got.Text)
			}
			if !strings.Contains(got.Text, tt.wantText) {
				t.Errorf("reply %q, want words with %q", got.Text, tt.wantText)
			}
			for _, forModel := range []string{"End this turn", "Do not split", "tell the user", "Tell the user"} {
				if strings.Contains(got.Text, forModel) {
					t.Errorf("reply %q passes on words written for the model (%q)", got.Text, forModel)
				}
			}
		})
	}
}

// Asked why before a decision, the scripted desk gives its reason from
// the turn that made the held call: who asked, the order and its
// exposure, the risk, what it does if denied; never its help text. Asked
// about a call whose turn it cannot read, it says so.
func TestScriptedDeskSaysWhy(t *testing.T) {
	question := notice("The team asks why you want to run place_order (request 1f3a9c2e) before they decide. Explain in a few lines what you expect from it, its risk, and what you will do if it is denied. You cannot call tools in this turn.")
	history := []map[string]any{
		personSays("Asha", "buy 400 INFY"),
		{"role": "assistant", "content": `(Tools I used: place_order {"price":1650,"quantity":400,"side":"buy","symbol":"INFY"} -> held for the user's permission)` + "\n(No reply.)"},
	}
	got := scriptedDesk(openAIRequest(append(history, question)...))
	if len(got.ToolCalls) != 0 {
		t.Fatalf("asked why, the desk calls %+v", got.ToolCalls)
	}
	for _, want := range []string{`Asha told me "buy 400 INFY".`, "₹6,60,000.00", "400 × ₹1,650.00", "a fall in INFY's price", "If it is denied, I do nothing"} {
		if !strings.Contains(got.Text, want) {
			t.Errorf("why = %q, want it to say %q", got.Text, want)
		}
	}
	if strings.Contains(got.Text, scriptHelp) {
		t.Errorf("why = %q: help text, not a reason", got.Text)
	}

	got = scriptedDesk(openAIRequest(question))
	if len(got.ToolCalls) != 0 || !strings.Contains(got.Text, "If it is denied, I do nothing") || strings.Contains(got.Text, scriptHelp) {
		t.Errorf("why without the turn that asked = %+v, want a plain reason, no help text", got)
	}
}

// The desks page opens signed in as the person chosen: initData in the
// fragment, signed with the fake bot's token as Telegram signs it.
func TestDesksPageSignedIn(t *testing.T) {
	d := mustStart(t)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(d.URL + "desks?as=103")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("GET /desks: %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if got, want := loc.Scheme+"://"+loc.Host+loc.Path, "http://127.0.0.1:1/desks/"; got != want {
		t.Errorf("opens %s, want %s", got, want)
	}
	if loc.RawQuery != "" {
		t.Errorf("the sign-in travels in the query %q, sent to servers; want it in the fragment only", loc.RawQuery)
	}
	frag, err := url.ParseQuery(loc.EscapedFragment())
	if err != nil {
		t.Fatal(err)
	}
	v, err := webapp.ValidateInitData(frag.Get("tgWebAppData"), d.token, time.Hour, time.Now())
	if err != nil {
		t.Fatalf("the desks page would refuse the demo's sign-in: %v", err)
	}
	if got, want := v.ID, int64(103); got != want {
		t.Errorf("signed in as %d, want %d", got, want)
	}
	resp, err = client.Get(d.URL + "desks?as=999")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got, want := resp.StatusCode, http.StatusNotFound; got != want {
		t.Errorf("signing in someone outside the team: %d, want %d", got, want)
	}
}

// A model server that answers at ModelURL is used; one that does not
// leaves the desks on the scripted model.
func TestModelServerWhenItAnswers(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler()) // any answer will do
	defer srv.Close()
	d, err := Start(t.Context(), Options{ModelURL: srv.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Scripted {
		t.Error("a model server answered, and the demo kept the scripted model")
	}
	if _, ok := d.Environ()["MODEL_BASE_URL"]; ok {
		t.Error("the demo sets MODEL_BASE_URL over the person's own")
	}
	if d := mustStart(t); !d.Scripted || !strings.HasPrefix(d.Environ()["MODEL_BASE_URL"], "http://127.0.0.1:") {
		t.Errorf("without a model server: scripted %v, MODEL_BASE_URL %q", d.Scripted, d.Environ()["MODEL_BASE_URL"])
	}
}
