package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/deskbot/deskbot"
)

// bashPath is bash's real path: a symlink on PATH may point from a folder
// the sandbox does not see.
func bashPath() (string, error) {
	p, err := exec.LookPath("bash")
	if err != nil {
		return "", deskbot.Errorf(deskbot.EUNAVAILABLE, "the sandbox needs bash, which is not installed")
	}
	if p, err = filepath.Abs(p); err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(p)
}

func lookBwrap(cfg Config) (string, error) {
	name := cfg.Bwrap
	if name == "" {
		name = "bwrap"
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", deskbot.Errorf(deskbot.EUNAVAILABLE, "bwrap is not installed (Debian package bubblewrap)")
	}
	return filepath.Abs(p)
}

func lookSlirp(cfg Config) (string, error) {
	name := cfg.Slirp4netns
	if name == "" {
		name = "slirp4netns"
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", deskbot.Errorf(deskbot.EUNAVAILABLE, "%s", NoNetworkHelper)
	}
	return filepath.Abs(p)
}

// etcFiles are what programs in the sandbox need of the host's /etc: name
// resolution rules, certificates, time zones, the loader cache and Debian's
// alternatives (awk, editor, python links). Everything else of /etc (users,
// shadow, service configuration, env files) stays out.
var etcFiles = []string{
	"nsswitch.conf", "host.conf", "gai.conf", "protocols", "services", "networks",
	"ssl", "ca-certificates", "ca-certificates.conf", "pki", "crypto-policies",
	"localtime", "timezone", "ld.so.cache", "ld.so.conf", "ld.so.conf.d",
	"alternatives", "mime.types", "inputrc", "os-release", "debian_version", "lsb-release",
	"magic", "mailcap", "python3", "perl", "wgetrc", "curlrc",
}

// Fixed file descriptors of the bwrap child, in cmd.ExtraFiles order.
const (
	fdPasswd = 3 + iota
	fdGroup
	fdHosts
	fdResolv
	fdSeccomp // the seccomp filter (seccomp.go), read by bwrap
	fdInfo    // bwrap writes {"child-pid": N} here (network on)
	fdReady   // the sandbox's first command says here that it runs (network on)
	fdGo      // and waits for a line here before the desk's shell starts
)

// waitForNetwork runs first in a sandbox with network: bwrap has finished
// setting up the namespaces (slirp4netns attached earlier races with bwrap's
// own set-up of the loopback), and the desk's shell starts only once the
// network is configured.
var waitForNetwork = fmt.Sprintf(`echo >&%[1]d; read -r _ <&%[2]d; exec %[1]d>&- %[2]d<&-; exec "$0" "$@"`, fdReady, fdGo)

// sandboxEtc is the content of the files made for the desk.
func sandboxEtc(home string, network bool) (passwd, group, hosts, resolv string) {
	passwd = "root:x:0:0:root:/root:/usr/sbin/nologin\n" +
		fmt.Sprintf("desk:x:%d:%d:desk:%s:/bin/bash\n", DeskUID, DeskUID, home) +
		"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
	group = "root:x:0:\n" + fmt.Sprintf("desk:x:%d:\n", DeskUID) + "nogroup:x:65534:\n"
	hosts = "127.0.0.1\tlocalhost deskbot\n::1\tlocalhost ip6-localhost ip6-loopback\n"
	if network {
		resolv = "nameserver 10.0.2.3\n" // slirp4netns's resolver, which forwards to the host's
	}
	return
}

