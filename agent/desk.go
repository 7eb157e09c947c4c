package agent

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/model"
)

// DefaultMaxSteps caps the model calls of one turn when a desk sets none.
const DefaultMaxSteps = 12

// maxMaxSteps stops a typo (1200) from letting a stuck model burn money.
const maxMaxSteps = 100

// Schedule is a cron entry of a desk: at each firing (India time) the desk
// is handed Text as a schedule trigger.
type Schedule struct {
	Cron string
	Text string
}

// DeskConfig is one desk as configured.
type DeskConfig struct {
	Name string
	// Prompt is the desk's own brief. It is added to the default system
	// prompt, never replaces it: the rules about the gate and India time
	// must hold for every desk.
	Prompt    string
	Models    []model.Config // the failover chain, in order
	Tools     []string       // empty means every tool
	Schedules []Schedule
	MaxSteps  int // model calls per turn (Claude Code: --max-turns); 0 means DefaultMaxSteps
	// Policy is the desk's approval policy and hard limits per tool
	// ([desk.policy.<tool>]), with the desk's product (product) as its
	// place_order policy's Product; a tool without one needs one approver
	// when held and has no limits.
	Policy map[string]deskbot.ToolPolicy
	// Risk is the desk's day-long rules ([desk.risk]), which the harness
	// applies outside the model (package risk).
	Risk deskbot.RiskRules
	// AlgoID is the exchange's algo id this desk's orders carry at Kite
	// (algo_id), overriding KITE_ALGO_ID; "" takes KITE_ALGO_ID's.
	AlgoID string
}

// riskFile is the [desk.risk] table. Pointers tell a key left out from
// one set to 0, which is a mistake, as in a policy.
type riskFile struct {
	MaxDailyLoss         *float64 `toml:"max_daily_loss"`
	MaxDrawdown          *float64 `toml:"max_drawdown"`
	SquareOffAt          *string  `toml:"square_off_at"`
	MaxDenialsInARow     *int     `toml:"max_denials_in_a_row"`
	MaxModelTokensPerDay *int64   `toml:"max_model_tokens_per_day"`
	FlattenOnHalt        *bool    `toml:"flatten_on_halt"`
}

// policyFile is one [desk.policy.<tool>] table. Pointers tell a key left
// out (the default) from one set to 0, which is a mistake: approvals = 0
// would read as "nobody needs to say yes".
type policyFile struct {
	Approvals           *int
	TwoApproversAbove   *float64 `toml:"two_approvers_above"`
	MaxOrderNotional    *float64 `toml:"max_order_notional"`
	MaxPositionNotional *float64 `toml:"max_position_notional"`
	MaxOrdersPerDay     *int     `toml:"max_orders_per_day"`
	FromRole            *string  `toml:"from_role"`
}

// deskFile is the TOML layout of DESKS_FILE (see docs/desks.example.toml).
type deskFile struct {
	// Roles names groups of approvers by their Telegram ids, for a
	// policy's from_role.
	Roles map[string][]int64
	// ContractSizes adds to and overrides deskbot.DefaultContractSizes:
	// "MCX:CARDAMOM" = 100 (LoadContractSizes).
	ContractSizes map[string]float64 `toml:"contract_sizes"`
	Desk          []struct {
		Name     string
		Prompt   string
		Tools    []string
		MaxSteps int `toml:"max_steps"`
		// Product is the product the desk's orders take when they name
		// none; a pointer, as in a policy, so that product = "" is refused
		// rather than read as left out.
		Product *string
		// AlgoID is the exchange's algo id of this desk's strategy; a
		// pointer, so that algo_id = "" is refused rather than read as
		// left out.
		AlgoID *string `toml:"algo_id"`
		Model  []struct {
			Name      string
			Provider  string
			BaseURL   string `toml:"base_url"`
			Model     string
			APIKeyEnv string `toml:"api_key_env"`
			Timeout   string
			Stream    bool
			MaxTokens int `toml:"max_tokens"`
		}
		Schedule []struct {
			Cron string
			Text string
		}
		Policy map[string]policyFile
		Risk   *riskFile
	}
}

