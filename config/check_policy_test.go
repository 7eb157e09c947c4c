package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deskbot/deskbot/config/configtest"
)

// deskbot check prints each desk's policy in words, and a policy that a
// mistake made is a FAIL: such a file stops the start too.
func TestCheckPolicy(t *testing.T) {
	const file = `
[[desk]]
name = "main"
[desk.policy.place_order]
approvals = 2
two_approvers_above = 500000
max_order_notional = 2000000
max_position_notional = 5000000
max_orders_per_day = 40

[[desk]]
name = "fno"
[desk.policy.flatten_desk]
approvals = 2
`
	tests := []struct {
		name     string
		env      map[string]string
		wantCode int
		want     map[string]string
	}{
		{"in words", nil, 0, map[string]string{
			"policy main": "ok flatten_desk: 1 approver when held; modify_order: place_order's policy, for the order it becomes; place_gtt: 1 approver when held; place_order: 2 approvers above ₹5,00,000.00 notional, an order or the desk's India day (1 at or below); refused above ₹20,00,000.00 an order, above ₹50,00,000.00 a position, after 40 orders a day",
			"policy fno":  "ok place_order: 1 approver when held; modify_order: 1 approver when held; place_gtt: 1 approver when held; flatten_desk: 2 approvers for every call",
		}},
		{"tool not held", map[string]string{"APPROVAL_TOOLS": "flatten_desk"}, 1, map[string]string{
			"policy": `FAIL desk "main" policy for place_order: place_order is not in APPROVAL_TOOLS`,
		}},
		{"more approvers than there are", map[string]string{"TELEGRAM_APPROVERS": "101"}, 1, map[string]string{
			"policy": `FAIL desk "fno" policy for flatten_desk: approvals is 2 but TELEGRAM_APPROVERS names 1`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "desks.toml")
			if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
				t.Fatal(err)
			}
			env := configtest.GoodEnv(t)
			env["DESKS_FILE"] = path
			env["APPROVAL_TOOLS"] = "place_order,flatten_desk"
			env["TELEGRAM_APPROVERS"] = "101,102"
			for k, v := range tt.env {
				env[k] = v
			}
			code, out, lines := configtest.CheckOut(t, RunCheck, env)
			if code != tt.wantCode {
				t.Errorf("exit status %d, want %d", code, tt.wantCode)
			}
			for name, want := range tt.want {
				if !strings.HasPrefix(lines[name], want) {
					t.Errorf("%s: %q, want it to start with %q", name, lines[name], want)
				}
			}
			if t.Failed() {
				t.Logf("output:\n%s", out)
			}
		})
	}
}

// A desk offered only one of the terminal tools may have a policy for it
// alone: there is no other way into its terminal.
func TestTerminalPolicyForADeskWithOneTerminalTool(t *testing.T) {
	env := configtest.GoodEnv(t)
	env["TELEGRAM_APPROVERS"] = "101,102"
	env["APPROVAL_TOOLS"] = "bash"
	env["DESKS_FILE"] = configtest.DesksFile(t, "[[desk]]\nname = \"main\"\ntools = [\"bash\", \"send_message\"]\n[desk.policy.bash]\napprovals = 2\n")
	code, out, lines := configtest.CheckOut(t, RunCheck, env)
	if code != 0 || !strings.HasPrefix(lines["policy main"], "ok") {
		t.Errorf("check exited %d with policy line %q; want 0 and ok\n%s", code, lines["policy main"], out)
	}
}
