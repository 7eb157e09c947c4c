package kite

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	kiteconnect "github.com/zerodha/gokiteconnect/v4"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/words"
)

// What the callback refuses, changing nothing: a state deskbot did not
// hand out, one already used or lapsed (loginLife), a login Kite did not
// finish, and a session for any account but the configured one (its token
// is simply dropped). The session (the access token, a secret) is kept
// until about 06:00 India time the next day, when Kite ends it; it never
// reaches a log, a chat message or a page.

// The login keeps its notes in Redis (deskbot.Notes, with their TTLs). The
// note keys are named here, and only here.

func loginKey(state string) string     { return "kite:login:" + state }      // who asked, until loginLife
func loginUsedKey(state string) string { return "kite:login-used:" + state } // the state was taken
const sessionKey = "kite:session"      // the day's session

// sessionEndedKey notes that Kite ended the session started at a time, so
// the group is told once and the session is not used again.
func sessionEndedKey(s deskbot.BrokerSession) string {
	return "kite:session-ended:" + strconv.FormatInt(s.At.UnixMilli(), 10)
}

// loginLife is how long a /login button works: time to open Kite's page
// and sign in with a password and a second factor on a phone.
const loginLife = 10 * time.Minute

// LoginConfig is what the login needs.
type LoginConfig struct {
	APIKey, APISecret string
	// UserID is the Kite account deskbot trades for; a session for any
	// other account is refused.
	UserID string
	// CallbackURL is the app's registered redirect URL, served on the
	// service's HTTP address at its path (BROKER_CALLBACK_URL).
	CallbackURL string
	Now         deskbot.Now
	// Redact, when set, is told each access token the login makes or
	// reads before anything can log it, so the service's logs scrub the
	// day's token as they scrub the configuration's secrets.
	Redact func(secret string)
}

// Login runs the daily login: the /login button's address, the callback,
// and the session it keeps.
type Login struct {
	cfg    LoginConfig
	kite   *Client
	path   string
	notes  deskbot.Notes
	events deskbot.Publisher
	log    *slog.Logger
	// onLogin is run after each login kept its session (Day loads the
	// day's instrument list); set before the callback is served.
	onLogin []func()
}

var _ deskbot.BrokerLogin = (*Login)(nil)

// CheckCallbackURL checks BROKER_CALLBACK_URL: Kite redirects a phone's
// browser there, so it must be https, or http on a loopback host (a
// developer's machine), with a path of its own.
func CheckCallbackURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	bad := func(why string) error {
		return deskbot.Errorf(deskbot.EINVALID, "BROKER_CALLBACK_URL: %s", why)
	}
	switch {
	case err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "":
		return nil, bad("must be the redirect URL registered for the Kite app, like https://desks.example.com/kite/callback")
	case u.Scheme == "http" && !loopback(u.Hostname()):
		return nil, bad("must be https (Kite sends the phone's browser there); http is accepted only for a loopback host")
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, bad("must be https")
	case strings.Trim(u.Path, "/") == "":
		return nil, bad("needs a path of its own, like /kite/callback")
	}
	return u, nil
}

// CheckAPIURL checks KITE_API_URL: https, or http on a loopback host (a
// fake or a proxy on the same machine), since every call carries the
// session's access token.
func CheckAPIURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil || (u.Scheme != "https" && (u.Scheme != "http" || !loopback(u.Hostname()))) {
		return nil, deskbot.Errorf(deskbot.EINVALID, "KITE_API_URL: must be an https URL (default https://api.kite.trade), or http on a loopback host")
	}
	return u, nil
}

func loopback(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || ip != nil && ip.IsLoopback()
}

