package config

import (
	"fmt"
	"testing"

	"github.com/deskbot/deskbot/config/configtest"
)

// Every list variable takes spaces after its commas, as people write lists:
// TELEGRAM_APPROVERS='111, 222' was refused while APPROVAL_TOOLS took them.
func TestListVariablesAcceptSpacesAfterCommas(t *testing.T) {
	tests := []struct {
		name, value string
		extra       map[string]string
		got         func(Config) any
		want        string
	}{
		{"TELEGRAM_APPROVERS", "111, 222", nil, func(c Config) any { return c.TelegramApprovers }, "[111 222]"},
		{"TELEGRAM_APPROVERS", " 111 ,\t222 ", nil, func(c Config) any { return c.TelegramApprovers }, "[111 222]"},
		{"DESKS", "main, fno", nil, func(c Config) any { return c.Desks }, "[main fno]"},
		{"KITE_EXCHANGES", "NSE, NFO", nil, func(c Config) any { return c.KiteExchanges }, "[NSE NFO]"},
		{"SANDBOX_ENV", "TZ, LANG", nil, func(c Config) any { return c.SandboxEnv }, "[TZ LANG]"},
		{"REDIS_SENTINELS", "10.0.0.1:26379, 10.0.0.2:26379", map[string]string{"REDIS_MASTER_NAME": "mymaster"},
			func(c Config) any { return c.RedisSentinels }, "[10.0.0.1:26379 10.0.0.2:26379]"},
	}
	for _, tt := range tests {
		t.Run(tt.name+"="+tt.value, func(t *testing.T) {
			env := configtest.MinimalEnv()
			env[tt.name] = tt.value
			for k, v := range tt.extra {
				env[k] = v
			}
			cfg, err := Load(env)
			if err != nil {
				t.Fatalf("%s=%q refused: %v", tt.name, tt.value, err)
			}
			if got := fmt.Sprint(tt.got(cfg)); got != tt.want {
				t.Errorf("%s=%q read as %s, want %s", tt.name, tt.value, got, tt.want)
			}
			if env[tt.name] != tt.value {
				t.Errorf("LoadConfig changed its caller's environment: %q", env[tt.name])
			}
		})
	}
}
