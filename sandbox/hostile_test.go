package sandbox_test

// Tests that play a hostile desk against the real sandbox: a desk is an LLM
// with a terminal, and here it tries what a prompt-injected or malicious
// model would.

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/sandbox"
)

// checkWithin runs check_background but fails the test, rather than hang
// it, when the call blocks.
func checkWithin(t *testing.T, s *sandbox.Session, id string) deskbot.ToolResult {
	t.Helper()
	type res struct {
		r   deskbot.ToolResult
		err error
	}
	done := make(chan res, 1)
	go func() {
		r, err := s.CheckBackground(t.Context(), id)
		done <- res{r, err}
	}()
	select {
	case got := <-done:
		if got.err != nil {
			t.Fatalf("CheckBackground(%q): %v", id, got.err)
		}
		return got.r
	case <-time.After(10 * time.Second):
		t.Fatalf("CheckBackground(%q) blocked on a file the desk planted", id)
		return deskbot.ToolResult{}
	}
}

// The service reads a job's files on the host; the desk writes them. A
// symlink must not hand the model a host file, a FIFO must not block.
func TestHostileJobFiles(t *testing.T) {
	const secret = "hunter2-redis-password"
	hostDir := t.TempDir()
	envFile := filepath.Join(hostDir, "deskbot.env")
	if err := os.WriteFile(envFile, []byte("REDIS_URL=redis://:"+secret+"@127.0.0.1:6379\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	status := filepath.Join(hostDir, "status")
	if err := os.WriteFile(status, []byte("42\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, id, plant string }{
		{"log symlinked to a host env file", "aaaaaaaa", "ln -sf " + envFile + " .scratch/aaaaaaaa.log"},
		{"log symlinked through a folder", "abababab", "ln -sfn " + hostDir + " .scratch/out && ln -sf out/deskbot.env .scratch/abababab.log"},
		{"exit symlinked to a host file", "bbbbbbbb", "ln -sf " + status + " .scratch/bbbbbbbb.exit && : > .scratch/bbbbbbbb.log"},
		{"log is a FIFO", "cccccccc", "mkfifo .scratch/cccccccc.log"},
		{"exit is a FIFO", "dddddddd", "mkfifo .scratch/dddddddd.exit && : > .scratch/dddddddd.log"},
		{"log symlinked to the service's environ", "eeeeeeee", fmt.Sprintf("ln -sf /proc/%d/environ .scratch/eeeeeeee.log", os.Getpid())},
		{"log is a device", "ffffffff", "ln -sf /dev/zero .scratch/ffffffff.log"},
	}
	t.Setenv("DESKBOT_TEST_SECRET", secret)
	eachMode(t, func(t *testing.T, mode string) {
		s := mustSession(t, mustManager(t, testConfig(t, mode)), "main")
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				mustOutput(t, s, tt.plant)
				r := checkWithin(t, s, tt.id)
				if strings.Contains(r.Text, secret) || strings.Contains(r.Text, "exit status 42") {
					t.Errorf("check_background handed the desk a host file: %q", r.Text)
				}
			})
		}
	})
}

