package agent_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/agent"
	"github.com/deskbot/deskbot/model"
	"github.com/deskbot/deskbot/words"
)

func TestLoadDesksPolicy(t *testing.T) {
	defaults := []model.Config{{Provider: model.OpenAI, Model: "qwen3"}}
	load := func(t *testing.T, policy string) ([]agent.DeskConfig, error) {
		t.Helper()
		path := filepath.Join(t.TempDir(), "desks.toml")
		body := "[[desk]]\nname = \"main\"\ntools = [\"place_order\", \"flatten_desk\", \"bash\"]\n" + policy
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return agent.LoadDesks(nil, path, defaults)
	}
	t.Run("read", func(t *testing.T) {
		desks, err := load(t, "[desk.policy.place_order]\ntwo_approvers_above = 500000\nmax_order_notional = 2000000.5\nmax_position_notional = 5000000\nmax_orders_per_day = 40\n")
		if err != nil {
			t.Fatal(err)
		}
		got := agent.Policies(desks)["main"]["place_order"]
		want := deskbot.ToolPolicy{Approvals: 2, TwoApproversAbove: 500000, MaxOrderNotional: 2000000.5, MaxPositionNotional: 5000000, MaxOrdersPerDay: 40}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("policy = %+v; want %+v", got, want)
		}
	})
	t.Run("the documented example", func(t *testing.T) {
		t.Setenv("ANTHROPIC_API_KEY", "sk-ant-test")
		desks, err := agent.LoadDesks(nil, mustUncommentExample(t), defaults)
		if err != nil {
			t.Fatal(err)
		}
		p := agent.Policies(desks)
		if got, want := words.Policy("place_order", p["main"]["place_order"]), "place_order: 2 approvers above ₹5,00,000.00 notional, an order or the desk's India day (1 at or below), one of them from risk (2 members); refused above ₹20,00,000.00 an order, above ₹50,00,000.00 a position, after 40 orders a day"; got != want {
			t.Errorf("main's place_order policy: %q; want %q", got, want)
		}
		if err := p.Check([]string{"flatten_desk", "place_order"}, 2); err != nil {
			t.Errorf("the example's policies with the tools it names: %v", err)
		}
	})
	t.Run("none", func(t *testing.T) {
		desks, err := load(t, "")
		if err != nil || len(agent.Policies(desks)) != 0 {
			t.Fatalf("policies = %v, %v; want none", agent.Policies(desks), err)
		}
	})
	errs := []struct {
		name, policy, want string
	}{
		{"approvals 0", "[desk.policy.flatten_desk]\napprovals = 0\n", `desk "main" policy for flatten_desk: approvals must be between 1 and 5, not 0`},
		{"approvals negative", "[desk.policy.flatten_desk]\napprovals = -2\n", "approvals must be between 1 and 5, not -2"},
		{"approvals too many", "[desk.policy.flatten_desk]\napprovals = 9\n", "approvals must be between 1 and 5, not 9"},
		{"threshold 0", "[desk.policy.place_order]\ntwo_approvers_above = 0\n", "two_approvers_above must be a number of rupees above 0 (leave it out for no limit), not 0"},
		{"threshold with one approver", "[desk.policy.place_order]\napprovals = 1\ntwo_approvers_above = 500000\n", "two_approvers_above needs approvals of 2 or more"},
		{"negative limit", "[desk.policy.place_order]\nmax_order_notional = -5\n", "max_order_notional must be a number of rupees above 0"},
		{"orders per day 0", "[desk.policy.place_order]\nmax_orders_per_day = 0\n", "max_orders_per_day must be 1 or more"},
		{"limit on another tool", "[desk.policy.flatten_desk]\nmax_order_notional = 5\n", "two_approvers_above and the hard limits apply to place_order only"},
		{"tool not offered", "[desk.policy.send_message]\napprovals = 2\n", `desk "main" policy for send_message: the desk is not offered send_message`},
		{"unknown key", "[desk.policy.place_order]\napproval = 2\n", "unknown key desk.policy.place_order.approval"},
		{"text for a number", "[desk.policy.place_order]\napprovals = \"2\"\n", "DESKS_FILE"},
	}
	for _, tc := range errs {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, tc.policy)
			if err == nil || !strings.Contains(deskbot.ErrorMessage(err), tc.want) {
				t.Errorf("LoadDesks: %v; want an error containing %q", err, tc.want)
			}
		})
	}
}