// bwrapArgs is the bubblewrap command line for a desk whose folder is dir.
// The order matters: later mounts cover earlier ones (the desk's folder may
// lie under /tmp, which is first replaced by an empty tmpfs).
func bwrapArgs(cfg Config, dir string, env []string, network bool) []string {
	a := []string{
		"--die-with-parent", // the sandbox and everything in it ends with the service
		"--new-session",     // no TIOCSTI into a terminal the service might have
		"--unshare-user", "--uid", strconv.Itoa(DeskUID), "--gid", strconv.Itoa(DeskUID),
		"--disable-userns", // no nested user namespaces: less kernel to attack
		"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--unshare-net", // its own network; slirp4netns may connect it to the outside
		"--hostname", "deskbot",
		"--cap-drop", "ALL",
		"--ro-bind", "/usr", "/usr",
	}
	// Merged-/usr systems have these as symlinks; older ones as folders.
	for _, d := range []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		if target, err := os.Readlink(d); err == nil {
			a = append(a, "--symlink", target, d)
		} else if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			a = append(a, "--ro-bind", d, d)
		}
	}
	for _, f := range etcFiles {
		a = append(a, "--ro-bind-try", "/etc/"+f, "/etc/"+f)
	}
	a = append(a,
		"--ro-bind-data", strconv.Itoa(fdPasswd), "/etc/passwd",
		"--ro-bind-data", strconv.Itoa(fdGroup), "/etc/group",
		"--ro-bind-data", strconv.Itoa(fdHosts), "/etc/hosts",
		"--ro-bind-data", strconv.Itoa(fdResolv), "/etc/resolv.conf",
		// Applied last, to the desk's first program and everything it starts.
		"--seccomp", strconv.Itoa(fdSeccomp),
		"--proc", "/proc",
		"--ro-bind", "/proc/sys", "/proc/sys",
		"--ro-bind-try", "/proc/sysrq-trigger", "/proc/sysrq-trigger",
		"--dev", "/dev",
		// bwrap's /dev is a tmpfs of half the host's memory: read-only, with
		// /dev/shm (POSIX shared memory) bounded like /tmp, or a desk could
		// keep that much memory until its sandbox ends.
		"--size", strconv.FormatInt(cfg.Limits.Tmp, 10), "--tmpfs", "/dev/shm",
		"--remount-ro", "/dev",
		"--size", strconv.FormatInt(cfg.Limits.Tmp, 10), "--tmpfs", "/tmp",
		"--bind", dir, dir,
		"--chdir", dir,
		// The skeleton bwrap made for the mount points (/, /etc, parents of
		// the desk's folder outside /tmp) would otherwise be writable scratch.
		"--remount-ro", "/",
		"--clearenv",
	)
	if network {
		a = append(a, "--info-fd", strconv.Itoa(fdInfo))
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		a = append(a, "--setenv", k, v)
	}
	return a
}

// launch is a started sandbox (or plain bash) and what must end with it.
type launch struct {
	cmd     *exec.Cmd
	slirp   *exec.Cmd // nil without network
	session bool      // mode none: cmd leads a session whose every process must end with it
}

// dataPipe returns the read end of a pipe already holding s (small enough
// for the pipe's buffer) and closed for writing.
func dataPipe(s string) (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	_, err = w.WriteString(s)
	w.Close()
	if err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// runAs makes cmd run as uid (and the gid of the same number) without
// supplementary groups; uid -1 leaves the service's own. When the service
// is root, nothing a desk runs, bwrap included, has root's rights.
func runAs(uid int, cmd *exec.Cmd) {
	if uid >= 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{}}
	}
}

