package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// `deskbot --help` lists the commands and says where the variables are
// documented; it printed only a usage line.
func TestHelpListsCommandsAndWhereVariablesAre(t *testing.T) {
	t.Parallel()
	for _, arg := range []string{"--help", "-h", "help"} {
		var out, errs bytes.Buffer
		if code := command(t.Context(), []string{arg}, "", nil, &out, &errs); code != 0 {
			t.Errorf("deskbot %s: exit %d, want 0", arg, code)
		}
		for _, want := range []string{"deskbot check", "deskbot demo", "deskbot version", ".env.example", "README.md", ".env file in the working"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("deskbot %s does not say %q:\n%s", arg, want, &out)
			}
		}
	}
	var out, errs bytes.Buffer
	if code := command(t.Context(), []string{"chek"}, "", nil, &out, &errs); code != 2 {
		t.Errorf("an unknown command: exit %d, want 2", code)
	}
	if !strings.Contains(errs.String(), `unknown command "chek"`) || !strings.Contains(errs.String(), "deskbot check") {
		t.Errorf("an unknown command's message:\n%s", &errs)
	}
}

// `deskbot version` prints the module version and the revision the binary
// was built from, as the toolchain recorded them.
func TestVersionPrintsTheRevision(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout (%v): no revision to compare", err)
	}
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(strings.TrimSpace(string(top)), ".git")); err != nil || !fi.IsDir() {
		t.Skip("a git worktree: the Go toolchain records no revision there (it looks for a .git folder)")
	}
	bin := filepath.Join(t.TempDir(), "deskbot")
	if out, err := exec.Command("go", "build", "-buildvcs=true", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("deskbot version: %v\n%s", err, out)
	}
	got := string(out)
	if want := "deskbot "; !strings.HasPrefix(got, want) {
		t.Errorf("deskbot version = %q, want it to start %q", got, want)
	}
	if want := "revision " + strings.TrimSpace(string(head)); !strings.Contains(got, want) {
		t.Errorf("deskbot version = %q, want it to name %q", got, want)
	}
}
