package main

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/broker/kite"
	"github.com/deskbot/deskbot/exchange"
	"github.com/deskbot/deskbot/ops"
	"github.com/deskbot/deskbot/report"
	"github.com/deskbot/deskbot/risk"
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
	return p
}

// openKite builds Kite's client, its daily login and the market's
// calendar when KITE_API_KEY is set.
func (m *Main) openKite() error {
	cfg := m.Config
	if cfg.KiteAPIKey == "" {
		return nil
	}
	var err error
	if m.calendar, err = exchange.ParseCalendar(cfg.MarketHours, cfg.MarketHolidays); err != nil {
		return err
	}
	m.Kite = kite.New(kite.Options{APIKey: cfg.KiteAPIKey, APIURL: cfg.KiteAPIURL, Now: m.Now, Log: m.Log})
	m.Login, err = kite.NewLogin(kite.LoginConfig{
		APIKey: cfg.KiteAPIKey, APISecret: cfg.KiteAPISecret, UserID: cfg.KiteUserID,
		CallbackURL: cfg.BrokerCallbackURL, Now: m.Now, Redact: m.Redactor.Add,
	}, m.Kite, m.Store.Chat(), m.Store.Chat(), m.Log)
	return err
}

// kiteLoginReminder schedules the morning's reminder to log in to Kite:
// at KITE_LOGIN_REMINDER on the calendar's trading days (MARKET_HOURS'
// days less MARKET_HOLIDAYS, plus its special sessions: a Saturday's
// budget session is asked for too), when no session Kite takes is kept.
// Nil without Kite's login.
func (m *Main) kiteLoginReminder() (*report.Daily, error) {
	cfg := m.Config
	if m.Login == nil {
		return nil, nil
	}
	s, err := report.Everyday(cfg.KiteLoginReminder)
	if err != nil {
		return nil, fmt.Errorf("KITE_LOGIN_REMINDER: %s", deskbot.ErrorMessage(err))
	}
	return report.NewDaily(m.drain.Soft(), cfg.KiteLoginReminder, s, m.remindLogin, m.Log), nil
}

// remindLogin is the morning's reminder: on the calendar's trading days
// only, and only when no session Kite takes is kept.
func (m *Main) remindLogin(ctx context.Context) error {
	if !m.calendar.TradingDay(m.Now()) {
		return nil
	}
	return m.Login.RemindLogin(ctx)
}

// loginMounts is what the HTTP server mounts for the login's callback.
func (m *Main) loginMounts() []ops.Mount {
	if m.Login == nil {
		return nil
	}
	return []ops.Mount{{Pattern: m.Login.Path(), Handler: m.Login.Handler()}}
}

// openBroker opens Kite's login when it is on, and the broker BROKER
// names: the paper broker on its own prices, or on Kite's (paper-kite), its
// orders checked against Kite's instrument list and the market's calendar
// before anyone is asked; or Kite itself (kite), orders placed at Kite and
// followed until they are final. Every broker tells its desks and the chat
// of its orders' changes through the store, from the leader's update loop.
// Every broker puts each order to the desk's halt and square-off (rules)
// immediately before it makes it, after any wait for a rate-limit slot.
func (m *Main) openBroker(ctx context.Context, desks []string, rules map[string]deskbot.RiskRules) error {
	cfg := m.Config
	if err := m.openKite(); err != nil {
		return fmt.Errorf("kite: %s", deskbot.ErrorMessage(err))
	}
	// Books kept before a bare symbol meant NSE (BROKER=paper-kite booked
	// "NSE:INFY") are written in the one spelling before any order is.
	orders := broker.NewOrderLog(m.Store, m.Now, m.Store, m.Log)
	if n, err := orders.FoldBooks(ctx, desks); err != nil {
		return fmt.Errorf("the desks' books could not be read: %s", deskbot.ErrorMessage(err))
	} else if n > 0 {
		m.Log.Info("broker: positions booked as NSE:SYMBOL are now written SYMBOL, one position each", "positions", n)
	}
	admit := risk.Admission{Desks: m.Store, Rules: rules, Now: m.Now}.Admit
	if cfg.Broker == "paper" {
		p := broker.NewPaper(m.Store, m.Now).Accounting(desks).Admitting(admit).Telling(m.Store, m.Log)
		m.Broker, m.brokerUpdates = p, p.Run
		return nil
	}
	// BROKER=paper-kite and kite need KITE_API_KEY (kiteProblems), so the
	// login and the calendar are there.
	m.kiteDay = kite.NewDay(m.Kite, m.Login, m.calendar, cfg.KiteExchanges, m.Now, m.Log)
	m.kiteDay.Sizes = m.sizes
	m.kiteDay.TickerURL = cfg.KiteTickerURL
	switch cfg.Broker {
	case "paper-kite":
		p := broker.NewPaperMarket(m.Store, m.Now, m.kiteDay).Reading(m.kiteDay).Accounting(desks).Checking(m.kiteDay.Check).Admitting(admit).Telling(m.Store, m.Log)
		m.Broker, m.brokerUpdates = p, p.Run
	case "kite":
		b, err := kite.NewBroker(kite.BrokerConfig{
			Kite: m.Kite, Login: m.Login, Day: m.kiteDay, Now: m.Now, Log: m.Log, TickerURL: cfg.KiteTickerURL, Desks: desks,
			Orders: orders, Admit: admit,
		})
		if err != nil {
			return fmt.Errorf("kite: %s", deskbot.ErrorMessage(err))
		}
		m.Broker, m.brokerUpdates = b, b.Run
	default:
		return fmt.Errorf("BROKER=%s is not built into the service", cfg.Broker)
	}
	return nil
}

// brokerLogin is the login /login starts: none (a nil interface, not a nil
// *kite.Login) without KITE_API_KEY.
func (m *Main) brokerLogin() deskbot.BrokerLogin {
	if m.Login == nil {
		return nil
	}
	return m.Login
}

// kite probes Kite's day's session, when the login is on: whose it is (it
// must be KITE_USER_ID's) and whether Kite still takes it. Kite has no call
// that checks an api_key alone; the next login does.
func (c *checker) kite(ctx context.Context, cfg Config) {
	if cfg.KiteAPIKey == "" {
		return
	}
	if !cfg.redisNamed() {
		c.add("kite", statusWarn, "in-memory Redis: the day's Kite session is lost at every restart (an approver must /login again)")
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	s, err := store.Open(ctx, cfg.storeOptions())
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
