package main

import (
	"context"
	"fmt"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/broker/kite"
	"github.com/deskbot/deskbot/exchange"
	"github.com/deskbot/deskbot/ops"
	"github.com/deskbot/deskbot/report"
	"github.com/deskbot/deskbot/risk"
)

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
	return report.NewDaily(m.drain.soft, cfg.KiteLoginReminder, s, m.remindLogin, m.Log), nil
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
	orders := broker.NewOrderLog(m.Store.Client(), m.Store.Key, m.Now, m.Store, m.Log)
	if n, err := orders.FoldBooks(ctx, desks); err != nil {
		return fmt.Errorf("the desks' books could not be read: %s", deskbot.ErrorMessage(err))
	} else if n > 0 {
		m.Log.Info("broker: positions booked as NSE:SYMBOL are now written SYMBOL, one position each", "positions", n)
	}
	admit := risk.Admission{Desks: m.Store, Rules: rules, Now: m.Now}.Admit
	if cfg.Broker == "paper" {
		p := broker.NewPaper(m.Store.Client(), m.Store.Key, m.Now).Accounting(desks).Admitting(admit).Telling(m.Store, m.Log)
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
		p := broker.NewPaperMarket(m.Store.Client(), m.Store.Key, m.Now, m.kiteDay).Reading(m.kiteDay).Accounting(desks).Checking(m.kiteDay.Check).Admitting(admit).Telling(m.Store, m.Log)
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
