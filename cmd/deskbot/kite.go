package main

import (
	"net/http"
	"regexp"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker/kite"
	"github.com/deskbot/deskbot/ops"
)

// kiteUserID is a Kite account's id as Zerodha issues them (AB1234).
var kiteUserID = regexp.MustCompile(`^[A-Z]{2,4}[0-9]{3,6}$`)

// kiteProblems checks the KITE_* variables: all or none of the login's.
func (c Config) kiteProblems() []string {
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
	if _, err := kite.CheckCallbackURL(c.BrokerCallbackURL); err != nil {
		p = append(p, deskbot.ErrorMessage(err))
	}
	if _, err := kite.CheckAPIURL(c.KiteAPIURL); err != nil {
		p = append(p, deskbot.ErrorMessage(err))
	}
	return p
}

// kiteLogin builds Kite's daily login when KITE_API_KEY is set, and returns
// what the HTTP server mounts for its callback.
func (m *Main) kiteLogin() ([]ops.Mount, error) {
	cfg := m.Config
	if cfg.KiteAPIKey == "" {
		return nil, nil
	}
	l, err := kite.NewLogin(kite.LoginConfig{
		APIKey: cfg.KiteAPIKey, APISecret: cfg.KiteAPISecret, UserID: cfg.KiteUserID,
		APIURL: cfg.KiteAPIURL, CallbackURL: cfg.BrokerCallbackURL,
		HTTP: &http.Client{Timeout: 10 * time.Second}, Now: m.Now,
	}, m.Store.Chat(), m.Store.Chat(), m.Log)
	if err != nil {
		return nil, err
	}
	m.Login = l
	return []ops.Mount{{Pattern: l.Path(), Handler: l.Handler()}}, nil
}

// brokerLogin is the login /login starts: none (a nil interface, not a nil
// *kite.Login) without KITE_API_KEY.
func (m *Main) brokerLogin() deskbot.BrokerLogin {
	if m.Login == nil {
		return nil
	}
	return m.Login
}
