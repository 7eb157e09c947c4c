package sandbox_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/sandbox"
)

// bwrapUsable is probed once: every bwrap test needs the same answer.
var bwrapUsable = sync.OnceValue(func() error {
	_, err := sandbox.Probe(context.Background(), sandbox.Config{DataDir: os.TempDir(), Mode: sandbox.ModeBwrap, Logger: slog.New(slog.DiscardHandler)})
	return err
})

// needBwrap skips a bwrap test where bubblewrap cannot run, unless CI
// demands it with DESKBOT_REQUIRE_BWRAP=1.
func needBwrap(t *testing.T) {
	t.Helper()
	if err := bwrapUsable(); err != nil {
		if os.Getenv("DESKBOT_REQUIRE_BWRAP") == "1" {
			t.Fatalf("bwrap required but unusable: %v", err)
		}
		t.Skipf("bwrap unusable here (install the bubblewrap package; DESKBOT_REQUIRE_BWRAP=1 fails instead): %v", err)
	}
}

// networkUsable is probed once: can slirp4netns give a sandbox a network
// here (it needs /dev/net/tun)?
var networkUsable = sync.OnceValue(func() string {
	st, err := sandbox.Probe(context.Background(), sandbox.Config{DataDir: os.TempDir(), Mode: sandbox.ModeBwrap, Network: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err.Error()
	}
	return st.NetworkReason
})

// needNetwork skips a test of the desks' network where slirp4netns cannot
// give one, unless CI demands it with DESKBOT_REQUIRE_BWRAP=1.
func needNetwork(t *testing.T) {
	t.Helper()
	needBwrap(t)
	if why := networkUsable(); why != "" {
		if os.Getenv("DESKBOT_REQUIRE_BWRAP") == "1" {
			t.Fatalf("the desks' network is required but unusable: %s", why)
		}
		t.Skipf("the desks' network is unusable here: %s", why)
	}
}

// eachMode runs f once in fallback mode and once inside bwrap.
func eachMode(t *testing.T, f func(t *testing.T, mode string)) {
	t.Helper()
	for _, mode := range []string{sandbox.ModeNone, sandbox.ModeBwrap} {
		t.Run(mode, func(t *testing.T) {
			if mode == sandbox.ModeBwrap {
				needBwrap(t)
			}
			f(t, mode)
		})
	}
}

// testConfig makes a data folder the desks' unprivileged user can reach
// (t.TempDir's parent is private to the test's user).
func testConfig(t *testing.T, mode string) sandbox.Config {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(filepath.Dir(dir), 0o711); err != nil {
		t.Fatal(err)
	}
	return sandbox.Config{
		DataDir: dir,
		Mode:    mode,
		Network: true,
		Timeout: 20 * time.Second,
		Logger:  slog.New(slog.DiscardHandler),
	}
}

func mustManager(t *testing.T, cfg sandbox.Config) *sandbox.Manager {
	t.Helper()
	m, err := sandbox.NewManager(cfg)
	if err != nil {
		t.Fatalf("NewManager: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func mustSession(t *testing.T, m *sandbox.Manager, desk string) *sandbox.Session {
	t.Helper()
	s, err := m.Session(desk)
	if err != nil {
		t.Fatalf("Session(%q): %v", desk, err)
	}
	return s
}

// mustRun runs a command and fails the test on a system error.
func mustRun(t *testing.T, s *sandbox.Session, command string) deskbot.ToolResult {
	t.Helper()
	r, err := s.Run(t.Context(), command)
	if err != nil {
		t.Fatalf("Run(%q): %v", command, err)
	}
	return r
}

// mustOutput runs a command that must succeed and returns its output.
func mustOutput(t *testing.T, s *sandbox.Session, command string) string {
	t.Helper()
	r := mustRun(t, s, command)
	if r.IsError || strings.Contains(r.Text, "exit status") {
		t.Fatalf("Run(%q) failed: %q", command, r.Text)
	}
	return r.Text
}

// processesWith lists host pids whose whole command line is cmdline; the
// host sees processes inside bwrap's PID namespace too.
func processesWith(needle string) []string {
	var pids []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err == nil && string(bytes.TrimSpace(bytes.ReplaceAll(b, []byte{0}, []byte{' '}))) == needle {
			pids = append(pids, filepath.Base(d))
		}
	}
	return pids
}

func deskbottestLogger(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }
