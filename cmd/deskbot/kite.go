package main

import (
	"context"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/trading"
)

// openBroker opens the broker BROKER names, and Kite's client, login and
// day when KITE_API_KEY is set (package trading).
func (m *Main) openBroker(ctx context.Context, desks []string, rules map[string]deskbot.RiskRules) (err error) {
	m.trading, err = trading.Open(ctx, m.Config, desks, rules, trading.Deps{Store: m.Store, Sizes: m.sizes, Now: m.Now, Log: m.Log, Redact: m.Redactor.Add, AlgoIDs: m.algoIDs})
	if err != nil {
		return err
	}
	m.Broker, m.Kite, m.Login, m.calendar = m.trading.Broker, m.trading.Kite, m.trading.Login, m.trading.Calendar
	return nil
}
