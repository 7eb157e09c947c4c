package trading

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/ops"
	"github.com/deskbot/deskbot/report"
)

// LoginReminder schedules the morning's reminder to log in to Kite, on
// ctx: at at (KITE_LOGIN_REMINDER) on the calendar's trading days
// (MARKET_HOURS' days less MARKET_HOLIDAYS, plus its special sessions: a
// Saturday's budget session is asked for too), when no session Kite takes
// is kept. Nil without Kite's login.
func (p *Parts) LoginReminder(ctx context.Context, at string, log *slog.Logger) (*report.Daily, error) {
	if p.Login == nil {
		return nil, nil
	}
	s, err := report.Everyday(at)
	if err != nil {
		return nil, fmt.Errorf("KITE_LOGIN_REMINDER: %s", deskbot.ErrorMessage(err))
	}
	return report.NewDaily(ctx, at, s, p.RemindLogin, log), nil
}

// RemindLogin is the morning's reminder: on the calendar's trading days
// only, and only when no session Kite takes is kept.
func (p *Parts) RemindLogin(ctx context.Context) error {
	if !p.Calendar.TradingDay(p.now()) {
		return nil
	}
	return p.Login.RemindLogin(ctx)
}

// Mounts is what the HTTP server mounts for the login's callback.
func (p *Parts) Mounts() []ops.Mount {
	if p.Login == nil {
		return nil
	}
	return []ops.Mount{{Pattern: p.Login.Path(), Handler: p.Login.Handler()}}
}

// BrokerLogin is the login /login starts: none (a nil interface, not a nil
// *kite.Login) without KITE_API_KEY.
func (p *Parts) BrokerLogin() deskbot.BrokerLogin {
	if p.Login == nil {
		return nil
	}
	return p.Login
}
