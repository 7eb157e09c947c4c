package main

import (
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/broker/kite"
	"github.com/deskbot/deskbot/broker/kitetest"
	"github.com/deskbot/deskbot/config"
	"github.com/deskbot/deskbot/config/configtest"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/model/modeltest"
	"github.com/deskbot/deskbot/store"
	"github.com/deskbot/deskbot/store/storetest"
)

const (
	kiteKey    = "kiteapp7"
	kiteSecret = "SECRET-kite-api-secret-9f3a"
	kiteUser   = "AB1234"
)

// mustKiteService starts the service with Kite's daily login on, against
// the fake Kite.
func mustKiteService(t *testing.T) (*service, *kitetest.Server) {
	t.Helper()
	kt := kitetest.New(t, kiteKey, kiteSecret)
	s := mustStart(t, map[string]string{
		"KITE_API_KEY": kiteKey, "KITE_API_SECRET": kiteSecret, "KITE_USER_ID": kiteUser,
		"KITE_API_URL": kt.URL, "BROKER_CALLBACK_URL": "http://127.0.0.1:8080/kite/callback",
	})
	noKiteSecrets(t, s, kt)
	return s, kt
}

// noKiteSecrets fails t, when it ends, if Kite's api secret or an access
// token reached the service's logs or the chat.
func noKiteSecrets(t *testing.T, s *service, kt *kitetest.Server) {
	t.Cleanup(func() {
		all := s.logs.String()
		for _, c := range s.tg.Calls("") {
			all += c.Text
		}
		for _, secret := range append(kt.AccessTokens(), kiteSecret) {
			if strings.Contains(all, secret) {
				t.Errorf("a Kite secret (%.6s…) reached the logs or the chat", secret)
			}
		}
	})
}

// mustLoginState has who send /login and returns the state its button's
// address binds Kite's redirect to, and the answer's words.
func mustLoginState(t *testing.T, s *service, who telegramtest.User) (state, said string) {
	t.Helper()
	asked := s.tg.InjectText(who, groupID, "/login", 0)
	m := s.mustBotMessage(t, "the login button", func(m telegramtest.Message) bool {
		return m.ReplyTo == asked && len(m.Keyboard) > 0 && m.Keyboard[0][0].Text == "Log in to Kite"
	})
	u, err := url.Parse(m.Keyboard[0][0].URL)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := u.Scheme+"://"+u.Host+u.Path, "https://kite.zerodha.com/connect/login"; got != want {
		t.Errorf("login button opens %s; want %s", got, want)
	}
	if got := u.Query().Get("api_key"); got != kiteKey {
		t.Errorf("login button's api_key = %q, want %q", got, kiteKey)
	}
	params, err := url.ParseQuery(u.Query().Get("redirect_params"))
	if err != nil || params.Get("state") == "" {
		t.Fatalf("login button carries no state in redirect_params: %s", u)
	}
	return params.Get("state"), m.Plain
}

// callback is Kite's redirect of the phone's browser to deskbot.
func callback(t *testing.T, s *service, q url.Values) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + s.main.HTTP.Addr() + "/kite/callback?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func redirect(state, token string) url.Values {
	return url.Values{"status": {"success"}, "action": {"login"}, "type": {"login"}, "request_token": {token}, "state": {state}}
}