// startSandbox starts bwrap running argv for the desk folder dir, with
// stdio already set on the returned command's fields by the caller through
// setIO. With network, it connects the sandbox's network namespace with
// slirp4netns before bash starts. ctx bounds the network setup only.
func startSandbox(ctx context.Context, cfg Config, bw, slirp, dir string, env, argv []string, setIO func(*exec.Cmd)) (*launch, error) {
	network := slirp != ""
	passwd, group, hosts, resolv := sandboxEtc(dir, network)
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	filter, err := seccompFilter()
	if err != nil {
		return nil, err
	}
	for _, s := range []string{passwd, group, hosts, resolv, string(filter)} {
		f, err := dataPipe(s)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}

	var ours []*os.File // infoR, readyR, goW
	if network {
		for range 3 {
			r, w, err := os.Pipe()
			if err != nil {
				for _, f := range ours {
					f.Close()
				}
				return nil, err
			}
			if len(ours) < 2 {
				ours, files = append(ours, r), append(files, w)
			} else {
				ours, files = append(ours, w), append(files, r)
			}
		}
		defer func() {
			for _, f := range ours {
				f.Close() // goW: a sandbox still waiting then ends instead
			}
		}()
		argv = append([]string{argv[0], "--noprofile", "--norc", "-c", waitForNetwork}, argv...)
	}
	args := append(bwrapArgs(cfg, dir, env, network), "--")
	cmd := exec.Command(bw, append(args, argv...)...)
	cmd.Env = env // bwrap too: its own environment is readable from inside
	cmd.Dir = "/"
	cmd.ExtraFiles = files
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	runAs(cfg.asHost(), cmd)
	if setIO != nil {
		setIO(cmd)
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	l := &launch{cmd: cmd}
	if !network {
		return l, nil
	}
	for _, f := range files[len(files)-3:] { // our copies of the child's ends
		f.Close()
	}
	files = files[:len(files)-3]
	if err := l.connect(ctx, cfg, slirp, ours[0], ours[1], ours[2]); err != nil {
		l.kill()
		return nil, err
	}
	return l, nil
}

// connect reads the sandbox's pid from bwrap, attaches slirp4netns to its
// network namespace, waits until the network is configured and lets bwrap
// go on to start bash: the desk's first command finds the network up.
func (l *launch) connect(ctx context.Context, cfg Config, slirp string, infoR, sandboxReadyR, goW *os.File) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	stop := context.AfterFunc(ctx, func() {
		infoR.SetDeadline(time.Now())
		sandboxReadyR.SetDeadline(time.Now())
	})
	defer stop()
	var info struct {
		ChildPid int `json:"child-pid"`
	}
	if err := json.NewDecoder(infoR).Decode(&info); err != nil || info.ChildPid <= 0 {
		return fmt.Errorf("bwrap did not say the sandbox's pid: %v", err)
	}
	if n, err := sandboxReadyR.Read(make([]byte, 1)); n != 1 {
		return fmt.Errorf("the sandbox did not start: %v", err)
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer readyR.Close()
	// The network namespace is owned by the user namespace bwrap made
	// first; the sandbox's processes live in a nested one (--disable-userns)
	// whose rights do not reach the network. slirp4netns is handed both by
	// descriptor (no pid to be reused in between).
	netns, err := os.Open("/proc/" + strconv.Itoa(info.ChildPid) + "/ns/net")
	if err != nil {
		readyW.Close()
		return fmt.Errorf("cannot open the sandbox's network namespace: %v", err)
	}
	defer netns.Close()
	const nsGetUserns = 0xb701 // ioctl_ns(2) NS_GET_USERNS
	ufd, _, errno := syscall.Syscall(syscall.SYS_IOCTL, netns.Fd(), nsGetUserns, 0)
	if errno != 0 {
		readyW.Close()
		return fmt.Errorf("cannot find the owner of the sandbox's network namespace: %v", errno)
	}
	userns := os.NewFile(ufd, "userns")
	defer userns.Close()
	// slirp4netns parses what the desk sends, so it gets as little as
	// possible: a seccomp filter and the rights of the namespace's owner
	// only (--userns-path). It runs as the desks' user where /dev/net/tun
	// lets it; where tun is root's only and the service is root, it runs as
	// root, and then also in an empty mount namespace without capabilities
	// (--enable-sandbox, which needs root). With host loopback disabled
	// neither 127.0.0.1 nor the gateway 10.0.2.2 leads to the host's
	// loopback.
	args := []string{"--configure", "--mtu=65520", "--disable-host-loopback", "--enable-seccomp", "--ready-fd=3",
		"--userns-path=/proc/self/fd/4", "--netns-type=path", "/proc/self/fd/5", "tap0"}
	s := exec.Command(slirp)
	s.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	s.ExtraFiles = []*os.File{readyW, userns, netns}
	s.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if fi, err := os.Stat("/dev/net/tun"); err == nil && fi.Mode().Perm()&0o006 == 0o006 {
		runAs(cfg.asHost(), s)
	}
	if os.Geteuid() == 0 && s.SysProcAttr.Credential == nil {
		args = append([]string{"--enable-sandbox"}, args...)
	}
	s.Args = append(s.Args, args...)
	var out bytes.Buffer
	s.Stdout, s.Stderr = &out, &out
	err = s.Start()
	readyW.Close()
	if err != nil {
		return fmt.Errorf("cannot start slirp4netns: %v", err)
	}
	l.slirp = s
	context.AfterFunc(ctx, func() { readyR.SetDeadline(time.Now()) })
	b := make([]byte, 1)
	if n, err := readyR.Read(b); n != 1 {
		return fmt.Errorf("slirp4netns did not configure the network: %v: %s", err, strings.TrimSpace(out.String()))
	}
	if err := fence(ctx, userns, netns); err != nil {
		return err
	}
	if _, err := goW.Write([]byte{'\n'}); err != nil {
		return fmt.Errorf("cannot let the sandbox go on: %v", err)
	}
	return nil
}

// kill ends the sandbox's process group (bwrap's death ends the PID
// namespace) and slirp4netns.
func (l *launch) kill() {
	syscall.Kill(-l.cmd.Process.Pid, syscall.SIGKILL)
	if l.session {
		killSession(l.cmd.Process.Pid)
	}
	if l.slirp != nil {
		syscall.Kill(-l.slirp.Process.Pid, syscall.SIGKILL)
		go l.slirp.Wait()
	}
}

// tryBwrap starts a throwaway sandbox with the real arguments (and, when
// slirp is not "", its network) and returns "" when it works, else why not
// (bwrap's or slirp4netns's own words, which hold no secrets).
func tryBwrap(ctx context.Context, cfg Config, slirp string) string {
	bw, err := lookBwrap(cfg)
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
	if uid := cfg.asHost(); uid >= 0 {
		if err := os.Chown(dir, uid, uid); err != nil {
			return "cannot hand the probe folder to the desks' user: " + err.Error()
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var out bytes.Buffer
	l, err := startSandbox(ctx, cfg, bw, slirp, dir, cfg.env("probe", dir),
		[]string{bash, "--noprofile", "--norc", "-c", "echo ok"},
		func(c *exec.Cmd) { c.Stdout, c.Stderr = &out, &out })
	if err == nil {
		done := make(chan error, 1)
		go func() { done <- l.cmd.Wait() }()
		select {
		case err = <-done:
		case <-ctx.Done():
			l.kill()
			err = <-done
		}
		l.kill() // slirp4netns
	}
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

// killSession kills every process of session sid, in whatever process group
// it is, until none is left (a process may fork while it is being killed).
// Only a process that made a session of its own (setsid) escapes.
func killSession(sid int) {
	for range 10 {
		found := false
		dirs, _ := os.ReadDir("/proc")
		for _, d := range dirs {
			pid, err := strconv.Atoi(d.Name())
			if err != nil {
				continue
			}
			b, err := os.ReadFile("/proc/" + d.Name() + "/stat")
			if err != nil {
				continue
			}
			// pid (comm) state ppid pgrp session ...; comm may hold anything but ')'.
			i := bytes.LastIndexByte(b, ')')
			if i < 0 {
				continue
			}
			f := strings.Fields(string(b[i+1:]))
			if len(f) > 3 && f[3] == strconv.Itoa(sid) && f[0] != "Z" {
				syscall.Kill(pid, syscall.SIGKILL)
				found = true
			}
		}
		if !found {
			return
		}
	}
}
