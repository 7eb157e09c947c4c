package config

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker/kite"
	"github.com/deskbot/deskbot/exchange"
	"github.com/deskbot/deskbot/report"
	"github.com/deskbot/deskbot/store"
	"github.com/deskbot/deskbot/words"
)

// kiteUserID is a Kite account's id as Zerodha issues them (AB1234).
var kiteUserID = regexp.MustCompile(`^[A-Z]{2,4}[0-9]{3,6}$`)

// kiteProblems checks BROKER, the market's calendar and the KITE_*
// variables: all or none of the login's.
func (c Config) kiteProblems() []string {
	var p []string
	switch c.Broker {
	case "paper":
	case "paper-kite", "kite":
		if c.KiteAPIKey == "" {
			p = append(p, "BROKER: "+c.Broker+" trades on Kite and needs Kite's login: set KITE_API_KEY, KITE_API_SECRET, KITE_USER_ID and BROKER_CALLBACK_URL")
		}
	default:
		p = append(p, "BROKER: must be paper (the default: its own prices), paper-kite (paper trading on Kite's live prices) or kite (orders placed at Kite)")
	}
	if _, err := exchange.ParseHours(c.MarketHours); err != nil {
		p = append(p, "MARKET_HOURS: "+deskbot.ErrorMessage(err))
	}
	if _, err := exchange.ParseHolidays(c.MarketHolidays); err != nil {
		p = append(p, "MARKET_HOLIDAYS: "+deskbot.ErrorMessage(err))
	}
	for _, ex := range c.KiteExchanges {
		if !slices.Contains(deskbot.Exchanges, ex) {
			p = append(p, fmt.Sprintf("KITE_EXCHANGES: %q is not one of %s", ex, strings.Join(deskbot.Exchanges, ", ")))
		}
	}
	return append(p, c.kiteLoginProblems()...)
}

// kiteLoginProblems checks the login's variables: all or none.
func (c Config) kiteLoginProblems() []string {
	if c.KiteAPIKey == "" {
		for name, v := range map[string]string{"KITE_API_SECRET": c.KiteAPISecret, "KITE_USER_ID": c.KiteUserID, "BROKER_CALLBACK_URL": c.BrokerCallbackURL} {
			if v != "" {
				return []string{name + ": needs KITE_API_KEY, the Kite app's api_key"}
			}
		}
		return nil
	}
	var p []string
	if c.KiteAPISecret == "" {
		p = append(p, "KITE_API_SECRET: needs to be set with KITE_API_KEY: the Kite app's api_secret, to finish each day's login")
	}
	if !kiteUserID.MatchString(c.KiteUserID) {
		p = append(p, "KITE_USER_ID: the Kite account deskbot trades for, as Zerodha writes it (like AB1234); a login for any other account is refused")
	}
	if u, err := kite.CheckCallbackURL(c.BrokerCallbackURL); err != nil {
		p = append(p, deskbot.ErrorMessage(err))
	} else if path := "/" + strings.Trim(u.Path, "/"); path == "/healthz" || path == "/metrics" || strings.HasPrefix(path, "/healthz/") || strings.HasPrefix(path, "/metrics/") {
		p = append(p, "BROKER_CALLBACK_URL: its path "+path+" is /healthz's or /metrics'; give the callback a path of its own, like /kite/callback")
	} else if w, err := url.Parse(c.WebAppURL); c.WebAppURL != "" && err == nil && "/"+strings.Trim(w.Path, "/") == path {
		p = append(p, "BROKER_CALLBACK_URL: its path "+path+" is the desks page's (WEBAPP_URL); give the callback a path of its own, like /kite/callback")
	}
	if _, err := kite.CheckAPIURL(c.KiteAPIURL); err != nil {
		p = append(p, deskbot.ErrorMessage(err))
	}
	if _, err := kite.CheckTickerURL(c.KiteTickerURL); err != nil {
		p = append(p, deskbot.ErrorMessage(err))
	}
	if _, err := report.Everyday(c.KiteLoginReminder); err != nil {
		p = append(p, "KITE_LOGIN_REMINDER: "+deskbot.ErrorMessage(err)+", such as 08:45")
	}
	if err := deskbot.CheckAlgoID(c.KiteAlgoID); err != nil {
		p = append(p, "KITE_ALGO_ID: "+deskbot.ErrorMessage(err)+": the exchange's algo id of the strategy, or unset for none")
	}
	if err := kite.CheckSourceIP(c.KiteSourceIP); err != nil {
		p = append(p, deskbot.ErrorMessage(err))
	}
	return p
}