// Inside bwrap the desk is nobody in particular: not root, no host users,
// no shadow, and what it needs still works.
func TestHostileDeskUser(t *testing.T) {
	needBwrap(t)
	cfg := testConfig(t, sandbox.ModeBwrap)
	m := mustManager(t, cfg)
	s := mustSession(t, m, "main")
	// A root-only file in the desk's own folder, as the service might leave.
	rootOnly := filepath.Join(s.Dir(), "root-only.txt")
	if err := os.WriteFile(rootOnly, []byte("root secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(rootOnly, os.Getuid(), os.Getgid()); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, command, want string }{
		{"uid", "id -u", "1000\n"},
		{"gid", "id -g", "1000\n"},
		{"name", "whoami", "desk\n"},
		{"no host users", "cut -d: -f1 /etc/passwd | sort | tr '\\n' ' '", "desk nobody root "},
		{"etc holds only what programs need", "ls -A /etc | grep -xE 'shadow|gshadow|machine-id|fstab|sudoers|environment|hostname|deskbot.*|.*\\.env' | wc -l", "0\n"},
		{"no capabilities", "grep CapEff /proc/self/status", "CapEff:\t0000000000000000\n"},
		{"no nested user namespaces", "unshare -U true 2>/dev/null && echo made || echo refused", "refused\n"},
		{"alternatives resolve", "echo a b | awk '{print $2}'", "b\n"},
		{"time zone", "date +%Z", "IST\n"},
		{"certificates", "test -s /etc/ssl/certs/ca-certificates.crt && echo yes", "yes\n"},
		{"user lookup", "getent passwd desk | cut -d: -f6", s.Dir() + "\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := mustOutput(t, s, tt.command); got != tt.want {
				t.Errorf("%q: got %q, want %q", tt.command, got, tt.want)
			}
		})
	}
	for _, tt := range []struct{ name, command string }{
		{"read shadow", "cat /etc/shadow"},
		{"read a root-only file", "cat " + rootOnly},
		{"raise a limit", "ulimit -n 100000"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "read a root-only file" && os.Geteuid() != 0 {
				t.Skip("a service that is not root shares its uid with the desk on the host")
			}
			if r := mustRun(t, s, tt.command); !strings.Contains(r.Text, "exit status") {
				t.Errorf("%q succeeded inside the sandbox: %q", tt.command, r.Text)
			}
		})
	}
	t.Run("tools run", func(t *testing.T) {
		for _, tool := range []string{"python3 -c 'import ssl, json; print(1)'", "curl --version", "wget --version"} {
			name := strings.Fields(tool)[0]
			if _, err := exec.LookPath(name); err != nil {
				continue
			}
			if r := mustRun(t, s, tool+" >/dev/null && echo works"); r.Text != "works\n" {
				t.Errorf("%s does not run in the sandbox: %q", name, r.Text)
			}
		}
	})
}

// pidNamespaceOf names the PID namespace of the process whose command line
// is cmdline, waiting for it to appear.
func pidNamespaceOf(t *testing.T, cmdline string) string {
	t.Helper()
	var ns string
	deskbottest.Eventually(t, cmdline+" runs", func() bool {
		for _, pid := range processesWith(cmdline) {
			if l, err := os.Readlink("/proc/" + pid + "/ns/pid"); err == nil {
				ns = l
				return true
			}
		}
		return false
	})
	return ns
}

// processesIn counts the host's processes in PID namespace ns.
func processesIn(ns string) int {
	n := 0
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		if l, err := os.Readlink(d + "/ns/pid"); err == nil && l == ns {
			n++
		}
	}
	return n
}

// A desk that forks without end stays within its process limit, and the
// service and the other desks keep working.
func TestHostileForkBomb(t *testing.T) {
	needBwrap(t)
	cfg := testConfig(t, sandbox.ModeBwrap)
	cfg.Limits.Processes = 64
	m := mustManager(t, cfg)
	bomb, calm := mustSession(t, m, "bomb"), mustSession(t, m, "calm")
	mustOutput(t, calm, "true")
	marker := fmt.Sprintf("sleep %d", 700000+os.Getpid()%100000)
	mustOutput(t, bomb, marker+" >/dev/null 2>&1 &")
	ns := pidNamespaceOf(t, marker)

	t.Run("many processes", func(t *testing.T) {
		mustRun(t, bomb, "for i in $(seq 1 150); do sleep 1000 & done 2>/dev/null; true")
		if n := processesIn(ns); n > cfg.Limits.Processes+4 {
			t.Errorf("the desk runs %d processes, more than its limit of %d", n, cfg.Limits.Processes)
		}
	})
	t.Run("fork bomb", func(t *testing.T) {
		mustRun(t, bomb, ":(){ :|:& };: 2>/dev/null")
		for range 20 { // the bomb keeps trying; the limit keeps holding
			if n := processesIn(ns); n > cfg.Limits.Processes+4 {
				t.Fatalf("the desk runs %d processes, more than its limit of %d", n, cfg.Limits.Processes)
			}
			// Another desk and the service still fork and answer.
			if got := mustOutput(t, calm, "seq 1 3 | wc -l"); got != "3\n" {
				t.Fatalf("the other desk: got %q", got)
			}
			if err := exec.Command("true").Run(); err != nil {
				t.Fatalf("the service cannot start a process: %v", err)
			}
		}
	})
	if err := m.Stop("bomb"); err != nil {
		t.Fatal(err)
	}
	deskbottest.Eventually(t, "the bomb is gone", func() bool { return processesIn(ns) == 0 })
}

// A desk that writes without end is stopped by its file size limit and the
// size of its /tmp; memory per process is bounded too.
func TestHostileDiskAndMemory(t *testing.T) {
	eachMode(t, func(t *testing.T, mode string) {
		cfg := testConfig(t, mode)
		cfg.Limits = sandbox.Limits{FileSize: 1 << 20, Tmp: 4 << 20, Memory: 256 << 20, OpenFiles: 64}
		s := mustSession(t, mustManager(t, cfg), "main")
		mustRun(t, s, "head -c 5000000 /dev/zero > big.bin")
		if fi, err := os.Stat(filepath.Join(s.Dir(), "big.bin")); err != nil || fi.Size() > cfg.Limits.FileSize {
			t.Errorf("big.bin: %v bytes (%v), want at most %d", fi.Size(), err, cfg.Limits.FileSize)
		}
		if mode == sandbox.ModeBwrap {
			got := mustOutput(t, s, "for i in 1 2 3 4 5 6 7 8; do head -c 900000 /dev/zero > /tmp/f$i 2>/dev/null; done; df -k /tmp | awk 'NR == 2 {print $3}'")
			if kb, _ := strconv.Atoi(strings.TrimSpace(got)); kb > 4<<10 {
				t.Errorf("/tmp holds %d kB, more than its %d kB", kb, 4<<10)
			}
		}
		if got := mustOutput(t, s, "ulimit -Hn"); got != "64\n" {
			t.Errorf("open files hard limit %q, want 64", got)
		}
		if _, err := exec.LookPath("python3"); err == nil {
			r := mustRun(t, s, "python3 -c 'b = bytearray(512 << 20); print(\"allocated\")'")
			if !strings.Contains(r.Text, "MemoryError") {
				t.Errorf("512 MiB in one process with a 256 MiB limit: %q", r.Text)
			}
		}
	})
}

// The service's own secrets (its environment) are unreadable from a desk in
// every mode. /proc/<pid>/environ shows the environment a process was
// started with, so the test runs itself again with a fake secret in it, and
// hardens itself as the service does.
func TestHostileServiceEnviron(t *testing.T) {
	const secret = "fake-telegram-token-123456:ABCDEF"
	if os.Getenv("DESKBOT_TEST_TOKEN") != secret {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHostileServiceEnviron$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), "DESKBOT_TEST_TOKEN="+secret)
		out, err := cmd.CombinedOutput()
		t.Logf("run with a secret in the environment:\n%s", out)
		if err != nil {
			t.Fatalf("the run with a secret failed: %v", err)
		}
		return
	}
	if err := sandbox.HardenProcess(); err != nil {
		t.Fatal(err)
	}
	eachMode(t, func(t *testing.T, mode string) {
		s := mustSession(t, mustManager(t, testConfig(t, mode)), "main")
		for _, command := range []string{
			`tr '\0' '\n' </proc/$PPID/environ`,
			fmt.Sprintf(`tr '\0' '\n' </proc/%d/environ`, os.Getpid()),
			fmt.Sprintf(`grep -a -o 'fake-telegram[^ ]*' /proc/%d/cmdline /proc/%d/mem 2>&1 | head -c 300`, os.Getpid(), os.Getpid()),
			`for p in /proc/[0-9]*; do tr '\0' '\n' <$p/environ; done 2>/dev/null`,
		} {
			if r := mustRun(t, s, command); strings.Contains(r.Text, secret) {
				t.Errorf("%q read the service's secret: %q", command, r.Text)
			}
		}
	})
}

