package config

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/deskbot/deskbot/config/configtest"
)

// A Redis password with characters a URL must escape is written escaped in
// REDIS_URL, and so in any other variable that carries the same URL: the
// escaped form is as much the secret as the plain one, for SANDBOX_ENV and
// for the log scrubber.
func TestHostileEscapedRedisPasswordIsASecret(t *testing.T) {
	const url = "redis://:p%40ss%2Fw0rd-99@127.0.0.1:6379/0"
	env := configtest.MinimalEnv()
	maps.Copy(env, map[string]string{
		"REDIS_URL":   url,
		"CACHE_URL":   strings.TrimSuffix(url, "/0") + "/1",
		"SANDBOX_ENV": "CACHE_URL",
	})
	cfg, err := Load(env)
	if err == nil || !strings.Contains(err.Error(), "SANDBOX_ENV: CACHE_URL carries the value of a secret") {
		t.Errorf("LoadConfig = %v, want CACHE_URL refused: it carries the Redis password", err)
	}
	for _, form := range []string{"p@ss/w0rd-99", "p%40ss%2Fw0rd-99"} {
		if !slices.Contains(cfg.Secrets(), form) {
			t.Errorf("the log scrubber does not know the Redis password as %q", form)
		}
	}
}
