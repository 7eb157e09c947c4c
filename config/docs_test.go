package config

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/deskbot/deskbot/agent"
	"github.com/deskbot/deskbot/argtext"
	"github.com/deskbot/deskbot/claudecode"
	"github.com/deskbot/deskbot/config/configtest"
)

// Every variable the service reads is in the reference's table
// (docs/reference.md, which the README links) and in .env.example with its
// default, so a newcomer never meets an undocumented setting; and the
// README keeps the two commands .ci/run relies on.
func TestVariablesDocumented(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	reference, err := os.ReadFile("../docs/reference.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "(docs/reference.md") {
		t.Error("README does not link docs/reference.md")
	}
	example, err := os.ReadFile("../.env.example")
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
		if !strings.Contains(string(reference), "| `"+name+"` |") {
			t.Errorf("docs/reference.md's variable table has no %s", name)
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

// The example desks file passes check as a team runs it: two approvers
// (its four eyes need them), no model keys, no Claude Code CLI. What needs
// more (a key, the CLI) is there commented out.
func TestDesksExamplePassesCheck(t *testing.T) {
	for _, k := range []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "MODEL_API_KEY", "OLLAMA_KEY"} {
		t.Setenv(k, "") // restored after the test
		os.Unsetenv(k)
	}
	env := configtest.MinimalEnv()
	env["DESKS_FILE"] = "../docs/desks.example.toml"
	env["TELEGRAM_APPROVERS"] = "101,102" // the example has four eyes
	cfg, err := Load(env)
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
	cmd.Dir = ".."
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bash cannot source .env.example: %v\n%s", err, out)
	}
	if got, want := string(out), "@every 1m\nflatten_desk,place_order,modify_order,place_gtt\n"; got != want {
		t.Errorf("sourced values %q, want %q", got, want)
	}
}

// The Claude Code CLI is named at one version, claudecode.MinVersion: the
// README gives its pinned install command, no file tells anyone to install
// it unpinned (on Node 20 that gets 2.1.197, which fails every turn), and
// .ci/run finds the version where it reads it.
func TestClaudeCodeVersionDocumented(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{claudecode.Install, claudecode.MinVersion + " or newer", claudecode.Node} {
		if !strings.Contains(string(readme), want) {
			t.Errorf("README lacks %q", want)
		}
	}
	files := []string{"../README.md", "../Dockerfile", "../.env.example", "../docs/desks.example.toml", "check.go"}
	more, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	const pkg = "@anthropic-ai/claude-code"
	for _, name := range append(files, more...) {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for rest := string(b); ; {
			_, after, ok := strings.Cut(rest, pkg)
			if !ok {
				break
			}
			if !strings.HasPrefix(after, "@"+claudecode.MinVersion) {
				t.Errorf("%s: %s%s: not pinned at %s", name, pkg, argtext.Clip(after, 20, "…"), claudecode.MinVersion)
			}
			rest = after
		}
	}
	src, err := os.ReadFile("../claudecode/version.go")
	if err != nil {
		t.Fatal(err)
	}
	// .ci/run: sed -n 's/^const MinVersion = "\([0-9][0-9.]*\)".*/\1/p'
	m := regexp.MustCompile(`(?m)^const MinVersion = "([0-9][0-9.]*)"`).FindSubmatch(src)
	if m == nil || string(m[1]) != claudecode.MinVersion {
		t.Errorf(".ci/run reads the version from claudecode/version.go as %q, but it is %s", m, claudecode.MinVersion)
	}
	ci, err := os.ReadFile("../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ci), `s/^const MinVersion = "\([0-9][0-9.]*\)".*/\1/p' claudecode/version.go`) {
		t.Error(".ci/run no longer reads the version as this test checks it")
	}
}