// Policies that pass the file's own checks are checked again against the
// service's configuration: a policy must guard what it names.
func TestPoliciesCheck(t *testing.T) {
	p := deskbot.Policies{"main": {"place_order": {Approvals: 2}}}
	tests := []struct {
		name      string
		p         deskbot.Policies
		guarded   []string
		approvers int
		want      string
	}{
		{"fine", p, []string{"place_order"}, 2, ""},
		{"not guarded", p, []string{"flatten_desk"}, 2, `desk "main" policy for place_order: place_order is not in APPROVAL_TOOLS`},
		{"too few approvers", p, []string{"place_order"}, 1, "approvals is 2 but TELEGRAM_APPROVERS names 1"},
		{"limits on an unguarded order are fine", deskbot.Policies{"main": {"place_order": {MaxOrdersPerDay: 3}}}, nil, 1, ""},
		{"negative from a hand-made config", deskbot.Policies{"main": {"place_order": {Approvals: -1}}}, []string{"place_order"}, 2, "numbers may not be negative"},
	}
	for _, tc := range tests {
		err := tc.p.Check(tc.guarded, tc.approvers)
		if got := deskbot.ErrorMessage(err); (tc.want == "") != (err == nil) || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q; want %q", tc.name, got, tc.want)
		}
	}
	// A hand-made approvals of 0 or less never lets a call run on nobody's yes.
	for _, n := range []int{-3, 0} {
		if got := (deskbot.Policies{"main": {"flatten_desk": {Approvals: n}}}).Required("main", deskbot.ToolCall{Name: "flatten_desk"}, 0); got != 1 {
			t.Errorf("Required with approvals %d = %d; want 1", n, got)
		}
	}
}

// A desk's product (product = "NRML") is the product of its orders that
// name none: its place_order policy's Product, beside any policy it has.
func TestLoadDesksProduct(t *testing.T) {
	defaults := []model.Config{{Provider: model.OpenAI, Model: "qwen3"}}
	for _, tt := range []struct {
		name, desk string
		want       string // the desk's product (Policies.Product), or the error's words
		ok         bool
	}{
		{"NRML", "product = \"NRML\"\n", "NRML", true},
		{"CNC beside a policy", "product = \"CNC\"\n[desk.policy.place_order]\nmax_orders_per_day = 40\n", "CNC", true},
		{"MIS", "product = \"MIS\"\n", "MIS", true},
		{"left out", "", "MIS", true},
		{"lower case", "product = \"nrml\"\n", `desk "main": product must be one of MIS, NRML, CNC (the product of its orders that name none; MIS when left out), not "nrml"`, false},
		{"empty", "product = \"\"\n", `desk "main": product must be one of MIS, NRML, CNC`, false},
		{"another broker's", "product = \"DELIVERY\"\n", `not "DELIVERY"`, false},
		{"a number", "product = 1\n", "product", false},
		{"no orders to place", "tools = [\"bash\"]\nproduct = \"NRML\"\n", `desk "main": product is the product of its orders, but the desk is not offered place_order (its tools are bash)`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "desks.toml")
			if err := os.WriteFile(path, []byte("[[desk]]\nname = \"main\"\n"+tt.desk), 0o600); err != nil {
				t.Fatal(err)
			}
			desks, err := agent.LoadDesks(nil, path, defaults)
			if !tt.ok {
				// Refused at start, naming the file and what is wrong.
				msg := deskbot.ErrorMessage(err)
				if err == nil || !strings.HasPrefix(msg, "DESKS_FILE "+path+": ") || !strings.Contains(msg, tt.want) {
					t.Errorf("LoadDesks: %v; want an error naming the file, containing %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			p := agent.Policies(desks)
			if got := p.Product("main"); got != tt.want {
				t.Errorf("product = %q; want %q", got, tt.want)
			}
			if err := p.Check([]string{"place_order"}, 2); err != nil {
				t.Errorf("the desk's policies: %v", err)
			}
		})
	}
	t.Run("beside the limits", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "desks.toml")
		body := "[[desk]]\nname = \"fno\"\nproduct = \"NRML\"\n[desk.policy.place_order]\ntwo_approvers_above = 500000\nmax_order_notional = 2000000\n"
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		desks, err := agent.LoadDesks(nil, path, defaults)
		if err != nil {
			t.Fatal(err)
		}
		got := agent.Policies(desks)["fno"]["place_order"]
		want := deskbot.ToolPolicy{Approvals: 2, TwoApproversAbove: 500000, MaxOrderNotional: 2000000, Product: "NRML"}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("policy = %+v; want %+v", got, want)
		}
	})
}
