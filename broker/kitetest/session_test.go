package kitetest

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/deskbot/deskbot/deskbottest"
)

func TestGenerateSessionAnswersAsKite(t *testing.T) {
	s := newFake(t)
	at := time.Date(2026, 12, 2, 9, 10, 0, 0, IST)
	s.SetNow(deskbottest.NewClock(at).Now)
	c := client(s)
	sess, err := c.GenerateSession(s.Login(testUser), testSecret)
	if err != nil {
		t.Fatalf("GenerateSession: %v", err)
	}
	if got, want := sess.UserID, testUser; got != want {
		t.Errorf("user_id: got %q, want %q", got, want)
	}
	if sess.AccessToken == "" || sess.APIKey != testKey {
		t.Errorf("got access_token %q api_key %q, want a token and %q", sess.AccessToken, sess.APIKey, testKey)
	}
	// login_time is IST wall time without a zone; the client reads it in
	// Asia/Kolkata, so the instant survives.
	if got := sess.LoginTime.Time; !got.Equal(at) {
		t.Errorf("login_time: got %v, want %v", got, at)
	}
	p, err := c.GetUserProfile()
	if err != nil {
		t.Fatalf("GetUserProfile after login: %v", err)
	}
	if got, want := p.UserID, testUser; got != want {
		t.Errorf("profile user_id: got %q, want %q", got, want)
	}
}

func TestGenerateSessionRefusesWrongChecksum(t *testing.T) {
	s := newFake(t)
	c := client(s)
	tok := s.Login(testUser)
	_, err := c.GenerateSession(tok, "not-the-secret")
	wantErrorType(t, err, InputException, http.StatusBadRequest)
	// The wrong checksum did not burn the token: the real app can still use it.
	if _, err := c.GenerateSession(tok, testSecret); err != nil {
		t.Fatalf("GenerateSession with the right secret after a wrong one: %v", err)
	}
}

func TestRequestTokenIsSingleUse(t *testing.T) {
	s := newFake(t)
	tok := s.Login(testUser)
	if _, err := client(s).GenerateSession(tok, testSecret); err != nil {
		t.Fatalf("first GenerateSession: %v", err)
	}
	_, err := client(s).GenerateSession(tok, testSecret)
	wantErrorType(t, err, TokenException, http.StatusForbidden)
}

func TestRequestTokenExpires(t *testing.T) {
	s := newFake(t)
	clk := deskbottest.NewClock(time.Date(2026, 12, 2, 9, 0, 0, 0, IST))
	s.SetNow(clk.Now)
	tok := s.Login(testUser)
	clk.Add(RequestTokenLife + time.Second)
	_, err := client(s).GenerateSession(tok, testSecret)
	wantErrorType(t, err, TokenException, http.StatusForbidden)
}

// rawGet sends a GET with the given headers and decodes Kite's envelope.
func rawGet(t *testing.T, s *Server, path string, header map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	var env struct {
		Status    string `json:"status"`
		ErrorType string `json:"error_type"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&env)
	return resp.StatusCode, env.ErrorType
}

func TestHeadersAreRequired(t *testing.T) {
	s := newFake(t)
	login(t, s, testUser)
	tok := s.AccessTokens()[0]
	good := "token " + testKey + ":" + tok
	for _, tc := range []struct {
		name      string
		header    map[string]string
		code      int
		errorType string
	}{
		{"both right", map[string]string{"X-Kite-Version": "3", "Authorization": good}, 200, ""},
		{"no version", map[string]string{"Authorization": good}, 400, InputException},
		{"version 2", map[string]string{"X-Kite-Version": "2", "Authorization": good}, 400, InputException},
		{"no authorization", map[string]string{"X-Kite-Version": "3"}, 403, TokenException},
		{"wrong token", map[string]string{"X-Kite-Version": "3", "Authorization": "token " + testKey + ":nope"}, 403, TokenException},
		{"wrong api key", map[string]string{"X-Kite-Version": "3", "Authorization": "token other:" + tok}, 403, TokenException},
		{"bearer scheme", map[string]string{"X-Kite-Version": "3", "Authorization": "Bearer " + tok}, 403, TokenException},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, et := rawGet(t, s, "/user/profile", tc.header)
			if code != tc.code || et != tc.errorType {
				t.Errorf("got %d %q, want %d %q", code, et, tc.code, tc.errorType)
			}
		})
	}
}

func TestExpiredSessionGivesTokenExceptionUntilNewLogin(t *testing.T) {
	s := newFake(t)
	c := login(t, s, testUser)
	if _, err := c.GetOrders(); err != nil {
		t.Fatalf("GetOrders before expiry: %v", err)
	}
	s.ExpireSession()
	for range 2 {
		_, err := c.GetOrders()
		wantErrorType(t, err, TokenException, http.StatusForbidden)
	}
	if _, err := c.GenerateSession(s.Login(testUser), testSecret); err != nil {
		t.Fatalf("GenerateSession after expiry: %v", err)
	}
	if _, err := c.GetOrders(); err != nil {
		t.Fatalf("GetOrders after a new login: %v", err)
	}
}

func TestSessionEndsAtSixInTheMorning(t *testing.T) {
	s := newFake(t)
	clk := deskbottest.NewClock(time.Date(2026, 12, 2, 22, 0, 0, 0, IST))
	s.SetNow(clk.Now)
	c := login(t, s, testUser)
	clk.Set(time.Date(2026, 12, 3, 5, 59, 0, 0, IST))
	if _, err := c.GetUserProfile(); err != nil {
		t.Fatalf("GetUserProfile at 05:59: %v", err)
	}
	clk.Set(time.Date(2026, 12, 3, 6, 0, 0, 0, IST))
	_, err := c.GetUserProfile()
	wantErrorType(t, err, TokenException, http.StatusForbidden)
}

func TestInvalidateAccessTokenLogsOut(t *testing.T) {
	s := newFake(t)
	c := login(t, s, testUser)
	if ok, err := c.InvalidateAccessToken(); err != nil || !ok {
		t.Fatalf("InvalidateAccessToken: %v %v", ok, err)
	}
	if got := len(s.AccessTokens()); got != 0 {
		t.Errorf("got %d live tokens after logout, want 0", got)
	}
	_, err := c.GetOrders()
	wantErrorType(t, err, TokenException, http.StatusForbidden)
}
