// Package sandbox owns the desks' terminals: one long-lived bash per desk,
// isolated with bubblewrap where it can start, and the background jobs
// started from it. It gives the desks their tools bash, bash_background and
// check_background.
//
// Delivery and concurrency: a Session runs one command at a time; commands
// from parallel tool calls wait their turn (bounded by their context) and
// run one after another. The end of a
// command's output is found by a marker line carrying a fresh random id and
// the exit status, so nothing a command prints can end it early. A command
// that outlives the timeout restarts the whole session; a bash that exits is
// restarted on the next command. Either way the session's background jobs
// are killed with it: in bwrap mode by ending the sandbox's PID namespace, in
// fallback mode by killing the shell's process group.
//
// Isolation (bwrap mode): the system is read-only, the desk's folder
// (DataDir/desks/<name>) is bound writable at the same path and is HOME and
// the working directory, /tmp is private, the desk has its own PID, IPC and
// UTS namespaces, no capabilities even when the service runs as root, and
// /proc/sys is read-only. Nothing else of DataDir is visible. The
// environment is rebuilt from scratch in every mode (see Config.env), and
// bwrap itself is started with that clean environment because a sandboxed
// process can read its init's /proc/1/environ.
//
// Output a command leaves running in the background with "&" (rather than
// through bash_background) is read as part of whichever command runs next.
//
// Fallback mode (no usable bwrap) keeps the clean environment and the
// folder but isolates nothing, and a process that leaves the shell's process
// group (setsid) survives a restart there.
//
// With Network on, the desk shares the host's network namespace, so anything
// listening on localhost (Redis included) is reachable: protect Redis with a
// password or turn SANDBOX_NETWORK off.
package sandbox

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"time"

	"github.com/deskbot/deskbot"
)

// Modes.
const (
	ModeAuto  = "auto"  // bwrap when it can start, else plain bash with one warning
	ModeBwrap = "bwrap" // bwrap or refuse to start
	ModeNone  = "none"  // plain bash in the desk's folder, clean environment only
)

// Defaults from the issue.
const (
	DefaultTimeout   = 120 * time.Second
	DefaultMaxOutput = 20000
	// JobTail is how much of a background job's log check_background shows.
	JobTail = 4000
)

// Config configures the sandbox of every desk.
type Config struct {
	DataDir   string        // desk folder = DataDir/desks/<name>
	Mode      string        // ModeAuto (default), ModeBwrap or ModeNone
	Network   bool          // SANDBOX_NETWORK; false unshares the network
	PassEnv   []string      // SANDBOX_ENV: names copied from the service's environment
	Timeout   time.Duration // per foreground command; default 120s
	MaxOutput int           // characters of output a command returns; default 20000
	Logger    *slog.Logger
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
	if c.MaxOutput <= 0 {
		c.MaxOutput = DefaultMaxOutput
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}

var deskName = regexp.MustCompile(`^[a-z0-9_-]{1,32}$`)

// ValidDesk checks a desk name; names become folder names, so nothing that
// could climb out of DataDir/desks passes.
func ValidDesk(name string) error {
	if !deskName.MatchString(name) {
		return deskbot.Errorf(deskbot.EINVALID, "a desk name is 1 to 32 of a-z, 0-9, _ and -, not '%s'", name)
	}
	return nil
}

// DeskDir is the desk's folder on the host (and, in bwrap mode, at the same
// path inside the sandbox, so paths a desk reports are valid for the service).
func (c Config) DeskDir(desk string) string { return filepath.Join(c.DataDir, "desks", desk) }

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

// Probe says which mode the sandbox will run in: ModeBwrap or ModeNone. It
// fails only when Mode is ModeBwrap and bwrap cannot start a sandbox here.
func Probe(ctx context.Context, cfg Config) (mode string, err error) {
	if cfg.DataDir == "" {
		cfg.DataDir = os.TempDir() // the probe makes its own folder
	}
	cfg, err = cfg.withDefaults()
	if err != nil {
		return "", err
	}
	mode, _, err = probe(ctx, cfg)
	return mode, err
}

// probe also returns why bwrap is unusable, for the one warning.
func probe(ctx context.Context, cfg Config) (mode, reason string, err error) {
	if _, err := bashPath(); err != nil {
		return "", "", err
	}
	if cfg.Mode == ModeNone {
		return ModeNone, "", nil
	}
	reason = tryBwrap(ctx, cfg)
	if reason == "" {
		return ModeBwrap, "", nil
	}
	if cfg.Mode == ModeBwrap {
		return "", reason, deskbot.Errorf(deskbot.EUNAVAILABLE, "SANDBOX=bwrap but bubblewrap cannot start a sandbox: %s", reason)
	}
	return ModeNone, reason, nil
}
