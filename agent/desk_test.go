package agent_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot/agent"
	"github.com/deskbot/deskbot/model"
)

var defaultChain = []model.Config{{Provider: "openai", BaseURL: "http://localhost:11434/v1", Model: "qwen3", Timeout: 2 * time.Minute}}

func mustDeskFile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "desks.toml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadDesksFromNames(t *testing.T) {
	tests := []struct {
		names []string
		want  []string
	}{
		{nil, []string{"main"}},
		{[]string{"main"}, []string{"main"}},
		{[]string{"alpha", " beta ", ""}, []string{"alpha", "beta"}},
	}
	for _, tt := range tests {
		desks, err := agent.LoadDesks(tt.names, "", defaultChain)
		if err != nil {
			t.Fatalf("LoadDesks(%q): %v", tt.names, err)
		}
		var got []string
		for _, d := range desks {
			got = append(got, d.Name)
			if len(d.Models) != 1 || d.Models[0].Model != "qwen3" || len(d.Tools) != 0 {
				t.Errorf("desk %s = %+v, want the default chain and every tool", d.Name, d)
			}
		}
		if strings.Join(got, ",") != strings.Join(tt.want, ",") {
			t.Errorf("LoadDesks(%q) = %v, want %v", tt.names, got, tt.want)
		}
	}
}

// mustUncommentExample writes the example desks file with the parts it
// ships commented (those needing a second approver, an Anthropic key or the
// Claude Code CLI) uncommented, as a team with those would, and returns its
// path. The optional key of the local model stays commented.
func mustUncommentExample(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../docs/desks.example.toml")
	if err != nil {
		t.Fatal(err)
	}
	setting := regexp.MustCompile(`^# (\[\[?[a-z_.]+\]\]?|[a-z_]+ = .*)$`)
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		if setting.MatchString(l) && !strings.Contains(l, "OLLAMA_KEY") {
			lines[i] = strings.TrimPrefix(l, "# ")
		}
	}
	path := filepath.Join(t.TempDir(), "desks.toml")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadDesksExampleFileAsShipped(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "")
	desks, err := agent.LoadDesks([]string{"ignored"}, "../docs/desks.example.toml", defaultChain)
	if err != nil {
		t.Fatalf("the documented example does not load without keys: %v", err)
	}
	for _, d := range desks {
		for _, m := range d.Models {
			if m.Provider != "openai" {
				t.Errorf("desk %s ships with a %s backend; the example must run with no keys and no CLI", d.Name, m.Provider)
			}
		}
	}
}

func TestLoadDesksExampleFile(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-test")
	desks, err := agent.LoadDesks([]string{"ignored"}, mustUncommentExample(t), defaultChain)
	if err != nil {
		t.Fatalf("the documented example, its commented parts uncommented, does not load: %v", err)
	}
	if len(desks) != 3 || desks[0].Name != "main" || desks[1].Name != "research" || desks[2].Name != "planner" {
		t.Fatalf("desks = %+v", desks)
	}
	main := desks[0]
	if len(main.Models) != 2 {
		t.Fatalf("main chain = %+v, want 2 backends", main.Models)
	}
	if got, want := main.Models[0].Timeout, 90*time.Second; got != want {
		t.Errorf("timeout = %v, want %v", got, want)
	}
	if got, want := main.Models[1].APIKey, "sk-ant-test"; got != want {
		t.Errorf("anthropic key = %q, want it read from ANTHROPIC_API_KEY", got)
	}
	if main.Models[0].APIKey != "" {
		t.Errorf("openai backend without api_key_env got a key")
	}
	if len(main.Schedules) != 2 || main.Schedules[0].Cron != "15 9 * * 1-5" || main.MaxSteps != 12 {
		t.Errorf("main = %+v", main)
	}
	if !strings.Contains(main.Prompt, "NIFTY") {
		t.Errorf("prompt = %q", main.Prompt)
	}
	if r := desks[1]; len(r.Models) != 1 || r.Models[0].Model != "qwen3" {
		t.Errorf("research chain = %+v, want the default", r.Models)
	}
	policies := agent.Policies(desks)
	for _, d := range []struct{ desk, product string }{{"main", "MIS"}, {"research", "MIS"}, {"planner", "CNC"}} {
		if got := policies.Product(d.desk); got != d.product {
			t.Errorf("%s's product = %q; want %q", d.desk, got, d.product)
		}
	}
	p := desks[2]
	if len(p.Models) != 2 || p.MaxSteps != 20 {
		t.Fatalf("planner = %+v, want a chain of 2 and max_steps 20", p)
	}
	if cc := p.Models[0]; cc.Provider != agent.ClaudeCode || cc.Model != "claude-sonnet-4-5" || cc.Timeout != 10*time.Minute || cc.APIKey != "sk-ant-test" || cc.Name != "claude-code:claude-sonnet-4-5" {
		t.Errorf("planner's Claude Code backend = %+v", cc)
	}
}