// The daily login from the phone: an approver's /login gives a button to
// Kite's page bound to that login; Kite's redirect is exchanged once for
// the day's session, kept in Redis until 06:00 India time the next day,
// and the group is told who logged in and until when. A stranger gets no
// button; a forged, replayed or lapsed state, an unfinished login and a
// login for another account are refused and change nothing.
func TestKiteDailyLogin(t *testing.T) {
	t.Parallel()
	s, kt := mustKiteService(t)
	ctx := t.Context()

	s.tg.InjectText(stranger, groupID, "/login", 0)
	s.mustBotMessage(t, "a stranger refused", func(m telegramtest.Message) bool {
		return strings.Contains(m.Plain, "Only approvers can log in to the broker.")
	})

	state, said := mustLoginState(t, s, asha)
	if strings.Contains(said, "Kite's session is") {
		t.Errorf("/login before any login says %q", said)
	}
	refused := []struct {
		name     string
		q        url.Values
		wantCode int
		wantText string
	}{
		{"a state deskbot never gave", redirect("f00dfeedf00dfeedf00dfeedf00dfeed", kt.Login(kiteUser)), 400, "not started from deskbot"},
		{"no state", url.Values{"status": {"success"}, "request_token": {kt.Login(kiteUser)}}, 400, "not started from deskbot"},
		{"a login Kite did not finish", url.Values{"status": {"cancelled"}, "state": {state}}, 400, "Kite did not finish the login"},
	}
	for _, tt := range refused {
		code, body := callback(t, s, tt.q)
		if code != tt.wantCode || !strings.Contains(body, tt.wantText) {
			t.Errorf("%s: %d %q; want %d and %q", tt.name, code, body, tt.wantCode, tt.wantText)
		}
	}
	if _, err := s.main.Login.Session(ctx); err == nil {
		t.Fatal("a session was kept from a refused callback")
	}

	before := time.Now()
	code, body := callback(t, s, redirect(state, kt.Login(kiteUser)))
	if code != 200 || !strings.Contains(body, "Logged in to Kite as AB1234 until 06:00 IST") {
		t.Fatalf("the login's callback: %d %q; want 200, logged in", code, body)
	}
	sess, err := s.main.Login.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sess.UserID != kiteUser || sess.By.ID != asha.ID || len(kt.AccessTokens()) != 1 || sess.AccessToken != kt.AccessTokens()[0] {
		t.Errorf("kept session %s by %d; want %s's session by Asha", sess.UserID, sess.By.ID, kiteUser)
	}
	if end := sess.Until; !end.After(before) || end.Sub(before) > 30*time.Hour || end.In(deskbot.IST).Format("15:04") != "06:00" {
		t.Errorf("session kept until %v; want the next 06:00 IST", end)
	}
	s.mustBotMessage(t, "the group told of the login", func(m telegramtest.Message) bool {
		return strings.HasPrefix(m.Plain, "🔑 Asha logged in to Kite (account AB1234); the session lasts until 06:00 IST on ")
	})

	// The same redirect again (a reload, a replay): refused, nothing
	// exchanged.
	code, body = callback(t, s, redirect(state, kt.Login(kiteUser)))
	if code != 409 || !strings.Contains(body, "used already") {
		t.Errorf("the redirect replayed: %d %q; want 409, used already", code, body)
	}
	// Another account's login is refused and leaves the day's session.
	other, said := mustLoginState(t, s, ravi)
	if !strings.HasPrefix(said, "Kite's session is Asha's (account AB1234), since ") {
		t.Errorf("/login with a session on says %q; want whose it is and until when", said)
	}
	code, body = callback(t, s, redirect(other, kt.Login("ZZ9999")))
	if code != 403 || !strings.Contains(body, "This is Kite account ZZ9999, not AB1234") {
		t.Errorf("another account's login: %d %q; want 403, refused", code, body)
	}
	if got, err := s.main.Login.Session(ctx); err != nil || got.AccessToken != sess.AccessToken || got.By.ID != asha.ID {
		t.Errorf("after another account's login the session is %s by %d (%v); want Asha's, unchanged", got.UserID, got.By.ID, err)
	}
}

