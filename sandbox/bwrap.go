package sandbox

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/deskbot/deskbot"
)

func bashPath() (string, error) {
	p, err := exec.LookPath("bash")
	if err != nil {
		return "", deskbot.Errorf(deskbot.EUNAVAILABLE, "the sandbox needs bash, which is not installed")
	}
	return filepath.Abs(p)
}

func lookBwrap() (string, error) {
	p, err := exec.LookPath("bwrap")
	if err != nil {
		return "", deskbot.Errorf(deskbot.EUNAVAILABLE, "bwrap is not installed (Debian package bubblewrap)")
	}
	return filepath.Abs(p)
}

// bwrapArgs is the bubblewrap command line for a desk whose folder is dir.
// The order matters: later mounts cover earlier ones (the desk's folder may
// lie under /tmp, which is first replaced by an empty tmpfs).
func bwrapArgs(cfg Config, dir string, env []string) []string {
	a := []string{
		"--die-with-parent", // the sandbox and everything in it ends with the service
		"--new-session",     // no TIOCSTI into a terminal the service might have
		"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--hostname", "deskbot",
		// As root, bwrap keeps every capability unless told; with them a desk
		// could mount over the read-only system or make device nodes.
		"--cap-drop", "ALL",
		"--ro-bind", "/usr", "/usr",
	}
	if !cfg.Network {
		a = append(a, "--unshare-net")
	}
	// Merged-/usr systems have these as symlinks; older ones as folders.
	for _, d := range []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		if target, err := os.Readlink(d); err == nil {
			a = append(a, "--symlink", target, d)
		} else if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			a = append(a, "--ro-bind", d, d)
		}
	}
	a = append(a, "--ro-bind", "/etc", "/etc",
		"--ro-bind-try", "/dev/null", "/etc/shadow",
		"--ro-bind-try", "/dev/null", "/etc/gshadow")
	// A resolv.conf that points into /run (systemd-resolved) would dangle.
	if r, err := filepath.EvalSymlinks("/etc/resolv.conf"); err == nil &&
		!strings.HasPrefix(r, "/etc/") && !strings.HasPrefix(r, "/usr/") {
		a = append(a, "--ro-bind", r, r)
	}
	a = append(a,
		"--proc", "/proc",
		// Root without capabilities may still write host-wide sysctls.
		"--ro-bind", "/proc/sys", "/proc/sys",
		"--ro-bind-try", "/proc/sysrq-trigger", "/proc/sysrq-trigger",
		"--dev", "/dev",
		"--tmpfs", "/tmp",
		"--bind", dir, dir,
		"--chdir", dir,
		// The skeleton bwrap made for the mount points (/, parents of the
		// desk's folder outside /tmp) would otherwise be writable scratch.
		"--remount-ro", "/",
		"--clearenv",
	)
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		a = append(a, "--setenv", k, v)
	}
	return a
}

// tryBwrap starts a throwaway sandbox with the real arguments and returns
// "" when it works, else why not (bwrap's own words, which hold no secrets).
func tryBwrap(ctx context.Context, cfg Config) string {
	bw, err := lookBwrap()
	if err != nil {
		return deskbot.ErrorMessage(err)
	}
	bash, err := bashPath()
	if err != nil {
		return deskbot.ErrorMessage(err)
	}
	dir, err := os.MkdirTemp("", "deskbot-probe-")
	if err != nil {
		return "cannot make a probe folder: " + err.Error()
	}
	defer os.RemoveAll(dir)
	if dir, err = filepath.EvalSymlinks(dir); err != nil {
		return err.Error()
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	env := cfg.env("probe", dir)
	args := append(bwrapArgs(cfg, dir, env), "--", bash, "--noprofile", "--norc", "-c", "echo ok")
	cmd := exec.CommandContext(ctx, bw, args...)
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	if err == nil && strings.TrimSpace(out.String()) == "ok" {
		return ""
	}
	msg := strings.TrimSpace(out.String())
	if msg == "" && err != nil {
		msg = err.Error()
	}
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return msg
}