func TestLoadDesksFileErrors(t *testing.T) {
	tests := []struct {
		name, file, want string
	}{
		{"unknown key", "[[desk]]\nname = \"a\"\nmodle = \"x\"\n", "unknown key desk.modle"},
		{"unknown model key", "[[desk]]\nname = \"a\"\n[[desk.model]]\nmodel = \"m\"\napi_key = \"sk-secret\"\n", "unknown key desk.model.api_key"},
		{"bad name", "[[desk]]\nname = \"Main Desk\"\n", "\"Main Desk\" is not a valid desk name"},
		{"long name", "[[desk]]\nname = \"" + strings.Repeat("a", 33) + "\"\n", "1 to 32"},
		{"path name", "[[desk]]\nname = \"../x\"\n", "1 to 32"},
		{"twice", "[[desk]]\nname = \"a\"\n[[desk]]\nname = \"a\"\n", "defined twice"},
		{"bad cron", "[[desk]]\nname = \"a\"\n[[desk.schedule]]\ncron = \"61 9 * * *\"\ntext = \"x\"\n", "not a cron expression"},
		{"every", "[[desk]]\nname = \"a\"\n[[desk.schedule]]\ncron = \"@every 1m\"\ntext = \"x\"\n", "not @every"},
		{"no text", "[[desk]]\nname = \"a\"\n[[desk.schedule]]\ncron = \"0 9 * * *\"\n", "needs a text"},
		{"no model name", "[[desk]]\nname = \"a\"\n[[desk.model]]\nprovider = \"openai\"\n", "model is required"},
		{"key var unset", "[[desk]]\nname = \"a\"\n[[desk.model]]\nmodel = \"m\"\napi_key_env = \"DESKBOT_TEST_UNSET_KEY\"\n", "DESKBOT_TEST_UNSET_KEY (its api_key_env) is not set"},
		{"provider", "[[desk]]\nname = \"a\"\n[[desk.model]]\nmodel = \"m\"\nprovider = \"gemini\"\n", "provider is \"openai\", \"anthropic\" or \"claude-code\", not \"gemini\""},
		{"bad timeout", "[[desk]]\nname = \"a\"\n[[desk.model]]\nmodel = \"m\"\ntimeout = \"soon\"\n", "not a positive duration"},
		{"steps", "[[desk]]\nname = \"a\"\nmax_steps = 1000\n", "max_steps"},
		{"empty", "# nothing\n", "no [[desk]]"},
		{"syntax", "[[desk]\nname = \"a\"\n", "DESKS_FILE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := agent.LoadDesks(nil, mustDeskFile(t, tt.file), defaultChain)
			if err == nil {
				t.Fatalf("loaded; want an error containing %q", tt.want)
			}
			if msg := err.Error(); !strings.Contains(msg, tt.want) || strings.Contains(msg, "\n") {
				t.Errorf("error = %q, want one line containing %q", msg, tt.want)
			}
		})
	}
}

func TestLoadDesksReadsKeyFromNamedVariable(t *testing.T) {
	t.Setenv("DESKBOT_TEST_KEY", "sk-from-env")
	desks, err := agent.LoadDesks(nil, mustDeskFile(t, "[[desk]]\nname = \"a\"\n[[desk.model]]\nbase_url = \"http://vllm:8000/v1\"\nmodel = \"gemma\"\napi_key_env = \"DESKBOT_TEST_KEY\"\n"), defaultChain)
	if err != nil {
		t.Fatal(err)
	}
	m := desks[0].Models[0]
	if m.APIKey != "sk-from-env" || m.Name != "openai:gemma" || m.BaseURL != "http://vllm:8000/v1" || m.Timeout != 2*time.Minute {
		t.Errorf("model = %+v", m)
	}
}

func TestLoadDesksBadNames(t *testing.T) {
	for _, names := range [][]string{{"Main"}, {"a", "a"}, {"a/b"}, {"main", "all"}} {
		if _, err := agent.LoadDesks(names, "", defaultChain); err == nil || !strings.HasPrefix(err.Error(), "deskbot invalid: DESKS:") {
			t.Errorf("LoadDesks(%q) error = %v, want a DESKS error", names, err)
		}
	}
}
