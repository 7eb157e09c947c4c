package main

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/config"
	"github.com/deskbot/deskbot/config/configtest"
)

// rolesDesks makes every order of desk main need two approvers, one of
// them from the role risk (Ravi).
const rolesDesks = `
[roles]
risk = [102]

[[desk]]
name = "main"
[desk.policy.place_order]
approvals = 2
from_role = "risk"
`

var dev = telegramtest.User{ID: 104, FirstName: "Dev"} // an approver outside the role

// Roles in four eyes: a policy's from_role needs one of the counted
// approvals from the role. The request says so; two approvers outside the
// role do not meet it (the second is refused, nothing runs); the role's
// member meets it and the call runs once.
func TestRoleInFourEyes(t *testing.T) {
	t.Parallel()
	s := startWithPage(t, map[string]string{"DESKS_FILE": configtest.DesksFile(t, rolesDesks), "TELEGRAM_APPROVERS": "101,102,104"})
	s.orderModel(t)
	held, id := s.holdOrder(t, "buy nifty", "NIFTY24DECFUT")
	if !strings.Contains(held.Plain, "This call needs 2 approvers, one from risk: one more from risk") && !strings.Contains(held.Plain, "This call needs 2 approvers, one from risk: 2 more, one from risk") {
		t.Errorf("the held call does not say it needs one from risk: %q", held.Plain)
	}
	tap := func(who telegramtest.User) string {
		t.Helper()
		q := s.tg.InjectCallback(who, groupID, held.ID, button(t, held, "Allow once"))
		s.tg.WaitFor(t, 10*time.Second, func(srv *telegramtest.Server) bool { _, _, ok := srv.CallbackAnswer(q); return ok })
		text, _, _ := s.tg.CallbackAnswer(q)
		return text
	}
	if got := tap(asha); !strings.Contains(got, "Approved (1 of 2); it needs one more from risk") {
		t.Errorf("Asha's allow answered %q", got)
	}
	s.mustBotMessage(t, "the request edited with Asha's approval", func(m telegramtest.Message) bool {
		return m.ID == held.ID && strings.Contains(m.Plain, "This call needs 2 approvers, one from risk: Asha ✓, one more from risk")
	})
	if got := tap(dev); !strings.Contains(got, "Not counted: this call needs one approver from risk") {
		t.Errorf("Dev's allow (outside the role) answered %q", got)
	}
	time.Sleep(300 * time.Millisecond)
	if n := s.runs(t, id); n != 0 {
		t.Fatalf("two approvers outside the role ran the call (%d times)", n)
	}
	if got := tap(ravi); !strings.Contains(got, "running") {
		t.Errorf("Ravi's allow (the role's) answered %q", got)
	}
	s.mustRanOnce(t, id)
}

// A role that cannot be met stops the start: a member who is not an
// approver, a from_role naming no role.
func TestRolesThatCannotBeMetStopTheStart(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, file, want string }{
		{"member not an approver", strings.Replace(rolesDesks, "risk = [102]", "risk = [102, 777]", 1), `role "risk" names 777, who is not in TELEGRAM_APPROVERS`},
		{"no such role", strings.Replace(rolesDesks, `from_role = "risk"`, `from_role = "ops"`, 1), `from_role "ops" is not a role of [roles]`},
		{"empty role", strings.Replace(rolesDesks, "risk = [102]", "risk = []", 1), `from_role "risk" has no members`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env := configtest.GoodEnv(t)
			env["DESKS_FILE"] = configtest.DesksFile(t, tt.file)
			env["APPROVAL_TOOLS"] = "flatten_desk,place_order"
			env["TELEGRAM_APPROVERS"] = "101,102,104"
			cfg, err := config.Load(env)
			if err == nil {
				m := &Main{Config: cfg, Log: slog.New(slog.DiscardHandler)}
				err = m.Run(t.Context())
				m.Close()
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("start: %v; want an error containing %q", err, tt.want)
			}
		})
	}
}
