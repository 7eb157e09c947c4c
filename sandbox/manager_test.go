package sandbox_test

import (
	"bytes"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/sandbox"
)

func TestDeskNames(t *testing.T) {
	m := mustManager(t, testConfig(t, sandbox.ModeNone))
	for _, tt := range []struct {
		name string
		ok   bool
	}{
		{"main", true}, {"desk_2-b", true}, {strings.Repeat("a", 32), true},
		{"", false}, {"..", false}, {"../main", false}, {"a/b", false}, {"Main", false},
		{strings.Repeat("a", 33), false}, {"a b", false}, {"desk.1", false},
	} {
		_, err := m.Session(tt.name)
		if got := err == nil; got != tt.ok {
			t.Errorf("Session(%q): err %v, want ok=%v", tt.name, err, tt.ok)
		}
		if err != nil && deskbot.ErrorCode(err) != deskbot.EINVALID {
			t.Errorf("Session(%q): code %s, want EINVALID", tt.name, deskbot.ErrorCode(err))
		}
	}
}

func TestBadConfig(t *testing.T) {
	for _, cfg := range []sandbox.Config{
		{DataDir: t.TempDir(), Mode: "docker"},
		{Mode: sandbox.ModeNone},
	} {
		if _, err := sandbox.NewManager(cfg); deskbot.ErrorCode(err) != deskbot.EINVALID {
			t.Errorf("NewManager(%+v): got %v, want EINVALID", cfg, err)
		}
	}
}

// withoutBwrap leaves only bash on PATH, as on a host without bubblewrap.
func withoutBwrap(t *testing.T) {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(bash, filepath.Join(dir, "bash")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
}

func TestWithoutBwrap(t *testing.T) {
	withoutBwrap(t)
	t.Run("bwrap mandatory refuses to start", func(t *testing.T) {
		_, err := sandbox.NewManager(testConfig(t, sandbox.ModeBwrap))
		if deskbot.ErrorCode(err) != deskbot.EUNAVAILABLE || !strings.Contains(err.Error(), "bubblewrap") {
			t.Errorf("got %v, want EUNAVAILABLE naming bubblewrap", err)
		}
	})
	t.Run("auto falls back with one warning", func(t *testing.T) {
		var logs bytes.Buffer
		cfg := testConfig(t, sandbox.ModeAuto)
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		m := mustManager(t, cfg)
		if got, want := m.Mode(), sandbox.ModeNone; got != want {
			t.Errorf("mode %q, want %q", got, want)
		}
		for _, desk := range []string{"a", "b"} {
			s := mustSession(t, m, desk)
			mustOutput(t, s, "true")
			mustRun(t, s, "exit 1")
			mustOutput(t, s, "true")
		}
		if n := strings.Count(logs.String(), "level=WARN"); n != 1 {
			t.Errorf("%d warnings, want exactly one:\n%s", n, logs.String())
		}
	})
}

func TestProbe(t *testing.T) {
	got, err := sandbox.Probe(t.Context(), testConfig(t, sandbox.ModeNone))
	if err != nil || got != sandbox.ModeNone {
		t.Errorf("Probe(none) = %q, %v", got, err)
	}
	needBwrap(t)
	got, err = sandbox.Probe(t.Context(), testConfig(t, sandbox.ModeAuto))
	if err != nil || got != sandbox.ModeBwrap {
		t.Errorf("Probe(auto) with bwrap usable = %q, %v; want bwrap", got, err)
	}
}