// LoadDesks returns the configured desks. With file ("" = none) every desk
// comes from that TOML file and names is ignored (it always has the default
// "main"); otherwise each name (default "main") is a desk with the default
// prompt, every tool, and the model chain defaults. API keys are never in
// the file: a model names the environment variable holding its key.
func LoadDesks(names []string, file string, defaults []model.Config) ([]DeskConfig, error) {
	var desks []DeskConfig
	if file == "" {
		for _, n := range names {
			if n = strings.TrimSpace(n); n != "" {
				desks = append(desks, DeskConfig{Name: n, Models: defaults})
			}
		}
		if len(desks) == 0 {
			desks = []DeskConfig{{Name: "main", Models: defaults}}
		}
		if err := validateDesks(desks); err != nil {
			return nil, deskbot.Errorf(deskbot.EINVALID, "DESKS: %s", err)
		}
		return desks, nil
	}
	desks, err := readDeskFile(file, defaults)
	if err == nil {
		err = validateDesks(desks)
	}
	if err != nil {
		return nil, deskbot.Errorf(deskbot.EINVALID, "DESKS_FILE %s: %s", file, err)
	}
	return desks, nil
}

func readDeskFile(file string, defaults []model.Config) ([]DeskConfig, error) {
	var f deskFile
	md, err := toml.DecodeFile(file, &f)
	if err != nil {
		// toml's errors carry line and column but can span lines.
		return nil, fmt.Errorf("%s", strings.Join(strings.Fields(err.Error()), " "))
	}
	if u := md.Undecoded(); len(u) > 0 {
		keys := make([]string, len(u))
		for i, k := range u {
			keys[i] = k.String()
		}
		return nil, fmt.Errorf("unknown key %s (keys are name, prompt, tools, max_steps, product, [[desk.model]], [[desk.schedule]], [roles], [contract_sizes], [desk.policy.<tool>] with approvals, two_approvers_above, max_order_notional, max_position_notional, max_orders_per_day, from_role, [desk.risk] with max_daily_loss, max_drawdown, square_off_at, max_denials_in_a_row, max_model_tokens_per_day, flatten_on_halt)", strings.Join(keys, ", "))
	}
	if len(f.Desk) == 0 {
		return nil, fmt.Errorf("no [[desk]] defined")
	}
	var desks []DeskConfig
	for _, d := range f.Desk {
		dc := DeskConfig{Name: d.Name, Prompt: strings.TrimSpace(d.Prompt), Tools: d.Tools, MaxSteps: d.MaxSteps}
		for i, m := range d.Model {
			c := model.Config{Name: m.Name, Provider: cmp.Or(m.Provider, model.OpenAI), BaseURL: m.BaseURL, Model: m.Model, Stream: m.Stream, MaxTokens: m.MaxTokens}
			if len(defaults) > 0 {
				c.Timeout = defaults[0].Timeout
			}
			where := fmt.Sprintf("desk %q model %d", d.Name, i+1)
			if c.Model == "" {
				return nil, fmt.Errorf("%s: model is required", where)
			}
			if c.Provider != model.OpenAI && c.Provider != model.Anthropic && c.Provider != ClaudeCode {
				return nil, fmt.Errorf("%s: provider is %q, %q or %q, not %q", where, model.OpenAI, model.Anthropic, ClaudeCode, c.Provider)
			}
			if m.Timeout != "" {
				if c.Timeout, err = time.ParseDuration(m.Timeout); err != nil || c.Timeout <= 0 {
					return nil, fmt.Errorf("%s: timeout %q is not a positive duration such as 90s", where, m.Timeout)
				}
			}
			// Without a named variable an OpenAI-compatible backend gets no
			// key (local servers need none; sending MODEL_API_KEY to another
			// host would leak it); Anthropic and Claude Code use
			// ANTHROPIC_API_KEY.
			keyEnv := m.APIKeyEnv
			if keyEnv == "" && (c.Provider == model.Anthropic || c.Provider == ClaudeCode) {
				keyEnv = "ANTHROPIC_API_KEY"
			}
			if keyEnv != "" {
				if c.APIKey = os.Getenv(keyEnv); c.APIKey == "" {
					return nil, fmt.Errorf("%s: environment variable %s (its api_key_env) is not set", where, keyEnv)
				}
			}
			if c.Name == "" {
				c.Name = c.Provider + ":" + c.Model
			}
			dc.Models = append(dc.Models, c)
		}
		if len(dc.Models) == 0 {
			dc.Models = defaults
		}
		for _, s := range d.Schedule {
			dc.Schedules = append(dc.Schedules, Schedule{Cron: strings.TrimSpace(s.Cron), Text: strings.TrimSpace(s.Text)})
		}
		if dc.Policy, err = readPolicies(d.Name, d.Tools, d.Policy, f.Roles); err != nil {
			return nil, err
		}
		if d.Product != nil {
			if dc.Policy, err = withProduct(d.Name, d.Tools, dc.Policy, *d.Product); err != nil {
				return nil, err
			}
		}
		if dc.Risk, err = readRisk(d.Name, d.Risk); err != nil {
			return nil, err
		}
		if d.AlgoID != nil {
			if err := deskbot.CheckAlgoID(*d.AlgoID); err != nil || *d.AlgoID == "" {
				return nil, fmt.Errorf("desk %q: algo_id must be the exchange's algo id of its strategy, 1 to 30 letters, digits, - or _ (leave it out to use KITE_ALGO_ID)", d.Name)
			}
			dc.AlgoID = *d.AlgoID
		}
		desks = append(desks, dc)
	}
	return desks, nil
}

