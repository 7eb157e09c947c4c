package agent_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/agent"
	"github.com/deskbot/deskbot/model"
)

// loadRisk loads a desks file whose desk main has the [desk.risk] table
// risk.
func loadRisk(t *testing.T, risk string) ([]agent.DeskConfig, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "desks.toml")
	body := "[[desk]]\nname = \"main\"\n[desk.risk]\n" + risk
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return agent.LoadDesks(nil, path, []model.Config{{Provider: model.OpenAI, Model: "qwen3"}})
}

// Every value of [desk.risk] that is not meant stops the start, and says
// which key and why: a rule a typo turned off would be no rule at all.
func TestDeskRiskRefusesBadValues(t *testing.T) {
	tests := []struct {
		name, risk string
		want       []string // in the error
	}{
		{"a loss of 0", "max_daily_loss = 0\n", []string{"max_daily_loss", "above 0", "not 0"}},
		{"a negative loss", "max_daily_loss = -5000\n", []string{"max_daily_loss", "above 0", "not -5000"}},
		{"a loss of nan", "max_daily_loss = nan\n", []string{"max_daily_loss", "above 0", "NaN"}},
		{"an infinite loss", "max_daily_loss = inf\n", []string{"max_daily_loss", "above 0"}},
		{"a drawdown of 0", "max_drawdown = 0.0\n", []string{"max_drawdown", "above 0"}},
		{"a negative drawdown", "max_drawdown = -1\n", []string{"max_drawdown", "above 0"}},
		{"a loss as words", "max_daily_loss = \"5000\"\n", []string{"max_daily_loss"}},
		{"denials of 0", "max_denials_in_a_row = 0\n", []string{"max_denials_in_a_row", "1 or more", "not 0"}},
		{"negative denials", "max_denials_in_a_row = -3\n", []string{"max_denials_in_a_row", "1 or more"}},
		{"denials of a fraction", "max_denials_in_a_row = 2.5\n", []string{"max_denials_in_a_row"}},
		{"tokens of 0", "max_model_tokens_per_day = 0\n", []string{"max_model_tokens_per_day", "1 or more"}},
		{"negative tokens", "max_model_tokens_per_day = -100\n", []string{"max_model_tokens_per_day", "1 or more"}},
		{"square-off at 3pm", "square_off_at = \"3pm\"\n", []string{"square_off_at", `"15:15"`, `"3pm"`}},
		{"square-off at 25:00", "square_off_at = \"25:00\"\n", []string{"square_off_at", `"25:00"`}},
		{"square-off at 15:60", "square_off_at = \"15:60\"\n", []string{"square_off_at", `"15:60"`}},
		{"square-off at 9:15", "square_off_at = \"9:15\"\n", []string{"square_off_at", `"9:15"`}},
		{"square-off empty", "square_off_at = \"\"\n", []string{"square_off_at"}},
		{"square-off as a number", "square_off_at = 1515\n", []string{"square_off_at"}},
		{"an empty table", "", []string{"[desk.risk]", "sets no rule"}},
		{"only flatten_on_halt", "flatten_on_halt = true\n", []string{"[desk.risk]", "sets no rule"}},
		{"an unknown key", "max_daily_lose = 5000\n", []string{"unknown key", "max_daily_lose"}},
		{"a rule of another table", "max_order_notional = 5000\n", []string{"unknown key", "max_order_notional"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			desks, err := loadRisk(t, tt.risk)
			if err == nil {
				t.Fatalf("started with [desk.risk] %q: %+v", tt.risk, desks[0].Risk)
			}
			if got, want := deskbot.ErrorCode(err), deskbot.EINVALID; got != want {
				t.Errorf("error code %q, want %q", got, want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// Good values read back as written; a desk without the table has no rule.
func TestDeskRiskReadsGoodValues(t *testing.T) {
	tests := []struct {
		name, risk string
		want       deskbot.RiskRules
	}{
		{"every rule", "max_daily_loss = 25000.5\nmax_drawdown = 15000\nsquare_off_at = \"15:15\"\nmax_denials_in_a_row = 3\nmax_model_tokens_per_day = 2000000\nflatten_on_halt = true\n",
			deskbot.RiskRules{MaxDailyLoss: 25000.5, MaxDrawdown: 15000, SquareOffAt: "15:15", MaxDenialsInARow: 3, MaxModelTokensPerDay: 2000000, FlattenOnHalt: true}},
		{"a whole-rupee loss", "max_daily_loss = 5000\n", deskbot.RiskRules{MaxDailyLoss: 5000}},
		{"a square-off with spaces", "square_off_at = \" 09:30 \"\n", deskbot.RiskRules{SquareOffAt: "09:30"}},
		{"midnight", "square_off_at = \"00:00\"\n", deskbot.RiskRules{SquareOffAt: "00:00"}},
		{"one denial", "max_denials_in_a_row = 1\nflatten_on_halt = false\n", deskbot.RiskRules{MaxDenialsInARow: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			desks, err := loadRisk(t, tt.risk)
			if err != nil {
				t.Fatal(err)
			}
			if got := desks[0].Risk; got != tt.want {
				t.Errorf("rules = %+v; want %+v", got, tt.want)
			}
			if got := agent.RiskRules(desks)["main"]; got != tt.want {
				t.Errorf("RiskRules = %+v; want %+v", got, tt.want)
			}
		})
	}
	t.Run("no table", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "desks.toml")
		if err := os.WriteFile(path, []byte("[[desk]]\nname = \"main\"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		desks, err := agent.LoadDesks(nil, path, []model.Config{{Provider: model.OpenAI, Model: "qwen3"}})
		if err != nil {
			t.Fatal(err)
		}
		if got := agent.RiskRules(desks); len(got) != 0 {
			t.Errorf("RiskRules = %+v; want none", got)
		}
	})
}
