package config

import (
	"strings"
	"testing"

	"github.com/deskbot/deskbot/config/configtest"
)

// KITE_ALGO_ID and KITE_SOURCE_IP are checked at the start: a malformed
// algo id, or an address this host does not own, stops it naming the
// variable and the fix; good ones load.
func TestKiteAlgoIDAndSourceIPChecked(t *testing.T) {
	tests := []struct {
		name, algo, source string
		wantErr            string
	}{
		{"unset", "", "", ""},
		{"both good", "ALGO-12_3", "127.0.0.2", ""},
		{"algo id with a space", "ALGO 1", "", "KITE_ALGO_ID: an algo id has only letters, digits, - and _"},
		{"algo id smuggling a form field", "1&tag=x", "", "KITE_ALGO_ID"},
		{"algo id too long", strings.Repeat("A", 31), "", "KITE_ALGO_ID: an algo id has at most 30 characters"},
		{"source not an address", "", "my-static-ip", `KITE_SOURCE_IP: "my-static-ip" is not an IP address`},
		{"source not this host's", "", "192.0.2.77", "KITE_SOURCE_IP: this host has no address 192.0.2.77"},
		{"source unspecified", "", "0.0.0.0", "KITE_SOURCE_IP: 0.0.0.0 cannot be an order's source address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := configtest.MinimalEnv()
			for k, v := range map[string]string{"BROKER": "kite", "KITE_API_KEY": "key", "KITE_API_SECRET": "secret", "KITE_USER_ID": "AB1234",
				"BROKER_CALLBACK_URL": "http://127.0.0.1:8080/kite/callback", "KITE_ALGO_ID": tt.algo, "KITE_SOURCE_IP": tt.source} {
				env[k] = v
			}
			cfg, err := Load(env)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				if cfg.KiteAlgoID != tt.algo || cfg.KiteSourceIP != tt.source {
					t.Errorf("loaded %q, %q; want %q, %q", cfg.KiteAlgoID, cfg.KiteSourceIP, tt.algo, tt.source)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}
