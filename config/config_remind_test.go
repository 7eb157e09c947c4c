package config

import (
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot/bot"
	"github.com/deskbot/deskbot/config/configtest"
)

// APPROVAL_REMIND defaults to a third of APPROVAL_EXPIRY, 0s turns
// reminders off, and
// a value that could never come before the lapse stops the start saying
// what it must be.
func TestLoadConfigApprovalRemind(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    time.Duration
		wantErr string
	}{
		{"unset: a third of the expiry", nil, 100 * time.Second, ""},
		{"empty: a third of the expiry", map[string]string{"APPROVAL_REMIND": ""}, 100 * time.Second, ""},
		{"unset with an expiry set: a third of it", map[string]string{"APPROVAL_EXPIRY": "15m"}, 5 * time.Minute, ""},
		{"off", map[string]string{"APPROVAL_REMIND": "0s"}, 0, ""},
		{"set", map[string]string{"APPROVAL_REMIND": "1m"}, time.Minute, ""},
		{"negative", map[string]string{"APPROVAL_REMIND": "-1m"}, 0,
			"APPROVAL_REMIND: must be 0s (no reminders) or a positive duration shorter than APPROVAL_EXPIRY (5m0s), such as 1m40s"},
		{"as long as the expiry", map[string]string{"APPROVAL_REMIND": "5m"}, 0, "APPROVAL_REMIND: must be 0s (no reminders) or a positive duration shorter"},
		{"longer", map[string]string{"APPROVAL_REMIND": "10m", "APPROVAL_EXPIRY": "2m"}, 0, "shorter than APPROVAL_EXPIRY (2m0s), such as 40s"},
		{"not a duration", map[string]string{"APPROVAL_REMIND": "soon"}, 0, "APPROVAL_REMIND"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := configtest.MinimalEnv()
			for k, v := range tt.env {
				env[k] = v
			}
			cfg, err := Load(env)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("LoadConfig: %v; want an error with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.ApprovalRemind; got != tt.want {
				t.Errorf("APPROVAL_REMIND = %v, want %v", got, tt.want)
			}
		})
	}
}

// TELEGRAM_QUIET names kinds of message; an unknown name stops the start,
// naming the kinds there are.
func TestLoadConfigTelegramQuiet(t *testing.T) {
	tests := []struct {
		value   string
		want    bot.Quiet
		wantErr string
	}{
		{"", bot.Quiet{}, ""},
		{"desk_messages", bot.Quiet{DeskMessages: true}, ""},
		{"desk_messages, fills,reports", bot.Quiet{DeskMessages: true, Fills: true, Reports: true}, ""},
		{"desk_messages,held_calls", bot.Quiet{}, `TELEGRAM_QUIET: "held_calls" is not a kind of message; it lists desk_messages, fills, reports (held calls, reminders and halts always notify)`},
	}
	for _, tt := range tests {
		env := configtest.MinimalEnv()
		env["TELEGRAM_QUIET"] = tt.value
		cfg, err := Load(env)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("TELEGRAM_QUIET=%q: %v; want an error with %q", tt.value, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("TELEGRAM_QUIET=%q: %v", tt.value, err)
			continue
		}
		if got := cfg.Quiet(); got != tt.want {
			t.Errorf("TELEGRAM_QUIET=%q reads %+v, want %+v", tt.value, got, tt.want)
		}
	}
}