// NewLogin builds the login on kite, whose session it sets at each login.
// A nil log logs nothing.
func NewLogin(cfg LoginConfig, kite *Client, notes deskbot.Notes, events deskbot.Publisher, log *slog.Logger) (*Login, error) {
	u, err := CheckCallbackURL(cfg.CallbackURL)
	if err != nil {
		return nil, err
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Login{cfg: cfg, kite: kite, path: u.EscapedPath(), notes: notes, events: events, log: log}, nil
}

// Path is the callback's path on the service's HTTP address.
func (l *Login) Path() string { return l.path }

// LoginURL returns the address of Kite's login page for by, valid for
// loginLife and once.
func (l *Login) LoginURL(ctx context.Context, by deskbot.Person) (string, error) {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	state := hex.EncodeToString(b[:])
	who, _ := json.Marshal(by)
	if err := l.notes.PutNote(ctx, loginKey(state), string(who), loginLife); err != nil {
		return "", err
	}
	return kiteconnect.New(l.cfg.APIKey).GetLoginURLWithparams(url.Values{"state": {state}}), nil
}

// Session is the day's session: ENOTFOUND when nobody has logged in since
// the last one lapsed, EUNAUTHORIZED when Kite ended it (Ended).
func (l *Login) Session(ctx context.Context) (deskbot.BrokerSession, error) {
	s, err := l.kept(ctx)
	if err != nil {
		return s, err
	}
	if _, err := l.notes.Note(ctx, sessionEndedKey(s)); err == nil {
		return s, deskbot.Errorf(deskbot.EUNAUTHORIZED, "Kite ended the day's session (%s logged in at %s IST): an approver must send /login.", s.By.Name, words.Time(s.At))
	} else if deskbot.ErrorCode(err) != deskbot.ENOTFOUND {
		return s, err
	}
	return s, nil
}

// Ended records that Kite ended s (it answered TokenException) and tells
// the group, once per session, that orders are refused until a login.
func (l *Login) Ended(ctx context.Context, s deskbot.BrokerSession) {
	if l.replaced(ctx, s) {
		return // Kite ends the old session at each login: not the day's
	}
	now := l.cfg.Now()
	first, err := l.notes.PutNoteOnce(ctx, sessionEndedKey(s), "1", s.Until.Sub(now)+time.Hour)
	if err != nil || !first {
		return
	}
	l.log.WarnContext(ctx, "kite: Kite ended the day's session", "by", s.By.Audited(), "account", s.UserID)
	if err := l.events.Publish(ctx, deskbot.Event{Kind: deskbot.EventBrokerLogin, Time: now, Text: words.BrokerSessionEnded(s)}); err != nil {
		l.log.WarnContext(ctx, "kite: could not tell the group the session ended", "err", err)
	}
}

// replaced reports whether a later login replaced s.
func (l *Login) replaced(ctx context.Context, s deskbot.BrokerSession) bool {
	cur, err := l.kept(ctx)
	return err == nil && !cur.At.Equal(s.At)
}

// RemindLogin asks the group to log in when there is no session Kite
// takes: the morning's reminder before the open.
func (l *Login) RemindLogin(ctx context.Context) error {
	_, err := l.Session(ctx)
	switch deskbot.ErrorCode(err) {
	case "":
		return nil
	case deskbot.ENOTFOUND, deskbot.EUNAUTHORIZED:
	default:
		return err
	}
	return l.events.Publish(ctx, deskbot.Event{Kind: deskbot.EventBrokerLogin, Time: l.cfg.Now(), Text: words.BrokerLoginAsked})
}

// kept is the session as kept, whether or not Kite still takes it.
func (l *Login) kept(ctx context.Context) (deskbot.BrokerSession, error) {
	v, err := l.notes.Note(ctx, sessionKey)
	if err != nil {
		if deskbot.ErrorCode(err) == deskbot.ENOTFOUND {
			return deskbot.BrokerSession{}, deskbot.Errorf(deskbot.ENOTFOUND, "Nobody has logged in to Kite today: an approver must send /login.")
		}
		return deskbot.BrokerSession{}, err
	}
	var s deskbot.BrokerSession
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		return deskbot.BrokerSession{}, fmt.Errorf("kite: the kept session does not read: %w", err)
	}
	l.redact(s.AccessToken)
	return s, nil
}

func (l *Login) redact(secret string) {
	if l.cfg.Redact != nil {
		l.cfg.Redact(secret)
	}
}

// SessionEnd is when Kite ends a session started at t: the next 06:00
// India time (Kite's own expiry, give or take minutes), so a login at
// 05:30 lasts half an hour, not a day.
func SessionEnd(t time.Time) time.Time {
	t = t.In(deskbot.IST)
	end := time.Date(t.Year(), t.Month(), t.Day(), 6, 0, 0, 0, deskbot.IST)
	if !end.After(t) {
		end = end.AddDate(0, 0, 1)
	}
	return end
}

