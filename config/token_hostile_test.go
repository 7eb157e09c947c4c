package config

import (
	"strings"
	"testing"

	"github.com/deskbot/deskbot/config/configtest"
)

// The bot token is "<bot id>:<secret>", and the bot id is public (it is the
// bot's user id, which every member of the group sees): the part after the
// colon is as much the secret as the whole. A variable holding it alone is
// refused in SANDBOX_ENV, and a log line carrying it alone is scrubbed.
func TestHostileBotTokenWithoutItsIDIsASecret(t *testing.T) {
	const token = "7318554406:AAHs3cr3t-bot-token-value"
	const part = "AAHs3cr3t-bot-token-value"
	env := configtest.MinimalEnv()
	env["TELEGRAM_TOKEN"] = token
	env["BOT_SECRET"] = part
	env["SANDBOX_ENV"] = "BOT_SECRET"
	if _, err := Load(env); err == nil || !strings.Contains(err.Error(), "SANDBOX_ENV: BOT_SECRET carries the value of a secret") {
		t.Errorf("LoadConfig = %v, want BOT_SECRET refused: it carries the bot token's secret part", err)
	}

	delete(env, "SANDBOX_ENV")
	cfg, err := Load(env)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	log, _ := NewLogger(cfg, &b)
	log.Warn("telegram refused", "url", "https://api.telegram.org/bot"+strings.Replace(token, ":", "%3A", 1)+"/getMe", "secret", part)
	if strings.Contains(b.String(), part) {
		t.Errorf("the bot token's secret part reached the log:\n%s", b.String())
	}
}
