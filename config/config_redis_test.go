package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/deskbot/deskbot/config/configtest"
)

// The Redis variables name one Redis; contradictory or half-given settings
// stop the start with a line naming the variable, never a password.
func TestLoadConfigRedis(t *testing.T) {
	const pw = "pw-never-shown-0123"
	tests := []struct {
		name    string
		env     map[string]string
		wantErr string // "" accepts
	}{
		{"none: embedded", nil, ""},
		{"url", map[string]string{"REDIS_URL": "redis://:" + pw + "@127.0.0.1:6379/0"}, ""},
		{"url and the same password (compose)", map[string]string{"REDIS_URL": "redis://:" + pw + "@redis:6379/0", "REDIS_PASSWORD": pw}, ""},
		{"url without password, password apart", map[string]string{"REDIS_URL": "redis://127.0.0.1:6379", "REDIS_PASSWORD": pw}, ""},
		{"url and another password", map[string]string{"REDIS_URL": "redis://:" + pw + "@127.0.0.1:6379", "REDIS_PASSWORD": "another-one"}, "REDIS_PASSWORD: differs from the password in REDIS_URL"},
		{"sentinel", map[string]string{"REDIS_SENTINELS": "10.0.0.1:26379, 10.0.0.2:26379,10.0.0.3:26379", "REDIS_MASTER_NAME": "deskbot", "REDIS_PASSWORD": pw, "REDIS_SENTINEL_PASSWORD": pw + "s"}, ""},
		{"sentinel without name", map[string]string{"REDIS_SENTINELS": "10.0.0.1:26379"}, "REDIS_MASTER_NAME: required with REDIS_SENTINELS"},
		{"name without sentinels", map[string]string{"REDIS_URL": "redis://127.0.0.1:6379", "REDIS_MASTER_NAME": "deskbot"}, "REDIS_MASTER_NAME: set without REDIS_SENTINELS"},
		{"sentinel password without sentinels", map[string]string{"REDIS_CLUSTER_ADDRS": "10.0.0.1:6379", "REDIS_SENTINEL_PASSWORD": pw}, "REDIS_SENTINEL_PASSWORD: set without REDIS_SENTINELS"},
		{"cluster", map[string]string{"REDIS_CLUSTER_ADDRS": "10.0.0.1:6379,10.0.0.2:6379", "REDIS_PASSWORD": pw}, ""},
		{"cluster address without port", map[string]string{"REDIS_CLUSTER_ADDRS": "10.0.0.1"}, "REDIS_CLUSTER_ADDRS: must be a comma-separated list of host:port"},
		{"url and sentinels", map[string]string{"REDIS_URL": "redis://:" + pw + "@127.0.0.1:6379", "REDIS_SENTINELS": "10.0.0.1:26379", "REDIS_MASTER_NAME": "m"}, "REDIS_URL: set only one of REDIS_URL, REDIS_SENTINELS and REDIS_CLUSTER_ADDRS"},
		{"sentinels and cluster", map[string]string{"REDIS_SENTINELS": "10.0.0.1:26379", "REDIS_MASTER_NAME": "m", "REDIS_CLUSTER_ADDRS": "10.0.0.1:6379"}, "set only one of"},
		{"prefix with braces", map[string]string{"REDIS_PREFIX": "{deskbot}:"}, "REDIS_PREFIX: must have some text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := configtest.MinimalEnv()
			for k, v := range tt.env {
				env[k] = v
			}
			cfg, err := Load(env)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("error %v; want none", err)
				}
				o := cfg.StoreOptions()
				if slices.Contains(o.SentinelAddrs, "") || slices.ContainsFunc(o.SentinelAddrs, func(a string) bool { return strings.TrimSpace(a) != a }) {
					t.Errorf("sentinel addresses %q not trimmed", o.SentinelAddrs)
				}
				if o.Password != tt.env["REDIS_PASSWORD"] || o.SentinelPassword != tt.env["REDIS_SENTINEL_PASSWORD"] {
					t.Errorf("passwords not passed to the store")
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v; want it to contain %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), pw) {
				t.Errorf("the error shows a password: %v", err)
			}
		})
	}
}

// The Redis passwords are secrets: the log scrubber knows them, and no
// desk may be handed them through SANDBOX_ENV.
func TestRedisPasswordsAreSecrets(t *testing.T) {
	env := configtest.MinimalEnv()
	env["REDIS_SENTINELS"], env["REDIS_MASTER_NAME"] = "127.0.0.1:26379", "deskbot"
	env["REDIS_PASSWORD"], env["REDIS_SENTINEL_PASSWORD"] = "data-node-password-1", "sentinel-password-2"
	env["ALIAS"] = "x" + env["REDIS_SENTINEL_PASSWORD"]
	cfg, err := Load(env)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{env["REDIS_PASSWORD"], env["REDIS_SENTINEL_PASSWORD"]} {
		if !slices.Contains(cfg.Secrets(), s) {
			t.Errorf("the log scrubber does not know a Redis password")
		}
	}
	env["SANDBOX_ENV"] = "ALIAS"
	if _, err := Load(env); err == nil || !strings.Contains(err.Error(), "SANDBOX_ENV: ALIAS carries the value of a secret") {
		t.Errorf("a variable carrying the sentinels' password passed to desks: %v", err)
	}
}
