package sandbox_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
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
		{"", false}, {"all", false}, {"..", false}, {"../main", false}, {"a/b", false}, {"Main", false},
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

// withoutBwrap points the sandbox at a bwrap that is not there, as on a
// host without bubblewrap.
func withoutBwrap(cfg sandbox.Config) sandbox.Config {
	cfg.Bwrap = filepath.Join(os.TempDir(), "no-such-dir", "bwrap")
	return cfg
}

func TestWithoutBwrap(t *testing.T) {
	t.Run("bwrap mandatory refuses to start", func(t *testing.T) {
		_, err := sandbox.NewManager(withoutBwrap(testConfig(t, sandbox.ModeBwrap)))
		if deskbot.ErrorCode(err) != deskbot.EUNAVAILABLE || !strings.Contains(err.Error(), "bubblewrap") {
			t.Errorf("got %v, want EUNAVAILABLE naming bubblewrap", err)
		}
	})
	t.Run("auto gives desks no terminal, and says so", func(t *testing.T) {
		var logs bytes.Buffer
		cfg := withoutBwrap(testConfig(t, sandbox.ModeAuto))
		cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		m := mustManager(t, cfg)
		if got, want := m.Mode(), sandbox.ModeUnavailable; got != want {
			t.Errorf("mode %q, want %q", got, want)
		}
		if st := m.Status(); !strings.Contains(st.Reason, "bubblewrap") {
			t.Errorf("reason %q, want it to name bubblewrap", st.Reason)
		}
		for _, desk := range []string{"a", "b"} {
			if _, err := m.Session(desk); deskbot.ErrorCode(err) != deskbot.EUNAVAILABLE {
				t.Errorf("Session(%q): got %v, want EUNAVAILABLE", desk, err)
			}
			for _, tl := range m.Tools(desk) {
				if d := tl.Description(); !strings.HasPrefix(d, "UNAVAILABLE") {
					t.Errorf("%s's description %q does not say the terminal is unavailable", tl.Name(), d)
				}
				r, err := tl.Run(t.Context(), desk, json.RawMessage(`{"command":"tr '\\0' '\\n' </proc/$PPID/environ","job_id":"0a1b2c3d"}`))
				if err != nil || !r.IsError || !strings.Contains(r.Text, "no terminal") {
					t.Errorf("%s ran without a sandbox: %q, %v", tl.Name(), r.Text, err)
				}
			}
		}
		if _, err := os.Stat(filepath.Join(cfg.DataDir, "desks", "a")); err == nil {
			t.Error("a desk's folder was made although it has no terminal")
		}
		if n := strings.Count(logs.String(), "level=ERROR"); n != 1 || !strings.Contains(logs.String(), "bubblewrap") {
			t.Errorf("want exactly one error naming bubblewrap, got:\n%s", logs.String())
		}
		// The log agrees with itself: no line after the error says the
		// sandbox is ready.
		if strings.Contains(logs.String(), "sandbox ready") {
			t.Errorf("the log says the sandbox is ready after saying desks have no terminal:\n%s", logs.String())
		}
	})
	t.Run("none runs plain bash when set on purpose", func(t *testing.T) {
		m := mustManager(t, withoutBwrap(testConfig(t, sandbox.ModeNone)))
		if got, want := m.Mode(), sandbox.ModeNone; got != want {
			t.Errorf("mode %q, want %q", got, want)
		}
		mustOutput(t, mustSession(t, m, "a"), "true")
	})
}

func TestProbe(t *testing.T) {
	got, err := sandbox.Probe(t.Context(), testConfig(t, sandbox.ModeNone))
	if err != nil || got.Mode != sandbox.ModeNone {
		t.Errorf("Probe(none) = %+v, %v", got, err)
	}
	got, err = sandbox.Probe(t.Context(), withoutBwrap(testConfig(t, sandbox.ModeAuto)))
	if err != nil || got.Mode != sandbox.ModeUnavailable {
		t.Errorf("Probe(auto) without bwrap = %+v, %v; want unavailable", got, err)
	}
	needNetwork(t)
	cfg := testConfig(t, sandbox.ModeAuto)
	got, err = sandbox.Probe(t.Context(), cfg)
	if err != nil || got.Mode != sandbox.ModeBwrap || !got.Network {
		t.Errorf("Probe(auto) with bwrap usable = %+v, %v; want bwrap with network", got, err)
	}
	cfg.Slirp4netns = filepath.Join(os.TempDir(), "no-such-dir", "slirp4netns")
	got, err = sandbox.Probe(t.Context(), cfg)
	if err != nil || got.Network || !strings.Contains(got.NetworkReason, "Debian package slirp4netns") {
		t.Errorf("Probe without slirp4netns = %+v, %v; want no network, naming the package", got, err)
	}
}

// As root, desks run as another user, which must pass through DataDir's
// parents: where one is private, desks have no terminal and the error names
// the folder and the fix, in every mode.
func TestPrivateDataDirParent(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root runs desks as another user")
	}
	eachMode(t, func(t *testing.T, mode string) {
		cfg := testConfig(t, mode)
		parent := filepath.Dir(cfg.DataDir)
		if err := os.Chmod(parent, 0o700); err != nil {
			t.Fatal(err)
		}
		m := mustManager(t, cfg)
		_, err := m.Session("main")
		if deskbot.ErrorCode(err) != deskbot.EUNAVAILABLE || !strings.Contains(err.Error(), "chmod o+x "+parent) {
			t.Errorf("got %v, want EUNAVAILABLE naming %s", err, parent)
		}
		if st := m.Status(); !strings.Contains(st.Folder, parent) {
			t.Errorf("status %+v does not name %s", st, parent)
		}
	})
}
