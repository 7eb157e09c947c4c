package sandbox_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deskbot/deskbot/sandbox"
)

const token = "123456:fake-bot-token-for-the-test"

func TestEnvironmentIsClean(t *testing.T) {
	t.Setenv("TELEGRAM_TOKEN", token)
	t.Setenv("REDIS_URL", "redis://:"+token+"@127.0.0.1:6379")
	t.Setenv("MARKET_API_URL", "https://example.test/quotes")
	eachMode(t, func(t *testing.T, mode string) {
		cfg := testConfig(t, mode)
		cfg.PassEnv = []string{"MARKET_API_URL", "HOME", "NOT_SET_ANYWHERE"}
		s := mustSession(t, mustManager(t, cfg), "desk-1")
		got := mustOutput(t, s, "env | sort")
		names := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(got), "\n") {
			k, v, _ := strings.Cut(line, "=")
			names[k] = v
		}
		want := map[string]string{
			"HOME": s.Dir(), "DESK": "desk-1", "TZ": "Asia/Kolkata",
			"MARKET_API_URL": "https://example.test/quotes", "PWD": s.Dir(),
		}
		for k, v := range want {
			if names[k] != v {
				t.Errorf("%s=%q, want %q", k, names[k], v)
			}
		}
		// bash adds SHLVL, _ and OLDPWD itself; nothing else may appear.
		allowed := map[string]bool{"PATH": true, "LANG": true, "SHLVL": true, "_": true, "OLDPWD": true}
		for k := range names {
			if _, ok := want[k]; !ok && !allowed[k] {
				t.Errorf("unexpected variable %s in the desk's environment", k)
			}
		}
		if strings.Contains(got, token) {
			t.Error("the token reached the desk's environment")
		}
		if got := mustOutput(t, s, "date +%Z"); got != "IST\n" {
			t.Errorf("date +%%Z = %q, want IST", got)
		}
	})
}

func TestBwrapIsolation(t *testing.T) {
	needBwrap(t)
	t.Setenv("TELEGRAM_TOKEN", token)
	cfg := testConfig(t, sandbox.ModeBwrap)
	m := mustManager(t, cfg)
	s := mustSession(t, m, "main")
	other := mustSession(t, m, "other")
	if err := os.WriteFile(filepath.Join(other.Dir(), "secret-plan.txt"), []byte("buy"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfg.DataDir, "service.db"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	hostTmp := filepath.Join(os.TempDir(), fmt.Sprintf("deskbot-host-%d", os.Getpid()))
	if err := os.WriteFile(hostTmp, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(hostTmp) })
	desks := filepath.Dir(s.Dir())

	fails := []struct{ name, command string }{
		{"host process environ", fmt.Sprintf("cat /proc/%d/environ", os.Getpid())},
		{"another desk's file", "cat " + filepath.Join(other.Dir(), "secret-plan.txt")},
		{"service data", "ls " + filepath.Join(cfg.DataDir, "service.db")},
		{"host /tmp", "ls " + hostTmp},
		{"write /usr", "touch /usr/owned"},
		{"write /etc", "echo x > /etc/owned"},
		{"write the root", "touch /owned"},
		{"write a sysctl", "cat /proc/sys/kernel/hostname > /proc/sys/kernel/hostname"},
		{"mount", "mount -t tmpfs none /usr"},
		{"read shadow", "grep -q root /etc/shadow"},
	}
	for _, tt := range fails {
		t.Run(tt.name, func(t *testing.T) {
			if r := mustRun(t, s, tt.command); !strings.Contains(r.Text, "exit status") {
				t.Errorf("%q succeeded inside the sandbox: %q", tt.command, r.Text)
			}
		})
	}
	works := []struct{ name, command, want string }{
		{"only its own desk is visible", "ls " + desks, "main\n"},
		{"own folder writable", "echo kept > notes.txt && cat ~/notes.txt", "kept\n"},
		{"private /tmp", "echo t > /tmp/x && cat /tmp/x", "t\n"},
		{"no capabilities", "grep CapEff /proc/self/status", "CapEff:\t0000000000000000\n"},
		{"own pid namespace", "ps -e -o comm= 2>/dev/null | grep -c . || ls /proc | grep -c '^[0-9]'", ""},
		{"init has no token", "tr '\\0' '\\n' < /proc/1/environ | grep -c TELEGRAM || true", "0\n"},
	}
	for _, tt := range works {
		t.Run(tt.name, func(t *testing.T) {
			got := mustOutput(t, s, tt.command)
			if tt.want != "" && got != tt.want {
				t.Errorf("%q: got %q, want %q", tt.command, got, tt.want)
			}
		})
	}
	t.Run("writes beside the desk's folder stay inside", func(t *testing.T) {
		// The data folder lies under /tmp here, so its parents are on the
		// sandbox's private /tmp: writable there, never on the host.
		mustRun(t, s, "touch "+filepath.Join(desks, "owned"))
		if _, err := os.Stat(filepath.Join(desks, "owned")); err == nil {
			t.Error("a write beside the desk's folder reached the host")
		}
	})
	if _, err := os.Stat(filepath.Join(s.Dir(), "notes.txt")); err != nil {
		t.Errorf("a file written in the sandbox is not in the desk's folder: %v", err)
	}
	t.Run("few processes", func(t *testing.T) {
		got := mustOutput(t, s, "ls /proc | grep -c '^[0-9]'")
		var n int
		fmt.Sscan(got, &n)
		if n > 6 {
			t.Errorf("the sandbox sees %d processes, want only its own few", n)
		}
	})
}

func TestBwrapNetworkOff(t *testing.T) {
	needBwrap(t)
	for _, tt := range []struct {
		network bool
		want    string
	}{{false, "lo\n"}, {true, "lo\ntap0\n"}} {
		if tt.network {
			needNetwork(t)
		}
		cfg := testConfig(t, sandbox.ModeBwrap)
		cfg.Network = tt.network
		s := mustSession(t, mustManager(t, cfg), "main")
		got := mustOutput(t, s, `tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '`)
		if got != tt.want {
			t.Errorf("network %v: interfaces %q, want %q (its own, never the host's)", tt.network, got, tt.want)
		}
	}
}