// Kite's login needs all of its variables or none; a missing or malformed
// one stops the start naming it, and SANDBOX_ENV may not hand a desk the
// API secret.
func TestLoadConfigKite(t *testing.T) {
	t.Parallel()
	full := map[string]string{"KITE_API_KEY": kiteKey, "KITE_API_SECRET": kiteSecret, "KITE_USER_ID": kiteUser, "BROKER_CALLBACK_URL": "https://desks.example.com/kite/callback"}
	with := func(kv ...string) map[string]string {
		env := map[string]string{}
		for k, v := range full {
			env[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			env[kv[i]] = kv[i+1]
		}
		return env
	}
	tests := []struct {
		name    string
		env     map[string]string
		wantErr string
	}{
		{"none: no login", nil, ""},
		{"all", full, ""},
		{"a secret without a key", map[string]string{"KITE_API_SECRET": kiteSecret}, "KITE_API_SECRET: needs KITE_API_KEY"},
		{"no secret", with("KITE_API_SECRET", ""), "KITE_API_SECRET: needs to be set with KITE_API_KEY"},
		{"no account", with("KITE_USER_ID", ""), "KITE_USER_ID: the Kite account deskbot trades for"},
		{"an account in lower case", with("KITE_USER_ID", "ab1234"), "KITE_USER_ID"},
		{"no callback", with("BROKER_CALLBACK_URL", ""), "BROKER_CALLBACK_URL: must be the redirect URL"},
		{"a cleartext callback", with("BROKER_CALLBACK_URL", "http://desks.example.com/kite/callback"), "BROKER_CALLBACK_URL: must be https"},
		{"a callback with no path", with("BROKER_CALLBACK_URL", "https://desks.example.com/"), "BROKER_CALLBACK_URL: needs a path of its own"},
		{"a local callback", with("BROKER_CALLBACK_URL", "http://127.0.0.1:8080/kite/callback"), ""},
		{"a callback on /healthz", with("BROKER_CALLBACK_URL", "https://desks.example.com/healthz"), "BROKER_CALLBACK_URL: its path /healthz is /healthz's or /metrics'"},
		{"a callback on the desks page", with("BROKER_CALLBACK_URL", "https://desks.example.com/desks/", "WEBAPP_URL", "https://desks.example.com/desks/"), "BROKER_CALLBACK_URL: its path /desks is the desks page's"},
		{"a cleartext API", with("KITE_API_URL", "http://api.kite.trade"), "KITE_API_URL: must be an https URL"},
		{"the secret in a sandbox", with("SANDBOX_ENV", "KITE_API_SECRET"), "SANDBOX_ENV: KITE_API_SECRET holds a secret of the service"},
		{"a reminder at no time of day", with("KITE_LOGIN_REMINDER", "8:45am"), "KITE_LOGIN_REMINDER: must be a time of day as HH:MM, India time, such as 08:45"},
		{"paper on Kite's prices", with("BROKER", "paper-kite"), ""},
		{"paper on Kite's prices without a login", map[string]string{"BROKER": "paper-kite"}, "BROKER: paper-kite trades on Kite and needs Kite's login"},
		{"orders at Kite", with("BROKER", "kite"), ""},
		{"orders at Kite without a login", map[string]string{"BROKER": "kite"}, "BROKER: kite trades on Kite and needs Kite's login"},
		{"an unknown broker", map[string]string{"BROKER": "zerodha"}, "BROKER: must be paper"},
		{"a special session", with("MARKET_HOLIDAYS", "2026-12-25,2026-11-08 18:00-19:00"), ""},
		{"market hours unreadable", map[string]string{"MARKET_HOURS": "9:15 to 3:30"}, "MARKET_HOURS: "},
		{"a holiday unreadable", map[string]string{"MARKET_HOLIDAYS": "25 Dec"}, "MARKET_HOLIDAYS: "},
		{"an exchange deskbot does not know", with("KITE_EXCHANGES", "NSE,NYSE"), `KITE_EXCHANGES: "NYSE" is not one of NSE, BSE`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := configtest.MinimalEnv()
			for k, v := range tt.env {
				env[k] = v
			}
			_, err := config.Load(env)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("LoadConfig: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("LoadConfig: %v; want an error with %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), kiteSecret) {
				t.Errorf("the error shows the API secret: %v", err)
			}
		})
	}
}

// Without KITE_API_KEY there is nothing to log in to, and /login says so.
func TestLoginWithoutKite(t *testing.T) {
	t.Parallel()
	s := mustStart(t, nil)
	s.tg.InjectText(asha, groupID, "/login", 0)
	s.mustBotMessage(t, "no login needed", func(m telegramtest.Message) bool {
		return strings.Contains(m.Plain, "The paper broker needs no login.") && len(m.Keyboard) == 0
	})
}