// readPolicies reads a desk's [desk.policy.<tool>] tables. Every number set
// must be meant: 0 or a negative number is an error, never "no limit" or
// "nobody", and a policy names a tool the desk is offered.
// two_approvers_above alone means approvals = 2.
func readPolicies(desk string, tools []string, in map[string]policyFile, roles map[string][]int64) (map[string]deskbot.ToolPolicy, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := make(map[string]deskbot.ToolPolicy, len(in))
	for tool, p := range in {
		where := fmt.Sprintf("desk %q policy for %s", desk, tool)
		if len(tools) > 0 && !slices.Contains(tools, tool) {
			return nil, fmt.Errorf("%s: the desk is not offered %s (its tools are %s)", where, tool, strings.Join(tools, ", "))
		}
		var tp deskbot.ToolPolicy
		positive := func(key string, v *float64, dst *float64) error {
			if v == nil {
				return nil
			}
			if !(*v > 0) || math.IsInf(*v, 0) {
				return fmt.Errorf("%s: %s must be a number of rupees above 0 (leave it out for no limit), not %v", where, key, *v)
			}
			*dst = *v
			return nil
		}
		if p.Approvals != nil {
			if *p.Approvals < 1 || *p.Approvals > deskbot.MaxApprovals {
				return nil, fmt.Errorf("%s: approvals must be between 1 and %d, not %d", where, deskbot.MaxApprovals, *p.Approvals)
			}
			tp.Approvals = *p.Approvals
		}
		if p.MaxOrdersPerDay != nil {
			if *p.MaxOrdersPerDay < 1 {
				return nil, fmt.Errorf("%s: max_orders_per_day must be 1 or more (leave it out for no limit), not %d", where, *p.MaxOrdersPerDay)
			}
			tp.MaxOrdersPerDay = *p.MaxOrdersPerDay
		}
		for _, e := range []error{
			positive("two_approvers_above", p.TwoApproversAbove, &tp.TwoApproversAbove),
			positive("max_order_notional", p.MaxOrderNotional, &tp.MaxOrderNotional),
			positive("max_position_notional", p.MaxPositionNotional, &tp.MaxPositionNotional),
		} {
			if e != nil {
				return nil, e
			}
		}
		if tp.TwoApproversAbove > 0 && p.Approvals == nil {
			tp.Approvals = 2
		}
		if p.FromRole != nil {
			members, ok := roles[*p.FromRole]
			if !ok {
				return nil, fmt.Errorf("%s: from_role %q is not a role of [roles] (roles are %s)", where, *p.FromRole, strings.Join(slices.Sorted(maps.Keys(roles)), ", "))
			}
			tp.FromRole, tp.RoleMembers = *p.FromRole, members
		}
		if err := (deskbot.Policies{desk: {tool: tp}}).Check([]string{tool}, 0); err != nil {
			return nil, fmt.Errorf("%s", deskbot.ErrorMessage(err))
		}
		out[tool] = tp
	}
	return out, nil
}

