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

// The scripted desk turns a person's words into the order they name, and
// answers the gate's words in its own.
func TestScriptedDesk(t *testing.T) {
	tests := []struct {
		says     string
		wantCall string
		wantArgs string
		wantText string
	}{
		{says: "Asha: buy 1 INFY", wantCall: "place_order", wantArgs: `{"price":1650,"quantity":1,"side":"buy","symbol":"INFY"}`},
		{says: "sell 5 tcs at 4100.5", wantCall: "place_order", wantArgs: `{"price":4100.5,"quantity":5,"side":"sell","symbol":"TCS"}`},
		{says: "Buy 2 ACME", wantCall: "place_order", wantArgs: `{"price":1100,"quantity":2,"side":"buy","symbol":"ACME"}`},
		{says: "show me the positions", wantCall: "get_positions", wantArgs: `{}`},
		{says: "flatten everything", wantCall: "flatten_desk", wantArgs: `{}`},
		{says: "The user denied place_order (request x), so it was not run.", wantText: "Understood"},
		{says: "The user allowed place_order (request x), and the harness ran it with the arguments you gave. It was run: Filled: bought 1 INFY", wantText: "Done. Filled: bought 1 INFY"},
		{says: "Asha: quote INFY", wantCall: "get_quote", wantArgs: `{"symbols":["INFY"]}`},
		{says: "watch INFY above 1,600", wantCall: "watch_price", wantArgs: `{"direction":"above","level":1600,"note":"the team asked: INFY above 1,600","symbol":"INFY"}`},
		{says: "good morning", wantText: scriptHelp},
	}
	for _, tt := range tests {
		t.Run(tt.says, func(t *testing.T) {
			got := scriptedDesk(openAIRequest(map[string]any{"role": "user", "content": tt.says}))
			if tt.wantCall != "" {
				if len(got.ToolCalls) != 1 || got.ToolCalls[0].Name != tt.wantCall || got.ToolCalls[0].Arguments != tt.wantArgs {
					t.Errorf("reply %+v, want %s %s", got, tt.wantCall, tt.wantArgs)
				}
				return
			}
			if len(got.ToolCalls) != 0 || !strings.Contains(got.Text, tt.wantText) {
				t.Errorf("reply %+v, want words with %q", got, tt.wantText)
			}
		})
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
