package config

import (
	"encoding/base64"
	"encoding/hex"
	"maps"
	"net/url"
	"strings"
	"testing"

	"github.com/deskbot/deskbot/config/configtest"
)

// SANDBOX_ENV hands a desk no secret of the service in any form a program
// could turn back into it, however short the secret: plain, URL-escaped
// (once or twice), base64 in either alphabet, alone or encoded along with
// other text, hex, or inside a URL.
func TestConfigSandboxEnvSecretForms(t *testing.T) {
	const (
		short = "pw7"         // a Redis password shorter than 8 characters
		odd   = "p@ss/w:rd+1" // one a URL must escape
		key   = "sk-model-key-0123456789"
	)
	b64 := base64.StdEncoding.EncodeToString
	tests := []struct {
		name    string
		secrets map[string]string
		value   string
		refused bool
	}{
		{"short password, plain", map[string]string{"REDIS_PASSWORD": short}, "x" + short + "y", true},
		{"short password inside a URL", map[string]string{"REDIS_PASSWORD": short}, "redis://:" + short + "@cache:6379/1", true},
		{"short token part", map[string]string{"TELEGRAM_TOKEN": "42:tok"}, "https://api.telegram.org/bot42:tok/getMe", true},
		{"short token part alone", map[string]string{"TELEGRAM_TOKEN": "42:tok"}, "tok", true},
		{"URL-escaped", map[string]string{"REDIS_PASSWORD": odd}, url.QueryEscape(odd), true},
		{"path-escaped inside a URL", map[string]string{"REDIS_PASSWORD": odd}, "https://u:" + url.PathEscape(odd) + "@proxy:3128", true},
		{"userinfo-escaped inside a URL", map[string]string{"REDIS_PASSWORD": odd}, (&url.URL{Scheme: "https", User: url.UserPassword("u", odd), Host: "proxy:3128"}).String(), true},
		{"escaped twice", map[string]string{"REDIS_PASSWORD": odd}, url.QueryEscape(url.QueryEscape(odd)), true},
		{"escaped with capitals", map[string]string{"REDIS_PASSWORD": "a b/c"}, "a%20b%2Fc", true},
		{"base64", map[string]string{"MODEL_API_KEY": key}, b64([]byte(key)), true},
		{"base64 unpadded, URL alphabet", map[string]string{"MODEL_API_KEY": key + "?>"}, base64.RawURLEncoding.EncodeToString([]byte(key + "?>")), true},
		{"base64 of a basic-auth pair", map[string]string{"MODEL_API_KEY": key}, "Basic " + b64([]byte("user:"+key)), true},
		{"base64 after letters", map[string]string{"MODEL_API_KEY": key}, "abc" + b64([]byte(key)), true},
		{"base64 of a short secret", map[string]string{"REDIS_PASSWORD": short}, b64([]byte("x:" + short)), true},
		{"base64 URL-escaped", map[string]string{"ANTHROPIC_API_KEY": key + "~~"}, url.QueryEscape(b64([]byte(key + "~~"))), true},
		{"hex", map[string]string{"MODEL_API_KEY": key}, hex.EncodeToString([]byte(key)), true},
		{"hex in capitals", map[string]string{"MODEL_API_KEY": key}, "0X" + strings.ToUpper(hex.EncodeToString([]byte(key))), true},
		{"a desk's key", map[string]string{"DESK_KEY": "dk1"}, "token=dk1", true},
		{"the Redis URL's password", map[string]string{"REDIS_URL": "redis://:pw7@cache:6379"}, "PW=" + short, true},
		{"an unrelated value", map[string]string{"REDIS_PASSWORD": "s3cr3t-Pass", "MODEL_API_KEY": key}, "https://pypi.org/simple", false},
		{"an unrelated base64 value", map[string]string{"MODEL_API_KEY": key}, b64([]byte("just some data")), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := configtest.MinimalEnv()
			maps.Copy(env, tt.secrets)
			if _, ok := tt.secrets["DESK_KEY"]; ok {
				env["DESKS_FILE"] = configtest.DesksFile(t, "[[desk]]\nname = \"main\"\n[[desk.model]]\nmodel = \"m\"\napi_key_env = \"DESK_KEY\"\n")
			}
			env["PASSED"] = tt.value
			env["SANDBOX_ENV"] = "PASSED"
			want := ""
			if tt.refused {
				want = "SANDBOX_ENV: PASSED carries the value of a secret of the service"
			}
			checkLoad(t, env, want)
		})
	}
	// The message names where the secret comes from, never its value.
	for _, tt := range []struct{ name, secretVar, secret, value, from string }{
		{"a short password", "REDIS_PASSWORD", short, "x" + short, "(REDIS_PASSWORD)"},
		{"the token's secret part", "TELEGRAM_TOKEN", "42:tok", b64([]byte("tok")), "(TELEGRAM_TOKEN after its colon)"},
		{"the Redis URL's password", "REDIS_URL", "redis://:" + url.PathEscape(odd) + "@cache:6379", url.QueryEscape(odd), "(the password in REDIS_URL)"},
	} {
		t.Run("names "+tt.name, func(t *testing.T) {
			env := configtest.MinimalEnv()
			env[tt.secretVar], env["PASSED"], env["SANDBOX_ENV"] = tt.secret, tt.value, "PASSED"
			checkLoad(t, env, "SANDBOX_ENV: PASSED carries the value of a secret of the service "+tt.from)
		})
	}
}
