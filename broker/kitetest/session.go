package kitetest

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"time"
)

// RequestTokenLife is how long a request_token from Login stays
// exchangeable. Kite's are short-lived; a few minutes is what a person's
// redirect takes.
const RequestTokenLife = 5 * time.Minute

// DefaultFunds is the cash a user has until SetFunds says otherwise.
const DefaultFunds = 10_00_000.0

type pendingLogin struct {
	userID string
	at     time.Time
}

type session struct {
	accessToken string
	publicToken string
	userID      string
	loginAt     time.Time
	ends        time.Time
}

type account struct {
	userID string
	name   string
	funds  float64
	// holdings are the user's delivery holdings (SetHoldings).
	holdings []Holding
	trades   []*trade
}

// Login does what a person's browser login at kite.zerodha.com does: it
// creates the user if new and returns the request_token Kite would put on
// the redirect. The token can be exchanged once, within RequestTokenLife.
func (s *Server) Login(userID string) (requestToken string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.accountLocked(userID)
	tok := randomToken(32)
	s.requestTokens[tok] = pendingLogin{userID: userID, at: s.now()}
	return tok
}

// ExpireSession ends every session, as Kite does at about 06:00 India time:
// every call with an old access_token gets TokenException until a new login,
// and open ticker connections are closed.
func (s *Server) ExpireSession() {
	s.mu.Lock()
	s.sessions = map[string]*session{}
	conns := s.tickerConnsLocked("")
	s.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
}

// SetFunds sets a user's cash (the equity segment's available cash).
func (s *Server) SetFunds(userID string, cash float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.accountLocked(userID).funds = cash
}

// AccessTokens returns the access tokens now valid, for tests that check a
// logout.
func (s *Server) AccessTokens() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for t, sess := range s.sessions {
		if s.now().Before(sess.ends) {
			out = append(out, t)
		}
	}
	return out
}

func (s *Server) accountLocked(userID string) *account {
	a := s.users[userID]
	if a == nil {
		a = &account{userID: userID, name: "Test User " + userID, funds: DefaultFunds}
		s.users[userID] = a
	}
	return a
}

// sessionEnd is the next 06:00 India time after t: Kite's sessions end
// then, whenever the login happened.
func sessionEnd(t time.Time) time.Time {
	t = t.In(IST)
	end := time.Date(t.Year(), t.Month(), t.Day(), 6, 0, 0, 0, IST)
	if !end.After(t) {
		end = end.AddDate(0, 0, 1)
	}
	return end
}

// authenticate checks Authorization: token <api_key>:<access_token>.
func (s *Server) authenticate(r *http.Request) *session {
	h, ok := strings.CutPrefix(r.Header.Get("Authorization"), "token ")
	if !ok {
		return nil
	}
	key, tok, ok := strings.Cut(h, ":")
	if !ok || key != s.APIKey || tok == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.sessions[tok]
	if sess == nil {
		return nil
	}
	if !s.now().Before(sess.ends) {
		delete(s.sessions, tok)
		return nil
	}
	return sess
}

// createSession is POST /session/token, the request_token exchange.
func (s *Server) createSession(w *recorder, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		inputError(w, "Invalid form body.")
		return
	}
	apiKey, reqTok, sum := r.PostForm.Get("api_key"), r.PostForm.Get("request_token"), r.PostForm.Get("checksum")
	switch {
	case apiKey == "":
		inputError(w, "Missing `api_key`.")
		return
	case reqTok == "":
		inputError(w, "Missing `request_token`.")
		return
	case sum == "":
		inputError(w, "Missing `checksum`.")
		return
	case apiKey != s.APIKey:
		inputError(w, "Invalid `api_key`.")
		return
	}
	want := sha256.Sum256([]byte(s.APIKey + reqTok + s.APISecret))
	s.mu.Lock()
	pending, ok := s.requestTokens[reqTok]
	now := s.now()
	if !ok || now.Sub(pending.at) > RequestTokenLife {
		delete(s.requestTokens, reqTok)
		s.mu.Unlock()
		writeError(w, http.StatusForbidden, TokenException, "Token is invalid or has expired.")
		return
	}
	// A wrong checksum leaves the token usable: whoever sent it may not be
	// the app that holds the secret.
	if sum != hex.EncodeToString(want[:]) {
		s.mu.Unlock()
		inputError(w, "Invalid `checksum`.")
		return
	}
	delete(s.requestTokens, reqTok)
	// A new login replaces the user's earlier session, so a client can
	// never lean on two live tokens.
	for t, old := range s.sessions {
		if old.userID == pending.userID {
			delete(s.sessions, t)
		}
	}
	sess := &session{
		accessToken: randomToken(32),
		publicToken: randomToken(32),
		userID:      pending.userID,
		loginAt:     now,
		ends:        sessionEnd(now),
	}
	s.sessions[sess.accessToken] = sess
	acc := s.accountLocked(pending.userID)
	s.mu.Unlock()

	data := profileData(acc)
	data["api_key"] = s.APIKey
	data["access_token"] = sess.accessToken
	data["public_token"] = sess.publicToken
	data["refresh_token"] = ""
	data["enctoken"] = randomToken(32)
	data["login_time"] = sess.loginAt.In(IST).Format(kiteTime)
	writeData(w, data)
}

// deleteSession is DELETE /session/token: logout. The client sends api_key
// and access_token in the query string.
func (s *Server) deleteSession(w *recorder, r *http.Request, sess *session) {
	q := r.URL.Query()
	if q.Get("api_key") != s.APIKey {
		inputError(w, "Invalid `api_key`.")
		return
	}
	tok := q.Get("access_token")
	if tok == "" {
		inputError(w, "Missing `access_token`.")
		return
	}
	s.mu.Lock()
	victim := s.sessions[tok]
	if victim != nil && victim.userID == sess.userID {
		delete(s.sessions, tok)
	}
	s.mu.Unlock()
	writeData(w, true)
}

func (s *Server) profile(w *recorder, sess *session) {
	s.mu.Lock()
	data := profileData(s.accountLocked(sess.userID))
	s.mu.Unlock()
	writeData(w, data)
}

func profileData(a *account) map[string]any {
	return map[string]any{
		"user_id":        a.userID,
		"user_type":      "individual",
		"email":          strings.ToLower(a.userID) + "@example.com",
		"user_name":      a.name,
		"user_shortname": "Test",
		"broker":         "ZERODHA",
		"exchanges":      []string{"NSE", "BSE", "NFO", "BFO", "MCX", "CDS"},
		"products":       []string{"CNC", "NRML", "MIS"},
		"order_types":    []string{"MARKET", "LIMIT", "SL", "SL-M"},
		"avatar_url":     nil,
		"meta":           map[string]any{"demat_consent": "consent"},
	}
}

const tokenChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

func randomToken(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = tokenChars[int(b[i])%len(tokenChars)]
	}
	return string(b)
}