// listen accepts connections on addr and answers each with a greeting, so
// a desk that reaches it would print the greeting.
func listen(t *testing.T, addr string) string {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			fmt.Fprintln(c, "HOST-SERVICE-REACHED")
			c.Close()
		}
	}()
	return l.Addr().String()
}

// With the network on, the desk has a network of its own (slirp4netns)
// and reaches nothing on the host's loopback: not Redis, not /metrics.
func TestHostileNetwork(t *testing.T) {
	needNetwork(t)
	_, port, _ := net.SplitHostPort(listen(t, "127.0.0.1:0"))
	cfg := testConfig(t, sandbox.ModeBwrap)
	cfg.Network = true
	s := mustSession(t, mustManager(t, cfg), "main")
	for _, target := range []string{"127.0.0.1/" + port, "10.0.2.2/" + port, "10.0.2.3/" + port, "127.0.0.1/6379", "10.0.2.2/6379"} {
		t.Run(target, func(t *testing.T) {
			r := mustRun(t, s, "timeout 5 bash -c 'exec 3<>/dev/tcp/"+target+" && printf \"PING\\r\\n\" >&3 && read -r -t 2 line <&3; echo \"$line\"'")
			if strings.Contains(r.Text, "HOST-SERVICE-REACHED") || strings.Contains(r.Text, "PONG") {
				t.Errorf("the desk reached the host's loopback at %s: %q", target, r.Text)
			}
		})
	}
	t.Run("the desk's network is up", func(t *testing.T) {
		if got := mustOutput(t, s, "grep -c tap0 /proc/net/dev"); got != "1\n" {
			t.Errorf("no tap0 interface: %q", got)
		}
		if got := mustOutput(t, s, "awk '$2 == \"00000000\" {print $1}' /proc/net/route"); got != "tap0\n" {
			t.Errorf("default route via %q, want tap0", got)
		}
		if got := mustOutput(t, s, "cat /etc/resolv.conf"); got != "nameserver 10.0.2.3\n" {
			t.Errorf("resolv.conf %q, want slirp4netns's resolver", got)
		}
	})
}

// Without slirp4netns the desk has no network at all, and the log says
// which package gives it one.
func TestHostileNetworkWithoutHelper(t *testing.T) {
	needBwrap(t)
	var logs strings.Builder
	cfg := testConfig(t, sandbox.ModeBwrap)
	cfg.Network = true
	cfg.Slirp4netns = filepath.Join(t.TempDir(), "slirp4netns")
	cfg.Logger = deskbottestLogger(&logs)
	m := mustManager(t, cfg)
	if m.Status().Network {
		t.Error("network reported on without a helper")
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "Debian package slirp4netns") {
		t.Errorf("want a warning naming the package, got:\n%s", logs.String())
	}
	s := mustSession(t, m, "main")
	if got := mustOutput(t, s, `tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '`); got != "lo\n" {
		t.Errorf("interfaces %q, want only lo", got)
	}
	r := mustRun(t, s, "timeout 5 bash -c 'exec 3<>/dev/tcp/127.0.0.1/6379'")
	if !strings.Contains(r.Text, "exit status") {
		t.Errorf("reached 127.0.0.1:6379 without a network: %q", r.Text)
	}
}

// A background job lives at most JobTimeout.
func TestHostileJobOutlivesItsTime(t *testing.T) {
	eachMode(t, func(t *testing.T, mode string) {
		cfg := testConfig(t, mode)
		cfg.JobTimeout = time.Second
		s := mustSession(t, mustManager(t, cfg), "main")
		id := mustStart(t, s, "echo started; sleep 600; echo never")
		deskbottest.Eventually(t, "the job is stopped at its time limit", func() bool {
			return strings.Contains(mustCheck(t, s, id), "finished, exit status 124")
		})
		_, tail, _ := strings.Cut(mustCheck(t, s, id), "Log tail")
		if !strings.Contains(tail, "sending signal") || strings.Contains(tail, "never") {
			t.Errorf("log tail %q, want it to say the job was stopped", tail)
		}
	})
}
