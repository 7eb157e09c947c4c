package main

import (
	"os"
	"os/exec"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/deskbot/deskbot/agent"
)

// Every variable the service reads is in the README's table and in
// .env.example with its default, so a newcomer never meets an undocumented
// setting; and the README keeps the two commands .ci/run relies on.
func TestVariablesDocumented(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile("../../.env.example")
	if err != nil {
		t.Fatal(err)
	}
	ct := reflect.TypeFor[Config]()
	for i := range ct.NumField() {
		f := ct.Field(i)
		if !f.IsExported() {
			continue // not read from the environment
		}
		name := strings.Split(f.Tag.Get("env"), ",")[0]
		if !strings.Contains(string(readme), "| `"+name+"` |") {
			t.Errorf("README's variable table has no %s", name)
		}
		m := regexp.MustCompile(`(?m)^` + name + `=(.*)$`).FindStringSubmatch(string(example))
		if m == nil {
			t.Errorf(".env.example has no %s= line", name)
			continue
		}
		// A shell reads the file too: a quoted value means what is inside.
		val := m[1]
		if len(val) >= 2 && (val[0] == '"' || val[0] == '\'') && val[len(val)-1] == val[0] {
			val = val[1 : len(val)-1]
		}
		if def, ok := f.Tag.Lookup("envDefault"); ok && val != def {
			t.Errorf(".env.example: %s=%s, but the default is %q", name, m[1], def)
		}
	}
	for _, cmd := range []string{"go run ./cmd/deskbot", "go test ./..."} {
		if !strings.Contains(string(readme), cmd) {
			t.Errorf("README lacks %q", cmd)
		}
	}
}

// The example desks file passes check as a newcomer runs it: one approver,
// no model keys, no Claude Code CLI. What needs more (four eyes, a key,
// the CLI) is there commented out.
func TestDesksExamplePassesCheck(t *testing.T) {
	for _, k := range []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "MODEL_API_KEY", "OLLAMA_KEY"} {
		t.Setenv(k, "") // restored after the test
		os.Unsetenv(k)
	}
	env := minimalEnv()
	env["DESKS_FILE"] = "../../docs/desks.example.toml"
	env["TELEGRAM_APPROVERS"] = "101"
	cfg, err := LoadConfig(env)
	if err != nil {
		t.Fatal(err)
	}
	desks, err := loadCheckedDesks(cfg)
	if err != nil {
		t.Fatalf("desks: %v", err)
	}
	c := &checker{}
	c.policies(cfg, desks)
	for _, d := range desks {
		for _, mc := range d.Models {
			if mc.Provider == agent.ClaudeCode {
				c.add("model "+modelLabel(mc), statusFail, "desk %s needs the Claude Code CLI", d.Name)
			}
		}
	}
	var b strings.Builder
	c.print(&b)
	if c.failed() {
		t.Errorf("check fails on docs/desks.example.toml:\n%s", b.String())
	}
	if got, want := len(desks), 3; got != want {
		t.Errorf("%d desks, want %d (main, research, planner)", got, want)
	}
}

// .env.example is sourced by shells as well as read by compose: every line
// must parse in bash, and each variable must hold what the file says.
func TestEnvExampleSourceable(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash on this machine")
	}
	cmd := exec.Command(bash, "--noprofile", "--norc", "-e", "-c", `set -a; . ./.env.example; printf '%s\n' "$SWEEP_SCHEDULE" "$APPROVAL_TOOLS"`)
	cmd.Dir = "../.."
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bash cannot source .env.example: %v\n%s", err, out)
	}
	if got, want := string(out), "@every 1m\nflatten_desk,place_order\n"; got != want {
		t.Errorf("sourced values %q, want %q", got, want)
	}
}
