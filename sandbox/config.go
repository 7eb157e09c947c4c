// Package sandbox owns the desks' terminals: one long-lived bash per desk,
// isolated with bubblewrap, and the background jobs started from it. It
// gives the desks their tools bash, bash_background and check_background.
// A desk is hostile: everything here assumes the commands are written by
// someone who wants out.
//
// Delivery and concurrency: a Session runs one command at a time; commands
// from parallel tool calls wait their turn (bounded by their context) and
// run one after another. The end of a command's output is found by a marker
// line carrying a fresh random id and the exit status, so nothing a command
// prints can end it early. A command that outlives the timeout restarts the
// whole session; a bash that exits is restarted on the next command. Either
// way the session's background jobs are killed with it: in bwrap mode by
// ending the sandbox's PID namespace, in none mode by killing the shell's
// session. A background job also ends when it outlives JobTimeout.
//
// Isolation (bwrap mode): the desk runs in its own user namespace as the
// unprivileged uid/gid DeskUID (1000) with no capabilities and cannot make
// nested user namespaces. When the service runs as root, bwrap itself is
// started as HostUID (65534, nobody), so the desk is no one on the host
// either: the desk's folder is handed to HostUID, and DataDir's parents
// must be passable by it (Status.Folder says when they are not). bwrap
// starts the desk's first program under a seccomp filter (seccomp.go) that
// denies with EPERM what a terminal never needs: ptrace and other
// processes' memory, mounts, namespaces (unshare, setns, clone with
// namespace flags; clone3 answers ENOSYS so that glibc falls back to
// clone), the keyring, bpf, userfaultfd, perf_event_open, io_uring, kernel
// modules, kexec, the clock; calls of another architecture (i386, x32)
// answer ENOSYS. The system
// (/usr) is read-only; of /etc the desk sees only what programs need
// (name-service rules, certificates, time zones, the loader cache, Debian's
// alternatives) and a passwd, group, hosts and resolv.conf made for it,
// never shadow or the host's users. The desk's folder (DataDir/desks/<name>)
// is bound writable at the same path and is HOME and the working directory;
// /tmp is a private tmpfs of Limits.Tmp bytes, and so is /dev/shm, in a
// /dev that is otherwise read-only (its devices still work); the desk has its own PID,
// IPC and UTS namespaces, and /proc/sys is read-only. Nothing else of
// DataDir is visible. Rlimits set in the shell before the first command,
// hard and soft so the desk cannot raise them, bound processes (counted per
// uid per user namespace, so per desk), data memory per process, file size
// and open files. The environment is rebuilt from scratch in every mode
// (see Config.env), and bwrap itself is started with that clean environment
// because a sandboxed process can read its init's /proc/1/environ. Of the
// service's descriptors a desk holds only those passed on purpose: any the
// service inherited open is marked close-on-exec before a terminal starts.
//
// Network (bwrap mode): always a network namespace of the desk's own. With
// Network on and slirp4netns usable, slirp4netns connects it to the outside
// with host loopback disabled: the desk reaches the internet, never the
// host's loopback (Redis, /metrics, a local Bot API server), neither as
// 127.0.0.1 nor through the gateway 10.0.2.2. Before the desk's shell
// starts, the service makes the host's own addresses and the link-local
// range (a cloud's metadata service) unreachable in the desk's namespace
// (fence.go: nsenter and ip), where the desk has no right to change routes:
// a service bound to 0.0.0.0 is not reached through the host's LAN address
// either. Other machines of the host's networks are reached as from the
// host. slirp4netns runs in an empty mount namespace without capabilities and
// under seccomp, as the desks' user where /dev/net/tun allows it, else as
// the service's. Where slirp4netns, nsenter or ip is missing or cannot
// work, the desk has no network, with one warning at start.
//
// Output a command leaves running in the background with "&" (rather than
// through bash_background) is read as part of whichever command runs next.
//
// Mode none (SANDBOX=none, only when set on purpose) keeps the clean
// environment, the folder and the rlimits, but isolates nothing else: the
// desk shares the host's network, loopback included, its /tmp and its view
// of every process. Its shell leads a session of its own, and ending it
// kills every process of that session; only a process that makes a session
// of its own (setsid) survives a restart there. Even then the desk cannot
// read the service's secrets: HardenProcess makes the service non-dumpable
// (its /proc/<pid>/environ and memory belong to root). When the service
// runs as root, each desk's bash runs as a host uid of its own (from
// NoneUIDBase, kept by its folder's owner; see Manager.noneUID), never root
// nor a uid another desk has: no desk reads or writes another's folder,
// signals or traces its processes or reads their environment, and the
// process limit is per desk. What a desk makes in the shared /tmp is its
// own (umask 077). As another user, every desk runs as that user: mode none
// then keeps desks apart from nothing but the service. With SANDBOX=auto
// and no usable bwrap, desks get no terminal at all (ModeUnavailable):
// their tools say so and refuse every call, and the leader tells the team
// why and how to give them one, once a day at most
// (Manager.TellNoTerminal).
//
// Files of a desk's folder that the service reads itself (job logs and exit
// statuses) are opened through deskfs.Open: no symlink out, no
// FIFO or device, read from the checked handle.
package sandbox

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/deskfs"
)

