package sandbox_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deskbot/deskbot/sandbox"
)

// A desk's commands run under the sandbox's seccomp filter: the calls a
// terminal never needs fail with EPERM (clone3 with ENOSYS, so that glibc
// falls back to clone, whose flags the filter sees), and what a terminal
// does need still works.
func TestHostileSeccomp(t *testing.T) {
	needBwrap(t)
	s := mustSession(t, mustManager(t, testConfig(t, sandbox.ModeBwrap)), "main")

	if got, want := mustOutput(t, s, "grep '^Seccomp:' /proc/self/status"), "Seccomp:\t2\n"; got != want {
		t.Fatalf("a desk's command: got %q, want %q (filter mode)", got, want)
	}

	probe := buildSeccompProbe(t, s.Dir())
	out := mustOutput(t, s, probe)
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			t.Fatalf("probe printed %q", out)
		}
		got[line[:i]] = line[i+1:]
	}
	const eperm, enosys = "1", "38"
	for _, name := range []string{
		"ptrace", "process_vm_readv", "mount", "umount2", "unshare", "setns", "clone",
		"keyctl", "add_key", "request_key", "bpf", "userfaultfd", "perf_event_open", "io_uring_setup",
		"init_module", "finit_module", "delete_module", "kexec_load",
		"clock_settime", "clock_adjtime", "adjtimex", "reboot", "open_by_handle_at", "ioctl TIOCSTI", "ioctl TIOCSTI high",
	} {
		if g := got[name]; g != eperm {
			t.Errorf("%s from a desk: got errno %q, want EPERM (%s)", name, g, eperm)
		}
	}
	if g := got["clone3"]; g != enosys {
		t.Errorf("clone3 from a desk: got errno %q, want ENOSYS (%s)", g, enosys)
	}

	for _, tt := range []struct{ name, command, want string }{
		{"no new user namespace", "unshare -U true 2>&1; echo $?", "unshare: unshare failed: Operation not permitted\n1\n"},
		{"no mount", "mkdir -p /tmp/x && mount -t tmpfs x /tmp/x 2>/dev/null; echo $?", "32\n"},
		// GNU sort's threads are glibc's: clone3, then clone on ENOSYS.
		{"threads still start", "seq 200000 | sort -n --parallel=4 -S 1M | tail -n 1", "200000\n"},
		{"fork and pipes still work", "echo ok | (cat; true) | tr a-z A-Z", "OK\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := mustRun(t, s, tt.command).Text; got != tt.want {
				t.Errorf("%q: got %q, want %q", tt.command, got, tt.want)
			}
		})
	}
}

// buildSeccompProbe builds testdata/seccompprobe into the desk's folder,
// which the sandbox shows at the same path, and returns its path.
func buildSeccompProbe(t *testing.T, deskDir string) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal("the seccomp probe needs the go command to build")
	}
	out := filepath.Join(deskDir, "seccompprobe")
	cmd := exec.Command(goBin, "build", "-o", out, "./testdata/seccompprobe")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build seccompprobe: %v\n%s", err, b)
	}
	return out
}
