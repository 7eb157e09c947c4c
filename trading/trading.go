// Package trading opens what trades for the desks: the broker BROKER
// names (the paper broker on its own prices, on Kite's, or Kite itself),
// and with KITE_API_KEY Kite's one client, its daily login, the trading
// day at Kite and the market's calendar; and what the login adds to the
// service: the morning's reminder (Parts.LoginReminder), the callback the
// HTTP server mounts (Parts.Mounts), the /login the bot starts
// (Parts.BrokerLogin). It only assembles: the parts it returns are the
// brokers' and Kite's own, safe for concurrent use as their packages say;
// Open runs once, at the start.
package trading

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/broker/kite"
	"github.com/deskbot/deskbot/config"
	"github.com/deskbot/deskbot/exchange"
	"github.com/deskbot/deskbot/risk"
	"github.com/deskbot/deskbot/store"
)

// Parts are what Open opened.
type Parts struct {
	Broker deskbot.Broker
	// Updates is the broker's update loop, the leader's: resting orders
	// filled (paper) or Kite's order updates followed, each change of an
	// order told to its desk and the chat once.
	Updates  func(ctx context.Context)
	Kite     *kite.Client       // the one client of Kite; nil without KITE_API_KEY
	Login    *kite.Login        // Kite's daily login; nil without KITE_API_KEY
	Day      *kite.Day          // the trading day at Kite under BROKER=paper-kite and kite
	Calendar *exchange.Calendar // MARKET_HOURS and MARKET_HOLIDAYS; nil without Kite
	now      deskbot.Now
}

// Deps are what the parts stand on. Redact learns each day's Kite access
// token, so that the logs scrub it.
type Deps struct {
	Store  *store.Store
	Sizes  deskbot.ContractSizes
	Now    deskbot.Now
	Log    *slog.Logger
	Redact func(secret string)
	// AlgoIDs are the desks' own algo ids (a desk's algo_id), each
	// overriding KITE_ALGO_ID for that desk's orders at Kite.
	AlgoIDs map[string]string
}

// openKite builds Kite's client, its daily login and the market's
// calendar when KITE_API_KEY is set.
func (p *Parts) openKite(cfg config.Config, d Deps) error {
	if cfg.KiteAPIKey == "" {
		return nil
	}
	var err error
	if p.Calendar, err = exchange.ParseCalendar(cfg.MarketHours, cfg.MarketHolidays); err != nil {
		return err
	}
	p.Kite = kite.New(kite.Options{APIKey: cfg.KiteAPIKey, APIURL: cfg.KiteAPIURL, SourceIP: cfg.KiteSourceIP, Now: d.Now, Log: d.Log})
	p.Login, err = kite.NewLogin(kite.LoginConfig{
		APIKey: cfg.KiteAPIKey, APISecret: cfg.KiteAPISecret, UserID: cfg.KiteUserID,
		CallbackURL: cfg.BrokerCallbackURL, Now: d.Now, Redact: d.Redact,
	}, p.Kite, d.Store.Chat(), d.Store.Chat(), d.Log)
	return err
}

// Open opens Kite's login when it is on, and the broker BROKER
// names: the paper broker on its own prices, or on Kite's (paper-kite), its
// orders checked against Kite's instrument list and the market's calendar
// before anyone is asked; or Kite itself (kite), orders placed at Kite and
// followed until they are final. Every broker tells its desks and the chat
// of its orders' changes through the store, from the leader's update loop.
// Every broker puts each order to the desk's halt and square-off (rules)
// immediately before it makes it, after any wait for a rate-limit slot.
func Open(ctx context.Context, cfg config.Config, desks []string, rules map[string]deskbot.RiskRules, d Deps) (*Parts, error) {
	p := &Parts{now: d.Now}
	if err := p.openKite(cfg, d); err != nil {
		return nil, fmt.Errorf("kite: %s", deskbot.ErrorMessage(err))
	}
	// Books kept before a bare symbol meant NSE (BROKER=paper-kite booked
	// "NSE:INFY") are written in the one spelling before any order is.
	orders := broker.NewOrderLog(d.Store, d.Now, d.Store, d.Log)
	if n, err := orders.FoldBooks(ctx, desks); err != nil {
		return nil, fmt.Errorf("the desks' books could not be read: %s", deskbot.ErrorMessage(err))
	} else if n > 0 {
		d.Log.Info("broker: positions booked as NSE:SYMBOL are now written SYMBOL, one position each", "positions", n)
	}
	admit := risk.Admission{Desks: d.Store, Rules: rules, Now: d.Now}.Admit
	if cfg.Broker == "paper" {
		pb := broker.NewPaper(d.Store, d.Now).Accounting(desks).Admitting(admit).Telling(d.Store, d.Log)
		p.Broker, p.Updates = pb, pb.Run
		return p, nil
	}
	// BROKER=paper-kite and kite need KITE_API_KEY (config checks it), so the
	// login and the calendar are there.
	p.Day = kite.NewDay(p.Kite, p.Login, p.Calendar, cfg.KiteExchanges, d.Now, d.Log)
	p.Day.Sizes = d.Sizes
	p.Day.TickerURL = cfg.KiteTickerURL
	switch cfg.Broker {
	case "paper-kite":
		pb := broker.NewPaperMarket(d.Store, d.Now, p.Day).Reading(p.Day).Accounting(desks).Checking(p.Day.Check).Admitting(admit).Telling(d.Store, d.Log)
		p.Broker, p.Updates = pb, pb.Run
	case "kite":
		b, err := kite.NewBroker(kite.BrokerConfig{
			Kite: p.Kite, Login: p.Login, Day: p.Day, Now: d.Now, Log: d.Log, TickerURL: cfg.KiteTickerURL, Desks: desks,
			Orders: orders, Admit: admit, AlgoID: cfg.KiteAlgoID, DeskAlgoIDs: d.AlgoIDs, Sent: d.Store,
		})
		if err != nil {
			return nil, fmt.Errorf("kite: %s", deskbot.ErrorMessage(err))
		}
		p.Broker, p.Updates = b, b.Run
	default:
		return nil, fmt.Errorf("BROKER=%s is not built into the service", cfg.Broker)
	}
	return p, nil
}
