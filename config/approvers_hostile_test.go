package config

import (
	"strings"
	"testing"

	"github.com/deskbot/deskbot/config/configtest"
)

// TELEGRAM_APPROVERS mistakes a careless operator makes. Telegram sends
// the messages of a group's anonymous admins from one shared account
// (GroupAnonymousBot, 1087968824), messages posted as a channel from
// another (Channel_Bot, 136817688; any user may post as a channel of
// theirs) and channel forwards from 777000; /whoami answers an anonymous
// admin with that shared id. Made an approver, such an id would make every
// anonymous admin, or every stranger posting as a channel, an approver.
// A person named twice would count twice toward a four-eyes policy's
// check, though only one person can tap.
func TestHostileApproversThatAreNotOnePerson(t *testing.T) {
	tests := []struct{ name, value, want string }{
		{"anonymous admins", "101,1087968824", "1087968824 is Telegram's account for anonymous group admins"},
		{"posts as a channel", "136817688", "136817688 is Telegram's account for messages sent as a channel"},
		{"telegram service", "101,777000", "777000 is Telegram's own service account"},
		{"twice", "101,102,101", "101 is named twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := configtest.MinimalEnv()
			env["TELEGRAM_APPROVERS"] = tt.value
			_, err := Load(env)
			if err == nil || !strings.Contains(err.Error(), "TELEGRAM_APPROVERS: "+tt.want) {
				t.Errorf("Load(TELEGRAM_APPROVERS=%s) = %v; want an error containing %q", tt.value, err, tt.want)
			}
		})
	}
}