// deskbot check says whether Kite's day's session is there, whose it is
// and whether Kite still takes it.
func TestCheckKite(t *testing.T) {
	t.Parallel()
	storetest.MustOpen(t)
	kt := kitetest.New(t, kiteKey, kiteSecret)
	env := configtest.GoodEnv(t)
	for k, v := range storetest.Env() {
		env[k] = v
	}
	for k, v := range map[string]string{
		"REDIS_PREFIX": storetest.RandomPrefix(), "KITE_API_KEY": kiteKey, "KITE_API_SECRET": kiteSecret,
		"KITE_USER_ID": kiteUser, "KITE_API_URL": kt.URL, "BROKER_CALLBACK_URL": "http://127.0.0.1:8080/kite/callback",
		"KITE_TICKER_URL": strings.Replace(kt.URL, "http://", "ws://", 1),
	} {
		env[k] = v
	}
	if _, out, lines := configtest.CheckOut(t, config.RunCheck, env); !strings.HasPrefix(lines["kite"], "warn no session today") {
		t.Errorf("before any login, kite: %q\n%s", lines["kite"], out)
	}

	// A login, as the service takes it.
	cfg, err := config.Load(env)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(t.Context(), cfg.StoreOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	l, err := kite.NewLogin(kite.LoginConfig{APIKey: kiteKey, APISecret: kiteSecret, UserID: kiteUser, CallbackURL: cfg.BrokerCallbackURL},
		kite.New(kite.Options{APIKey: kiteKey, APIURL: kt.URL}), st, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	u, err := l.LoginURL(t.Context(), deskbot.Person{ID: asha.ID, Name: "Asha"})
	if err != nil {
		t.Fatal(err)
	}
	parsed, _ := url.Parse(u)
	params, _ := url.ParseQuery(parsed.Query().Get("redirect_params"))
	rec := httptest.NewRecorder()
	l.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/kite/callback?"+redirect(params.Get("state"), kt.Login(kiteUser)).Encode(), nil))
	if rec.Code != 200 {
		t.Fatalf("login: %d %s", rec.Code, rec.Body)
	}

	if code, out, lines := configtest.CheckOut(t, config.RunCheck, env); code != 0 || !strings.HasPrefix(lines["kite"], "ok Kite's session is Asha's (account AB1234)") ||
		!strings.HasPrefix(lines["kite ticker"], "ok the ticker takes the session") {
		t.Errorf("with the day's session, kite: %q, kite ticker: %q (exit %d)\n%s", lines["kite"], lines["kite ticker"], code, out)
	}
	noTicker := maps.Clone(env)
	noTicker["KITE_TICKER_URL"] = "ws://127.0.0.1:1"
	if _, out, lines := configtest.CheckOut(t, config.RunCheck, noTicker); !strings.HasPrefix(lines["kite ticker"], "warn the ticker at 127.0.0.1:1 did not take the session") {
		t.Errorf("with no ticker, kite ticker: %q\n%s", lines["kite ticker"], out)
	}
	kt.ExpireSession()
	if _, out, lines := configtest.CheckOut(t, config.RunCheck, env); !strings.HasPrefix(lines["kite"], "warn Kite no longer takes the session Asha started") {
		t.Errorf("after Kite ended the session, kite: %q\n%s", lines["kite"], out)
	}
}

// The morning's reminder goes out on the operator's trading days: a
// weekday, and a Saturday's special session (MARKET_HOLIDAYS), but not on
// a weekday holiday or a plain Sunday. It offers the login button.
func TestKiteLoginReminderOnTradingDays(t *testing.T) {
	t.Parallel()
	kt := kitetest.New(t, kiteKey, kiteSecret)
	env := map[string]string{
		"BROKER": "paper-kite", "KITE_API_KEY": kiteKey, "KITE_API_SECRET": kiteSecret, "KITE_USER_ID": kiteUser,
		"KITE_API_URL": kt.URL, "BROKER_CALLBACK_URL": "http://127.0.0.1:8080/kite/callback",
		"MARKET_HOLIDAYS": "2026-12-07,2026-12-12 10:00-12:00", // a Monday off, a Saturday's special session
	}
	clock := deskbottest.NewClock(time.Now())
	storetest.MustOpen(t)
	s := mustStartClock(t, telegramtest.New(t, testToken), modeltest.New(t), env, clock.Now)
	const ask = "🔑 No Kite session today yet"
	for _, tt := range []struct {
		day  time.Time
		asks bool
	}{
		{time.Date(2026, 12, 4, 8, 45, 0, 0, deskbot.IST), true},  // Friday
		{time.Date(2026, 12, 6, 8, 45, 0, 0, deskbot.IST), false}, // Sunday
		{time.Date(2026, 12, 7, 8, 45, 0, 0, deskbot.IST), false}, // Monday, a holiday
		{time.Date(2026, 12, 12, 8, 45, 0, 0, deskbot.IST), true}, // Saturday, a special session
	} {
		clock.Set(tt.day)
		before := botMessagesStarting(s, ask)
		if err := s.main.trading.RemindLogin(t.Context()); err != nil {
			t.Fatalf("%s: %v", tt.day.Format("Mon 2 Jan"), err)
		}
		if tt.asks {
			s.mustBotMessage(t, "the ask on "+tt.day.Format("Mon 2 Jan"), func(telegramtest.Message) bool {
				return botMessagesStarting(s, ask) > before
			})
			for _, m := range s.tg.BotMessages(groupID) {
				if strings.HasPrefix(m.Plain, ask) {
					button(t, m, "Log in to Kite")
				}
			}
		} else {
			time.Sleep(500 * time.Millisecond)
			if got := botMessagesStarting(s, ask); got != before {
				t.Errorf("%s is no trading day, but the group was asked to log in", tt.day.Format("Mon 2 Jan"))
			}
		}
	}
}