// products are the products a desk's product may name.
var products = []string{deskbot.ProductMIS, deskbot.ProductNRML, deskbot.ProductCNC}

// withProduct is policy with the desk's product (product = "NRML") as its
// place_order policy's Product: the product its orders take when they
// name none (deskbot.Policies.Product). It must be one of the products,
// spelled as the broker spells it, and the desk must be offered
// place_order, or it would say something of orders the desk cannot place.
func withProduct(desk string, tools []string, policy map[string]deskbot.ToolPolicy, product string) (map[string]deskbot.ToolPolicy, error) {
	if !slices.Contains(products, product) {
		return nil, fmt.Errorf("desk %q: product must be one of %s (the product of its orders that name none; MIS when left out), not %q", desk, strings.Join(products, ", "), product)
	}
	if len(tools) > 0 && !slices.Contains(tools, deskbot.ToolPlaceOrder) {
		return nil, fmt.Errorf("desk %q: product is the product of its orders, but the desk is not offered %s (its tools are %s)", desk, deskbot.ToolPlaceOrder, strings.Join(tools, ", "))
	}
	if policy == nil {
		policy = map[string]deskbot.ToolPolicy{}
	}
	tp := policy[deskbot.ToolPlaceOrder]
	tp.Product = product
	policy[deskbot.ToolPlaceOrder] = tp
	return policy, nil
}

// readRisk reads a desk's [desk.risk] table. As in a policy, every number
// set must be meant: 0 or less is an error, never "no rule".
func readRisk(desk string, in *riskFile) (deskbot.RiskRules, error) {
	var r deskbot.RiskRules
	if in == nil {
		return r, nil
	}
	where := fmt.Sprintf("desk %q risk rule", desk)
	for _, m := range []struct {
		key string
		v   *float64
		dst *float64
	}{{"max_daily_loss", in.MaxDailyLoss, &r.MaxDailyLoss}, {"max_drawdown", in.MaxDrawdown, &r.MaxDrawdown}} {
		if m.v == nil {
			continue
		}
		if !(*m.v > 0) || math.IsInf(*m.v, 0) {
			return r, fmt.Errorf("%s %s must be a number of rupees above 0 (leave it out for no rule), not %v", where, m.key, *m.v)
		}
		*m.dst = *m.v
	}
	if in.MaxDenialsInARow != nil {
		if *in.MaxDenialsInARow < 1 {
			return r, fmt.Errorf("%s max_denials_in_a_row must be 1 or more (leave it out for no rule), not %d", where, *in.MaxDenialsInARow)
		}
		r.MaxDenialsInARow = *in.MaxDenialsInARow
	}
	if in.MaxModelTokensPerDay != nil {
		if *in.MaxModelTokensPerDay < 1 {
			return r, fmt.Errorf("%s max_model_tokens_per_day must be 1 or more (leave it out for no rule), not %d", where, *in.MaxModelTokensPerDay)
		}
		r.MaxModelTokensPerDay = *in.MaxModelTokensPerDay
	}
	if in.SquareOffAt != nil {
		t, err := time.Parse("15:04", strings.TrimSpace(*in.SquareOffAt))
		if err != nil || len(strings.TrimSpace(*in.SquareOffAt)) != 5 {
			return r, fmt.Errorf("%s square_off_at must be a time of day in India time as \"15:15\", not %q", where, *in.SquareOffAt)
		}
		r.SquareOffAt = t.Format("15:04")
	}
	if in.FlattenOnHalt != nil {
		r.FlattenOnHalt = *in.FlattenOnHalt
	}
	if !r.Any() {
		return r, fmt.Errorf("%s: the [desk.risk] table sets no rule (max_daily_loss, max_drawdown, square_off_at, max_denials_in_a_row, max_model_tokens_per_day)", where)
	}
	return r, nil
}