// Modes. Config.Mode is one of the first three; a Manager runs in ModeBwrap,
// ModeNone or ModeUnavailable.
const (
	ModeAuto        = "auto"        // bwrap when it can start, else no terminal at all
	ModeBwrap       = "bwrap"       // bwrap or refuse to start
	ModeNone        = "none"        // plain bash in the desk's folder, set on purpose
	ModeUnavailable = "unavailable" // auto without a usable bwrap: desks have no terminal
)

// Defaults.
const (
	DefaultTimeout   = 120 * time.Second
	DefaultMaxOutput = 20000
	// DefaultJobTimeout is how long a background job may run: a trading
	// day, so that nothing started yesterday still runs at today's open.
	DefaultJobTimeout = 8 * time.Hour
	// JobTail is how much of a background job's log check_background shows.
	JobTail = 4000
	// DeskUID is the uid and gid of the desk inside its user namespace.
	DeskUID = 1000
	// DefaultHostUID is the host uid desks run as in bwrap mode when the
	// service is root.
	DefaultHostUID = 65534
	// DefaultNoneUIDBase is the first of the NoneUIDs host uids (and gids)
	// desks run as in mode none when the service is root, one per desk:
	// systemd's unused range above the containers' (1879048192, 0x70000000),
	// where no login user, system user, subordinate id of /etc/subuid or
	// container lives.
	DefaultNoneUIDBase = 0x70000000
	// NoneUIDs is how many desks mode none as root can run apart.
	NoneUIDs = 65536
)

// Limits bound what one desk's terminal may use. Zero fields take the
// defaults of DefaultLimits.
type Limits struct {
	Processes int   // RLIMIT_NPROC: processes and threads of the desk
	Memory    int64 // RLIMIT_DATA per process, bytes
	FileSize  int64 // RLIMIT_FSIZE, bytes: the largest file a desk can write
	OpenFiles int   // RLIMIT_NOFILE
	Tmp       int64 // size of the private /tmp, and of /dev/shm (bwrap mode), bytes
}

// DefaultLimits are generous for data work and small enough that a fork
// bomb or a runaway writer stays the desk's own problem.
var DefaultLimits = Limits{
	Processes: 512,
	Memory:    4 << 30,
	FileSize:  1 << 30,
	OpenFiles: 1024,
	Tmp:       512 << 20,
}

// Config configures the sandbox of every desk.
type Config struct {
	DataDir    string        // desk folder = DataDir/desks/<name>
	Mode       string        // ModeAuto (default), ModeBwrap or ModeNone
	Network    bool          // SANDBOX_NETWORK: outbound access through slirp4netns
	PassEnv    []string      // SANDBOX_ENV: names copied from the service's environment
	Timeout    time.Duration // per foreground command; default 120s
	JobTimeout time.Duration // SANDBOX_JOB_TIMEOUT: per background job; default 8h
	MaxOutput  int           // characters of output a command returns; default 20000
	Limits     Limits
	// HostUID is the host uid (and gid) desks run as in bwrap mode when
	// the service runs as root; default 65534. Ignored when the service is
	// not root.
	HostUID int
	// NoneUIDBase is the first of the NoneUIDs host uids desks run as, one
	// each, in mode none when the service runs as root; default
	// DefaultNoneUIDBase.
	NoneUIDBase int
	// Bwrap and Slirp4netns are the helpers' paths; "" looks them up in
	// PATH. Tests point them at missing files.
	Bwrap, Slirp4netns string
	Logger             *slog.Logger
}

