package config

import (
	"strings"
	"testing"

	"github.com/deskbot/deskbot/config/configtest"
)

// The desks page's sign-in (initData) is an approver's bearer credential
// until WEBAPP_MAX_AGE has passed: Telegram signs a fresh one at every
// opening, so an operator who sets a month to stop being asked to reopen
// the page makes every copy that leaks (a screenshot, a proxy's log, a
// shared phone) an approver's for a month. Past a day it is refused.
func TestHostileWebAppMaxAgeIsBounded(t *testing.T) {
	tests := []struct {
		age     string
		wantErr bool
	}{
		{"24h", false},
		{"25h", true},
		{"720h", true},
		{"8760h", true},
	}
	for _, tt := range tests {
		t.Run(tt.age, func(t *testing.T) {
			env := configtest.MinimalEnv()
			env["WEBAPP_URL"], env["WEBAPP_MAX_AGE"] = "https://d.example.com/", tt.age
			_, err := Load(env)
			if got := err != nil && strings.Contains(err.Error(), "WEBAPP_MAX_AGE: at most 24h"); got != tt.wantErr {
				t.Errorf("WEBAPP_MAX_AGE=%s: LoadConfig = %v; want refused: %v", tt.age, err, tt.wantErr)
			}
		})
	}
}
