package config

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/deskbot/deskbot/config/configtest"
)

// A configuration mistake in APPROVAL_TOOLS never leaves a tool unguarded:
// entries are trimmed (the gate compares names exactly), empty ones are
// dropped, and an unknown name stops the start naming it and the tools.
func TestLoadConfigApprovalTools(t *testing.T) {
	const known = "(tools are bash, bash_background, check_background, get_positions, place_order, get_orders, cancel_order, flatten_desk, modify_order, place_gtt, cancel_gtt, send_message, get_quote, get_candles, search_instruments, get_option_chain, get_funds, watch_price, cancel_watch)"
	tests := []struct {
		name    string
		value   string // "-" leaves it unset
		want    []string
		wantErr string
	}{
		{"unset guards orders, modifications and GTTs too", "-", []string{"flatten_desk", "place_order", "modify_order", "place_gtt"}, ""},
		{"place_order guards modify_order and place_gtt", "place_order", []string{"place_order", "modify_order", "place_gtt"}, ""},
		{"modify_order alone guards only it", "modify_order", []string{"modify_order"}, ""},
		{"one", "flatten_desk", []string{"flatten_desk"}, ""},
		{"space after comma", "flatten_desk, place_order", []string{"flatten_desk", "place_order", "modify_order", "place_gtt"}, ""},
		{"padded", "  bash\t,place_order  ", []string{"bash", "place_order", "bash_background", "modify_order", "place_gtt"}, ""},
		{"trailing comma", "flatten_desk,place_order,", []string{"flatten_desk", "place_order", "modify_order", "place_gtt"}, ""},
		{"a list from before GTTs still guards them", "flatten_desk,place_order", []string{"flatten_desk", "place_order", "modify_order", "place_gtt"}, ""},
		{"GTTs alone", "place_gtt", []string{"place_gtt"}, ""},
		{"repeated", "bash, bash", []string{"bash", "bash_background"}, ""},
		{"background terminal brings bash", "bash_background", []string{"bash_background", "bash"}, ""},
		{"typo", "flatten-desk", nil, `APPROVAL_TOOLS: "flatten-desk" is not a tool ` + known},
		{"typo among good ones", "place_order, flatten-desk", nil, `APPROVAL_TOOLS: "flatten-desk" is not a tool`},
		{"two unknown", "Bash,placeorder", nil, `APPROVAL_TOOLS: "Bash", "placeorder" are not tools`},
		{"only separators", " , ", nil, "APPROVAL_TOOLS: names no tool " + known},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := configtest.MinimalEnv()
			if tt.value != "-" {
				env["APPROVAL_TOOLS"] = tt.value
			}
			cfg, err := Load(env)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.ApprovalTools; !slices.Equal(got, tt.want) {
				t.Errorf("ApprovalTools = %q, want %q", got, tt.want)
			}
		})
	}
}