func (c Config) withDefaults() (Config, error) {
	if c.Mode == "" {
		c.Mode = ModeAuto
	}
	switch c.Mode {
	case ModeAuto, ModeBwrap, ModeNone:
	default:
		return c, deskbot.Errorf(deskbot.EINVALID, "SANDBOX is auto, bwrap or none, not '%s'", c.Mode)
	}
	if c.DataDir == "" {
		return c, deskbot.Errorf(deskbot.EINVALID, "the sandbox needs a data folder (DATA_DIR)")
	}
	abs, err := filepath.Abs(c.DataDir)
	if err != nil {
		return c, deskbot.Errorf(deskbot.EINVALID, "data folder %q: %v", c.DataDir, err)
	}
	c.DataDir = abs
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.JobTimeout <= 0 {
		c.JobTimeout = DefaultJobTimeout
	}
	if c.MaxOutput <= 0 {
		c.MaxOutput = DefaultMaxOutput
	}
	l, d := &c.Limits, DefaultLimits
	if l.Processes <= 0 {
		l.Processes = d.Processes
	}
	if l.Memory <= 0 {
		l.Memory = d.Memory
	}
	if l.FileSize <= 0 {
		l.FileSize = d.FileSize
	}
	if l.OpenFiles <= 0 {
		l.OpenFiles = d.OpenFiles
	}
	if l.Tmp <= 0 {
		l.Tmp = d.Tmp
	}
	if c.HostUID <= 0 {
		c.HostUID = DefaultHostUID
	}
	if c.NoneUIDBase <= 0 {
		c.NoneUIDBase = DefaultNoneUIDBase
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

// asHost is the host uid bwrap runs as: HostUID when the service is root,
// else -1 (the service's own uid; the user namespace and HardenProcess
// protect it). In mode none as root each desk has a uid of its own
// (Manager.noneUID), which asHost only stands for where any desk's would do
// (the folder's reachability).
func (c Config) asHost() int {
	if os.Geteuid() == 0 {
		return c.HostUID
	}
	return -1
}

// DeskDir is the desk's folder on the host (and, in bwrap mode, at the same
// path inside the sandbox, so paths a desk reports are valid for the service).
func (c Config) DeskDir(desk string) string { return deskfs.Dir(c.DataDir, desk) }

// env is the whole environment a desk's shell gets, in every mode: nothing
// of the service's own (bot token, API keys, REDIS_URL) unless named in
// PassEnv.
func (c Config) env(desk, home string) []string {
	path := os.Getenv("PATH")
	if path == "" {
		path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	}
	lang := os.Getenv("LANG")
	if lang == "" {
		lang = "C.UTF-8"
	}
	env := []string{"PATH=" + path, "HOME=" + home, "LANG=" + lang, "TZ=Asia/Kolkata", "DESK=" + desk}
	for _, name := range c.PassEnv {
		switch name {
		case "PATH", "HOME", "LANG", "TZ", "DESK":
			continue // fixed above; SANDBOX_ENV cannot move HOME out of the desk's folder
		}
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		}
	}
	return env
}

// Status is what the sandbox gives desks on this machine.
type Status struct {
	Mode   string // ModeBwrap, ModeNone or ModeUnavailable
	Reason string // why bwrap is unusable ("" when it works or was not asked for)
	// Network is true when desks get outbound access; NetworkReason says
	// why not when Config.Network asked for it (the package to install).
	Network       bool
	NetworkReason string
	// Folder says why desks cannot reach their folders ("" when they can):
	// as root they run as HostUID, which must pass through DataDir's parents.
	Folder string
}

// Fix is what to do when desks have no terminal.
const Fix = "install bubblewrap (Debian package bubblewrap) and make sure it can create user namespaces, or set SANDBOX=none on purpose to run desks in plain bash"

// NoNetworkHelper says why Network is off although asked for.
const NoNetworkHelper = "slirp4netns is not installed (Debian package slirp4netns), so desks have no network; install it to give them outbound access without the host's loopback"

// Probe says what the sandbox will give desks here. It fails only when Mode
// is ModeBwrap and bwrap cannot start a sandbox here.
func Probe(ctx context.Context, cfg Config) (Status, error) {
	if cfg.DataDir == "" {
		cfg.DataDir = os.TempDir() // the probe makes its own folder
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return Status{}, err
	}
	return probe(ctx, cfg)
}

func probe(ctx context.Context, cfg Config) (Status, error) {
	if _, err := bashPath(); err != nil {
		return Status{}, err
	}
	var folder string
	if uid := cfg.asHost(); uid >= 0 {
		folder = reachable(cfg.DataDir, uid)
	}
	if cfg.Mode == ModeNone {
		// Plain bash shares the host's network: nothing to give, nothing to take.
		return Status{Mode: ModeNone, Network: cfg.Network, Folder: folder}, nil
	}
	st := Status{Mode: ModeBwrap, Folder: folder}
	if reason := tryBwrap(ctx, cfg, ""); reason != "" {
		if cfg.Mode == ModeBwrap {
			return Status{}, deskbot.Errorf(deskbot.EUNAVAILABLE, "SANDBOX=bwrap but bubblewrap cannot start a sandbox: %s", reason)
		}
		return Status{Mode: ModeUnavailable, Reason: reason}, nil
	}
	if cfg.Network {
		if slirp, err := lookSlirp(cfg); err != nil {
			st.NetworkReason = NoNetworkHelper
		} else if reason := tryBwrap(ctx, cfg, slirp); reason != "" {
			// E.g. /dev/net/tun missing in a container, or root's only.
			st.NetworkReason = "slirp4netns cannot give desks a network here (" + reason + "), so they have none"
		} else {
			st.Network = true
		}
	}
	return st, nil
}
