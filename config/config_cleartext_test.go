package config

import (
	"maps"
	"strings"
	"testing"

	"github.com/deskbot/deskbot/config/configtest"
)

// A URL that carries a secret with every request is refused as plain http
// to another machine: the bot token is in the Bot API's path, a model's
// key in a header. Plain http to this machine, or any https, is fine.
func TestConfigCleartextURLs(t *testing.T) {
	keyedDesks := func(t *testing.T, baseURL, extra string) string {
		t.Helper()
		return configtest.DesksFile(t, "[[desk]]\nname = \"main\"\n[[desk.model]]\nmodel = \"m\"\nbase_url = \""+baseURL+"\"\n"+extra)
	}
	tests := []struct {
		name string
		env  map[string]string
		want string // "" when the configuration is accepted
	}{
		{"telegram over http to another host", map[string]string{"TELEGRAM_API_URL": "http://bot-api.example.com:8081"}, "TELEGRAM_API_URL: plain http to another machine"},
		{"telegram over http to a LAN address", map[string]string{"TELEGRAM_API_URL": "http://10.0.0.5:8081"}, "TELEGRAM_API_URL: plain http"},
		{"telegram over HTTP in capitals", map[string]string{"TELEGRAM_API_URL": "HTTP://bot-api.example.com"}, "TELEGRAM_API_URL: plain http"},
		{"telegram over http to localhost", map[string]string{"TELEGRAM_API_URL": "http://localhost:8081"}, ""},
		{"telegram over http to 127.0.0.2", map[string]string{"TELEGRAM_API_URL": "http://127.0.0.2:8081"}, ""},
		{"telegram over http to ::1", map[string]string{"TELEGRAM_API_URL": "http://[::1]:8081"}, ""},
		{"telegram over https", map[string]string{"TELEGRAM_API_URL": "https://bot-api.example.com"}, ""},
		{"model key over http", map[string]string{"MODEL_BASE_URL": "http://gpu-box:8000/v1", "MODEL_API_KEY": "sk-abc"}, "MODEL_BASE_URL: plain http to another machine"},
		{"anthropic key over http", map[string]string{"MODEL_PROVIDER": "anthropic", "MODEL_BASE_URL": "http://proxy.example.com", "ANTHROPIC_API_KEY": "sk-ant"}, "MODEL_BASE_URL: plain http"},
		{"no key over http", map[string]string{"MODEL_BASE_URL": "http://gpu-box:8000/v1"}, ""},
		{"model key over http to localhost", map[string]string{"MODEL_BASE_URL": "http://localhost:11434/v1", "MODEL_API_KEY": "sk-abc"}, ""},
		{"model key over https", map[string]string{"MODEL_BASE_URL": "https://api.openai.com/v1", "MODEL_API_KEY": "sk-abc"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := configtest.MinimalEnv()
			maps.Copy(env, tt.env)
			checkLoad(t, env, tt.want)
		})
	}

	t.Run("desk model key over http", func(t *testing.T) {
		env := configtest.MinimalEnv()
		env["DESK_KEY"] = "sk-desk"
		env["DESKS_FILE"] = keyedDesks(t, "http://gpu-box:8000/v1", "api_key_env = \"DESK_KEY\"\n")
		checkLoad(t, env, `DESKS_FILE: desk "main" model 1: base_url is plain http to another machine and would send the key in DESK_KEY`)
	})
	t.Run("desk anthropic model over http", func(t *testing.T) {
		env := configtest.MinimalEnv()
		env["DESKS_FILE"] = keyedDesks(t, "http://proxy.example.com", "provider = \"anthropic\"\n")
		checkLoad(t, env, "would send the key in ANTHROPIC_API_KEY")
	})
	t.Run("desk model without a key over http", func(t *testing.T) {
		env := configtest.MinimalEnv()
		env["DESKS_FILE"] = keyedDesks(t, "http://gpu-box:8000/v1", "")
		checkLoad(t, env, "")
	})
	t.Run("desk model key over http to localhost", func(t *testing.T) {
		env := configtest.MinimalEnv()
		env["DESK_KEY"] = "sk-desk"
		env["DESKS_FILE"] = keyedDesks(t, "http://127.0.0.1:8000/v1", "api_key_env = \"DESK_KEY\"\n")
		checkLoad(t, env, "")
	})
}

// checkLoad loads env and wants an error containing want, or none when
// want is "". No error message may carry a secret of the environment.
func checkLoad(t *testing.T, env map[string]string, want string) {
	t.Helper()
	_, err := Load(env)
	switch {
	case want == "" && err != nil:
		t.Errorf("LoadConfig: %v, want it accepted", err)
	case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
		t.Errorf("LoadConfig: %v, want an error containing %q", err, want)
	}
	if err != nil {
		for _, name := range []string{"TELEGRAM_TOKEN", "MODEL_API_KEY", "ANTHROPIC_API_KEY", "DESK_KEY", "REDIS_PASSWORD", "REDIS_URL"} {
			if v := env[name]; v != "" && strings.Contains(err.Error(), v) {
				t.Errorf("the error shows %s's value: %v", name, err)
			}
		}
	}
}