// SANDBOX_ENV may hand a desk no secret of the service: not by the
// secret's own name, not by a per-desk api_key_env, not by another variable
// holding the same value.
func TestLoadConfigSandboxEnvRefusesSecrets(t *testing.T) {
	desks := configtest.DesksFile(t, "[[desk]]\nname = \"a\"\n[[desk.model]]\nmodel = \"m\"\napi_key_env = \"DESK_A_KEY\"\n")
	tests := []struct {
		name    string
		value   string
		wantErr string // "" means accepted
	}{
		{"ordinary", "MARKET_DATA_URL, HTTPS_PROXY", ""},
		{"token", "TELEGRAM_TOKEN", "SANDBOX_ENV: TELEGRAM_TOKEN holds a secret"},
		{"token padded", "MARKET_DATA_URL, TELEGRAM_TOKEN ", "SANDBOX_ENV: TELEGRAM_TOKEN holds a secret"},
		{"redis url", "REDIS_URL", "SANDBOX_ENV: REDIS_URL holds a secret"},
		{"redis password", "REDIS_PASSWORD", "SANDBOX_ENV: REDIS_PASSWORD holds a secret"},
		{"model key", "MODEL_API_KEY", "SANDBOX_ENV: MODEL_API_KEY holds a secret"},
		{"openai key", "OPENAI_API_KEY", "SANDBOX_ENV: OPENAI_API_KEY holds a secret"},
		{"anthropic key", "ANTHROPIC_API_KEY", "SANDBOX_ENV: ANTHROPIC_API_KEY holds a secret"},
		{"desk key", "DESK_A_KEY", "SANDBOX_ENV: DESK_A_KEY holds a secret"},
		{"alias of the token", "COPY", "SANDBOX_ENV: COPY carries the value of a secret"},
		{"alias of the redis password", "DB", "SANDBOX_ENV: DB carries the value of a secret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := configtest.MinimalEnv()
			maps.Copy(env, map[string]string{
				"DESKS_FILE": desks, "DESK_A_KEY": "sk-desk-a-0123456789", "SANDBOX_ENV": tt.value,
				"REDIS_URL": "redis://:redis-pw-0123@127.0.0.1:6379", "MARKET_DATA_URL": "https://example.com",
				"COPY": configtest.Token, "DB": "postgres://u:redis-pw-0123@db",
			})
			cfg, err := Load(env)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if got, want := cfg.SandboxEnv, []string{"MARKET_DATA_URL", "HTTPS_PROXY"}; !slices.Equal(got, want) {
					t.Errorf("SandboxEnv = %q, want %q", got, want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want it to contain %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), configtest.Token) || strings.Contains(err.Error(), "0123") {
				t.Errorf("the error shows a secret's value: %v", err)
			}
		})
	}
}

// Every per-desk key (the value of each api_key_env in DESKS_FILE) is
// scrubbed from the logs, like the service's own secrets.
func TestLoggerScrubsDeskKeys(t *testing.T) {
	const key = "sk-desk-b-9876543210"
	env := configtest.MinimalEnv()
	env["DESKS_FILE"] = configtest.DesksFile(t, "[[desk]]\nname = \"a\"\n[[desk.model]]\nmodel = \"m\"\n\n"+
		"[[desk]]\nname = \"b\"\n[[desk.model]]\nmodel = \"m\"\napi_key_env = \"DESK_B_KEY\"\n")
	env["DESK_B_KEY"] = key
	cfg, err := Load(env)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	log, _ := NewLogger(cfg, &b)
	log.Error("model failed", "err", errors.New("401 for key "+key), "detail", "Bearer "+key)
	if strings.Contains(b.String(), key) {
		t.Errorf("a desk's key reached the log:\n%s", b.String())
	}
	if !strings.Contains(b.String(), "[redacted]") {
		t.Errorf("no redaction in %q", b.String())
	}
}

// The desks page's variables: an address Telegram can open, a short name
// only with it, a positive sign-in age; each mistake named.
func TestLoadConfigWebApp(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		wantErr string
	}{
		{"off", nil, ""},
		{"https", map[string]string{"WEBAPP_URL": "https://desks.example.com/desks/", "WEBAPP_NAME": "desks"}, ""},
		{"loopback http", map[string]string{"WEBAPP_URL": "http://127.0.0.1:8080/desks/"}, ""},
		{"http on a network", map[string]string{"WEBAPP_URL": "http://desks.example.com/desks/"}, "WEBAPP_URL: must be https"},
		{"name without URL", map[string]string{"WEBAPP_NAME": "desks"}, "WEBAPP_NAME: needs WEBAPP_URL"},
		{"bad name", map[string]string{"WEBAPP_URL": "https://d.example.com/", "WEBAPP_NAME": "my desks"}, "WEBAPP_NAME: the Mini App's short name"},
		{"zero age", map[string]string{"WEBAPP_URL": "https://d.example.com/", "WEBAPP_MAX_AGE": "0s"}, "WEBAPP_MAX_AGE: must be a positive duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := configtest.MinimalEnv()
			maps.Copy(env, tt.env)
			_, err := Load(env)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}
