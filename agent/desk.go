package agent

import (
	"cmp"
	"fmt"
	"os"
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
}

// deskFile is the TOML layout of DESKS_FILE (see docs/desks.example.toml).
type deskFile struct {
	Desk []struct {
		Name     string
		Prompt   string
		Tools    []string
		MaxSteps int `toml:"max_steps"`
		Model    []struct {
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
		return nil, fmt.Errorf("unknown key %s (keys are name, prompt, tools, max_steps, [[desk.model]], [[desk.schedule]])", strings.Join(keys, ", "))
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
		desks = append(desks, dc)
	}
	return desks, nil
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
