package kite

import (
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/store/storetest"
)

// A request_token Kite refuses (stale, reused, forged) gives the person a
// page saying it once, plainly: not "Kite refused this login (Kite refused
// the login (...); an approver must /login again). Send /login ...".
func TestRefusedLoginPageSaysItOnce(t *testing.T) {
	kt := mustFake(t)
	st := storetest.MustOpen(t)
	l, _ := mustLoginOn(t, kt, st, nil)
	u, err := l.LoginURL(t.Context(), deskbot.Person{ID: 1, Name: "Asha"})
	if err != nil {
		t.Fatal(err)
	}
	parsed, _ := url.Parse(u)
	params, _ := url.ParseQuery(parsed.Query().Get("redirect_params"))
	q := url.Values{"status": {"success"}, "request_token": {"not-a-token-kite-gave"}, "state": {params.Get("state")}}
	rec := httptest.NewRecorder()
	l.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/kite/callback?"+q.Encode(), nil))
	body := rec.Body.String()
	if rec.Code != 400 {
		t.Fatalf("refused token: %d %s", rec.Code, body)
	}
	if strings.Count(body, "refused") > 1 || strings.Count(body, "/login") > 1 {
		t.Errorf("the page says it twice: %s", body[strings.Index(body, "<p"):])
	}
}
