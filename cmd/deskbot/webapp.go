package main

import (
	"github.com/deskbot/deskbot/agent"
	"github.com/deskbot/deskbot/ops"
	"github.com/deskbot/deskbot/webapp"
)

// webApp builds the desks page when WEBAPP_URL is set, and returns what
// the HTTP server mounts for it.
func (m *Main) webApp(desks []agent.DeskConfig) ([]ops.Mount, error) {
	cfg := m.Config
	if cfg.WebAppURL == "" {
		return nil, nil
	}
	shown := make([]webapp.Desk, len(desks))
	policies := agent.Policies(desks)
	for i, d := range desks {
		shown[i].Name, shown[i].Product = d.Name, policies.Product(d.Name)
		for _, s := range d.Schedules {
			shown[i].Schedule = append(shown[i].Schedule, s.Cron+": "+s.Text)
		}
	}
	var err error
	m.Web, err = webapp.New(webapp.Config{
		URL: cfg.WebAppURL, Token: cfg.TelegramToken, MaxAge: cfg.WebAppMaxAge, Desks: shown, Now: m.Now,
		PriceMaxAge: cfg.PriceMaxAge,
		TradingDay:  m.days.TradingDay,
	}, webapp.Deps{
		Team: m.Bot, Gate: m.Gate, Requests: m.Store, Desks: m.Store, Broker: m.Broker,
		Audit: m.Store, Ledger: m.Store, Orders: m.Store, Notes: m.Store, Events: m.Store, Risk: m.Store, Watches: m.Store, Market: m.Hub,
	}, m.Log)
	if err != nil {
		return nil, err
	}
	return []ops.Mount{{Pattern: m.Web.Path(), Handler: m.Web.Handler()}}, nil
}