// validState is the form LoginURL gives a state: 32 hex digits. Anything
// else was never given, and never reaches a Redis key.
func validState(s string) bool {
	if len(s) != 32 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

// Handler serves the callback Kite redirects to.
func (l *Login) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		status, text := l.callback(r.Context(), r.URL.Query())
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Referrer-Policy", "no-referrer")
		w.WriteHeader(status)
		_ = callbackPage.Execute(w, text)
	})
}

var callbackPage = template.Must(template.New("callback").Parse(`<!doctype html><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>deskbot · Kite login</title><p style="font:1.1rem system-ui;margin:2rem">{{.}}</p>`))

// callback handles one redirect and says, in words for the person on the
// page, what came of it.
func (l *Login) callback(ctx context.Context, q url.Values) (int, string) {
	state, requestToken := q.Get("state"), q.Get("request_token")
	if !validState(state) {
		return http.StatusBadRequest, "This login was not started from deskbot. Send /login in the team's chat and use its button."
	}
	if q.Get("status") != "success" || requestToken == "" {
		return http.StatusBadRequest, "Kite did not finish the login. Send /login in the team's chat and try again."
	}
	// The state is looked up before it is taken, so a state deskbot never
	// gave writes nothing (anyone on the web can call this).
	v, err := l.notes.Note(ctx, loginKey(state))
	if deskbot.ErrorCode(err) == deskbot.ENOTFOUND {
		return http.StatusBadRequest, "This login was not started from deskbot, or its button lapsed. Send /login in the team's chat for a new one."
	} else if err != nil {
		return l.unavailable(ctx, err)
	}
	first, err := l.notes.PutNoteOnce(ctx, loginUsedKey(state), "1", loginLife)
	if err != nil {
		return l.unavailable(ctx, err)
	}
	if !first {
		return http.StatusConflict, "This login button was used already. Send /login in the team's chat for a new one."
	}
	var by deskbot.Person
	_ = json.Unmarshal([]byte(v), &by)

	userID, token, _, err := l.kite.GenerateSession(ctx, requestToken, l.cfg.APISecret)
	l.redact(token)
	if err != nil {
		if deskbot.ErrorCode(err) == deskbot.EUNAVAILABLE {
			l.log.WarnContext(ctx, "kite: could not exchange a login's request_token", "by", by.Audited(), "err", err)
			return http.StatusBadGateway, "Kite could not be reached to finish the login. Send /login in the team's chat and try again."
		}
		l.log.WarnContext(ctx, "kite: a login's request_token was refused", "by", by.Audited(), "err", err)
		return http.StatusBadRequest, deskbot.ErrorMessage(err) + " Send /login in the team's chat and try again."
	}
	if userID != l.cfg.UserID {
		l.log.WarnContext(ctx, "kite: a login for another account was refused", "by", by.Audited(), "account", userID)
		return http.StatusForbidden, "This is Kite account " + userID + ", not " + l.cfg.UserID + ", the account deskbot trades for. Nothing was changed. Log in to Kite as " + l.cfg.UserID + "."
	}
	now := l.cfg.Now()
	s := deskbot.BrokerSession{UserID: userID, AccessToken: token, By: by, At: now, Until: SessionEnd(now)}
	raw, _ := json.Marshal(s)
	if err := l.notes.PutNote(ctx, sessionKey, string(raw), s.Until.Sub(now)); err != nil {
		return l.unavailable(ctx, err)
	}
	l.kite.SetAccessToken(token)
	for _, f := range l.onLogin {
		f()
	}
	l.log.InfoContext(ctx, "kite: logged in", "by", by.Audited(), "account", s.UserID, "until", s.Until)
	if err := l.events.Publish(ctx, deskbot.Event{Kind: deskbot.EventBroker, Time: now, Text: words.BrokerLoggedIn(s)}); err != nil {
		// The session is kept; only the group's notice is lost.
		l.log.WarnContext(ctx, "kite: could not tell the group of a login", "err", err)
	}
	return http.StatusOK, words.BrokerLoginPage(s)
}

func (l *Login) unavailable(ctx context.Context, err error) (int, string) {
	l.log.WarnContext(ctx, "kite: a login could not be kept", "err", err)
	return http.StatusServiceUnavailable, "deskbot could not keep this login just now (its Redis is unavailable). Send /login in the team's chat and try again in a minute."
}