// kite probes Kite's day's session, when the login is on: whose it is (it
// must be KITE_USER_ID's) and whether Kite still takes it. Kite has no call
// that checks an api_key alone; the next login does.
func (c *checker) kite(ctx context.Context, cfg Config) {
	if cfg.KiteAPIKey == "" {
		return
	}
	c.kiteSource(ctx, cfg)
	if !cfg.redisNamed() {
		c.add("kite", statusWarn, "in-memory Redis: the day's Kite session is lost at every restart (an approver must /login again)")
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	s, err := store.Open(ctx, cfg.StoreOptions())
	if err != nil {
		return // the redis line says why
	}
	defer s.Close()
	k := kite.New(kite.Options{APIKey: cfg.KiteAPIKey, APIURL: cfg.KiteAPIURL})
	l, err := kite.NewLogin(kite.LoginConfig{APIKey: cfg.KiteAPIKey, UserID: cfg.KiteUserID, CallbackURL: cfg.BrokerCallbackURL}, k, s, s, nil)
	if err != nil {
		c.add("kite", statusFail, "%s", deskbot.ErrorMessage(err))
		return
	}
	sess, err := l.Session(ctx)
	switch {
	case deskbot.ErrorCode(err) == deskbot.ENOTFOUND:
		c.add("kite", statusWarn, "no session today: an approver must send /login in the group (the api_key is checked then)")
		return
	case deskbot.ErrorCode(err) == deskbot.EUNAUTHORIZED:
		c.add("kite", statusWarn, "%s", deskbot.ErrorMessage(err))
		return
	case err != nil:
		c.add("kite", statusFail, "the day's session cannot be read: %s", deskbot.ErrorMessage(err))
		return
	}
	k.SetAccessToken(sess.AccessToken)
	account, err := k.Profile(ctx)
	switch {
	case kite.IsSession(err):
		c.add("kite", statusWarn, "Kite no longer takes the session %s started at %s IST: an approver must send /login in the group", sess.By.Name, words.Time(sess.At))
	case err != nil:
		c.add("kite", statusFail, "Kite did not answer for the session: %s", deskbot.ErrorMessage(err))
	case account != cfg.KiteUserID:
		c.add("kite", statusFail, "the session is account %s's, not KITE_USER_ID %s's", account, cfg.KiteUserID)
	default:
		c.add("kite", statusOK, "%s", words.BrokerSession(sess))
		if err := k.ProbeTicker(ctx, cfg.KiteTickerURL, sess); err != nil {
			c.add("kite ticker", statusWarn, "%s; order updates come from reading the day's orders every 2 s instead", deskbot.ErrorMessage(err))
		} else {
			c.add("kite ticker", statusOK, "the ticker takes the session: order updates arrive as they happen")
		}
	}
}

// kiteSource prints the local address Kite's order requests leave from:
// the one that must be in the Kite app's IP whitelist (after any NAT in
// front of this host, whose public address is what Kite sees).
func (c *checker) kiteSource(ctx context.Context, cfg Config) {
	k := kite.New(kite.Options{APIKey: cfg.KiteAPIKey, APIURL: cfg.KiteAPIURL, SourceIP: cfg.KiteSourceIP})
	ip, how, err := k.OrderSource(ctx)
	if err != nil {
		c.add("kite orders", statusWarn, "the address orders leave from is not known: no route to Kite's API (%s)", cfg.KiteAPIURL)
		return
	}
	c.add("kite orders", statusOK, "orders leave from %s (%s): it (or the public address it is translated to) must be in the Kite app's IP whitelist", ip, how)
}