// RiskRules returns the rules of the desks that have any, by desk.
func RiskRules(desks []DeskConfig) map[string]deskbot.RiskRules {
	out := map[string]deskbot.RiskRules{}
	for _, d := range desks {
		if d.Risk.Any() {
			out[d.Name] = d.Risk
		}
	}
	return out
}

// AlgoIDs returns the desks' own algo ids (algo_id), for the broker.
func AlgoIDs(desks []DeskConfig) map[string]string {
	out := map[string]string{}
	for _, d := range desks {
		if d.AlgoID != "" {
			out[d.Name] = d.AlgoID
		}
	}
	return out
}

// Policies returns the desks' policies for the gate and the executor.
func Policies(desks []DeskConfig) deskbot.Policies {
	p := deskbot.Policies{}
	for _, d := range desks {
		if len(d.Policy) > 0 {
			p[d.Name] = d.Policy
		}
	}
	return p
}

func validateDesks(desks []DeskConfig) error {
	seen := map[string]bool{}
	for _, d := range desks {
		if err := deskbot.ValidDeskName(d.Name); err != nil {
			return fmt.Errorf("%s", deskbot.ErrorMessage(err))
		}
		if seen[d.Name] {
			return fmt.Errorf("desk %q is defined twice", d.Name)
		}
		seen[d.Name] = true
		if len(d.Models) == 0 {
			return fmt.Errorf("desk %q has no model", d.Name)
		}
		if d.MaxSteps < 0 || d.MaxSteps > maxMaxSteps {
			return fmt.Errorf("desk %q: max_steps must be between 1 and %d", d.Name, maxMaxSteps)
		}
		for _, s := range d.Schedules {
			if _, err := parseSchedule(s.Cron); err != nil {
				return fmt.Errorf("desk %q: %v", d.Name, err)
			}
			if s.Text == "" {
				return fmt.Errorf("desk %q: schedule %q needs a text", d.Name, s.Cron)
			}
		}
	}
	return nil
}

func (d DeskConfig) maxSteps() int { return cmp.Or(d.MaxSteps, DefaultMaxSteps) }

// LoadContractSizes is the contract sizes orders are sized by: deskbot's
// defaults with DESKS_FILE's [contract_sizes] over them ("" = no file).
// A key is "EXCHANGE:NAME", the underlying's name in the broker's
// instrument list (MCX:CRUDEOIL); a size must be a number above 0.
func LoadContractSizes(file string) (deskbot.ContractSizes, error) {
	sizes := deskbot.DefaultContractSizes()
	if file == "" {
		return sizes, nil
	}
	var f deskFile
	if _, err := toml.DecodeFile(file, &f); err != nil {
		return nil, deskbot.Errorf(deskbot.EINVALID, "DESKS_FILE %s: %s", file, strings.Join(strings.Fields(err.Error()), " "))
	}
	for _, k := range slices.Sorted(maps.Keys(f.ContractSizes)) {
		ex, name, ok := strings.Cut(k, ":")
		if !ok || name == "" || !slices.Contains(deskbot.Exchanges, ex) {
			return nil, deskbot.Errorf(deskbot.EINVALID, "DESKS_FILE %s: [contract_sizes] key %q must be EXCHANGE:NAME with an exchange of %s, e.g. \"MCX:CRUDEOIL\"", file, k, strings.Join(deskbot.Exchanges, ", "))
		}
		if v := f.ContractSizes[k]; !(v > 0) || math.IsInf(v, 0) {
			return nil, deskbot.Errorf(deskbot.EINVALID, "DESKS_FILE %s: [contract_sizes] %s must be a number above 0, not %v", file, k, v)
		}
	}
	return sizes.With(f.ContractSizes), nil
}
