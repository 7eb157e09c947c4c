package config

import (
	"strings"
	"testing"

	"github.com/deskbot/deskbot/config/configtest"
)

// deskbot check's output is pasted into tickets and chats: whatever it says
// about Redis (unreachable, refusing the password, the address), it never
// prints the Redis password, in either form, nor the Sentinel's.
func TestHostileCheckNeverPrintsTheRedisPassword(t *testing.T) {
	const pw = "s3cr3t-redis-pw-4711"
	tests := []struct {
		name string
		env  map[string]string
	}{
		{"url to a Redis without a password", map[string]string{"REDIS_URL": "redis://:" + pw + "@127.0.0.1:6379/0"}},
		{"url with user", map[string]string{"REDIS_URL": "redis://deskbot:" + pw + "@127.0.0.1:6379/0"}},
		{"url escaped", map[string]string{"REDIS_URL": "redis://:" + strings.Replace(pw, "-", "%2D", 1) + "@127.0.0.1:1/0"}},
		{"sentinels", map[string]string{"REDIS_SENTINELS": "127.0.0.1:1,127.0.0.1:2", "REDIS_MASTER_NAME": "deskbot", "REDIS_PASSWORD": pw, "REDIS_SENTINEL_PASSWORD": pw + "-s"}},
		{"cluster", map[string]string{"REDIS_CLUSTER_ADDRS": "127.0.0.1:1", "REDIS_PASSWORD": pw}},
		{"malformed url", map[string]string{"REDIS_URL": "redis://:" + pw + "@127.0.0.1:notaport/0"}},
		{"wrong scheme", map[string]string{"REDIS_URL": "http://:" + pw + "@127.0.0.1:6379/0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := configtest.GoodEnv(t)
			for k, v := range tt.env {
				env[k] = v
			}
			_, out, _ := configtest.CheckOut(t, RunCheck, env)
			if strings.Contains(out, pw) || strings.Contains(out, "s3cr3t") {
				t.Errorf("check printed the Redis password:\n%s", out)
			}
		})
	}
}
