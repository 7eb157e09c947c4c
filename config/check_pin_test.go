package config

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/deskbot/deskbot/config/configtest"
)

// With TELEGRAM_PIN on, check says whether the bot may pin held calls: a
// missing right is a warning (held calls still come, unpinned), and with
// the setting off nothing is asked.
func TestCheckPinRight(t *testing.T) {
	tg := func(status string, canPin bool) string {
		s := httptest.NewServer(&configtest.FakeBotAPI{Token: configtest.Token, MemberStatus: status, CanPin: canPin})
		t.Cleanup(s.Close)
		return s.URL
	}
	tests := []struct {
		name     string
		env      map[string]string
		wantCode int
		want     string // the "telegram pin" line's start; configtest.Absent: no line
	}{
		{"an administrator without the right", map[string]string{"TELEGRAM_PIN": "true", "TELEGRAM_API_URL": tg("administrator", false)}, 0,
			"warn TELEGRAM_PIN is on, but the bot may not pin messages in chat -1001234567890 (can_pin_messages)"},
		{"a plain member", map[string]string{"TELEGRAM_PIN": "true", "TELEGRAM_API_URL": tg("member", false)}, 0,
			"warn TELEGRAM_PIN is on, but the bot may not pin messages"},
		{"an administrator with the right", map[string]string{"TELEGRAM_PIN": "true", "TELEGRAM_API_URL": tg("administrator", true)}, 0,
			"ok the bot may pin held calls"},
		{"the creator", map[string]string{"TELEGRAM_PIN": "true", "TELEGRAM_API_URL": tg("creator", false)}, 0,
			"ok the bot may pin held calls"},
		{"pins off are not checked", map[string]string{"TELEGRAM_API_URL": tg("member", false)}, 0, configtest.Absent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := configtest.GoodEnv(t)
			for k, v := range tt.env {
				env[k] = v
			}
			code, out, lines := configtest.CheckOut(t, RunCheck, env)
			if code != tt.wantCode {
				t.Errorf("exit status %d, want %d:\n%s", code, tt.wantCode, out)
			}
			got, ok := lines["telegram pin"]
			switch {
			case tt.want == configtest.Absent && ok:
				t.Errorf("telegram pin: %q, want no such line", got)
			case tt.want != configtest.Absent && !strings.HasPrefix(got, tt.want):
				t.Errorf("telegram pin: %q, want it to start with %q\n%s", got, tt.want, out)
			}
		})
	}
}
