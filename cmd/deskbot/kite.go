package main

import (
	"context"
	"fmt"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/ops"
	"github.com/deskbot/deskbot/report"
	"github.com/deskbot/deskbot/trading"
)

// openBroker opens the broker BROKER names, and Kite's client, login and
// day when KITE_API_KEY is set (package trading).
func (m *Main) openBroker(ctx context.Context, desks []string, rules map[string]deskbot.RiskRules) error {
	p, err := trading.Open(ctx, m.Config, desks, rules, trading.Deps{Store: m.Store, Sizes: m.sizes, Now: m.Now, Log: m.Log, Redact: m.Redactor.Add, AlgoIDs: m.algoIDs})
	if err != nil {
		return err
	}
	m.Broker, m.brokerUpdates, m.Kite, m.Login, m.kiteDay, m.calendar = p.Broker, p.Updates, p.Kite, p.Login, p.Day, p.Calendar
	return nil
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

// brokerLogin is the login /login starts: none (a nil interface, not a nil
// *kite.Login) without KITE_API_KEY.
func (m *Main) brokerLogin() deskbot.BrokerLogin {
	if m.Login == nil {
		return nil
	}
	return m.Login
}
