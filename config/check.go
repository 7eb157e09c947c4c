package config

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/agent"
	"github.com/deskbot/deskbot/argtext"
	"github.com/deskbot/deskbot/claudecode"
	"github.com/deskbot/deskbot/model"
	"github.com/deskbot/deskbot/sandbox"
	"github.com/deskbot/deskbot/store"
	"github.com/deskbot/deskbot/words"
)

// `deskbot check` reads the configuration and probes what the service
// needs without starting it: nothing is polled, no message is sent, no
// desk runs. Each line is ok, warn (it would start, but look at this) or
// FAIL. Exit status 0 means every line is ok or warn.

const (
	statusOK   = "ok"
	statusWarn = "warn"
	statusFail = "FAIL"
)

type checkLine struct{ what, status, detail string }

type checker struct {
	lines []checkLine
}

// add records a line. Its detail may quote what others answered (a model
// provider's list of models, Redis's or Telegram's words), printed on the
// operator's terminal: control and format characters, newlines and tabs
// included, are shown escaped, so no answer can move the cursor, set the
// clipboard or forge a line.
func (c *checker) add(what, status, format string, args ...any) {
	detail := argtext.Show(fmt.Sprintf(format, args...))
	c.lines = append(c.lines, checkLine{what, status, strings.NewReplacer("\n", `\n`, "\t", `\t`).Replace(detail)})
}

func (c *checker) failed() bool {
	for _, l := range c.lines {
		if l.status == statusFail {
			return true
		}
	}
	return false
}

func (c *checker) print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tSTATUS\tDETAIL")
	for _, l := range c.lines {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", l.what, l.status, l.detail)
	}
	tw.Flush()
	if c.failed() {
		fmt.Fprintln(w, "deskbot would not start (or would not work): fix the FAIL lines.")
	} else {
		fmt.Fprintln(w, "deskbot would start.")
	}
}

// RunCheck is `deskbot check`: it prints the table to w and returns the exit status.
// envFile is the .env it read ("" when there was none): the first line
// names it, so nobody wonders which values were checked.
func RunCheck(ctx context.Context, envFile string, environ map[string]string, w io.Writer) int {
	c := &checker{}
	if envFile != "" {
		c.add("env file", statusOK, "read %s (a variable set in the environment wins over it)", envFile)
	} else {
		wd, _ := os.Getwd()
		c.add("env file", statusOK, "no .env in %s: the environment only", wd)
	}
	cfg, err := Load(environ)
	if err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			name, why, _ := strings.Cut(line, ": ")
			c.add(name, statusFail, "%s", why)
		}
		c.print(w)
		return 1
	}
	c.add("configuration", statusOK, "every variable valid")
	c.dataDir(cfg)
	c.httpAddr(cfg)
	c.redis(ctx, cfg)
	c.telegram(ctx, cfg)
	c.kite(ctx, cfg)
	c.models(ctx, cfg)
	c.sandbox(ctx, cfg)
	c.print(w)
	if c.failed() {
		return 1
	}
	return 0
}

func (c *checker) dataDir(cfg Config) {
	// The service creates DATA_DIR; the check only looks, so it tries the
	// nearest folder that exists.
	dir := cfg.DataDir
	for {
		if _, err := os.Stat(dir); err == nil || filepath.Dir(dir) == dir {
			break
		}
		dir = filepath.Dir(dir)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		c.add("DATA_DIR", statusFail, "cannot create %s: %s is not a folder", cfg.DataDir, dir)
		return
	}
	f, err := os.CreateTemp(dir, ".deskbot-check-*")
	if err != nil {
		c.add("DATA_DIR", statusFail, "cannot create %s: %s is not writable", cfg.DataDir, dir)
		return
	}
	f.Close()
	os.Remove(f.Name())
	abs, _ := filepath.Abs(cfg.DataDir)
	if dir != cfg.DataDir {
		// Before the first start: the start makes it in dir, which it may.
		parent, _ := filepath.Abs(dir)
		c.add("DATA_DIR", statusOK, "%s does not exist yet: the start creates it (%s is writable)", abs, parent)
		return
	}
	c.add("DATA_DIR", statusOK, "%s writable", abs)
}

func (c *checker) httpAddr(cfg Config) {
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		c.add("HTTP_ADDR", statusFail, "cannot listen on %s (in use, or not an address of this machine)", cfg.HTTPAddr)
		return
	}
	ln.Close()
	c.add("HTTP_ADDR", statusOK, "%s free for /healthz and /metrics", cfg.HTTPAddr)
}

func (c *checker) redis(ctx context.Context, cfg Config) {
	if !cfg.redisNamed() {
		c.add("redis", statusWarn, "REDIS_URL not set: in-memory Redis; requests, grants and the audit trail are lost at every restart")
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	s, err := store.Open(ctx, cfg.StoreOptions())
	if err != nil {
		// The message never carries the URL (it may hold the password).
		c.add("redis", statusFail, "unreachable: %s", deskbot.ErrorMessage(err))
		return
	}
	defer s.Close()
	aof, rdb, err := s.Persistence(ctx)
	switch {
	case err != nil:
		c.add("redis", statusWarn, "reachable; persistence unknown (CONFIG GET refused)")
	case aof:
		c.add("redis", statusOK, "reachable, append-only file on")
	case rdb:
		c.add("redis", statusWarn, "reachable, RDB snapshots only: a crash loses the last minutes of decisions (set appendonly yes)")
	default:
		c.add("redis", statusWarn, "reachable but persists nothing: a Redis restart loses every request (set appendonly yes)")
	}
	if cfg.SandboxNetwork {
		if auth, err := s.RequiresAuth(ctx); err == nil && !auth {
			c.add("redis auth", statusWarn, "Redis needs no password and SANDBOX_NETWORK is on: a desk's commands could write to Redis (set requirepass and give it as REDIS_PASSWORD)")
		}
	}
}

func (c *checker) sandbox(ctx context.Context, cfg Config) {
	st, err := sandbox.Probe(ctx, sandbox.Config{DataDir: cfg.DataDir, Mode: cfg.Sandbox, Network: cfg.SandboxNetwork})
	switch {
	case err != nil:
		c.add("sandbox", statusFail, "%s", deskbot.ErrorMessage(err))
		return
	case st.Folder != "":
		c.add("sandbox", statusFail, "%s", st.Folder)
	case st.Mode == sandbox.ModeBwrap:
		c.add("sandbox", statusOK, "bubblewrap usable: desks run as an unprivileged user in their own namespaces")
	case st.Mode == sandbox.ModeNone:
		c.add("sandbox", statusWarn, "SANDBOX=none: desks' commands run as plain bash, isolated by nothing but their user")
	default:
		c.add("sandbox", statusFail, "desks have NO terminal: bubblewrap cannot start here (%s); %s", st.Reason, sandbox.Fix)
	}
	switch {
	case st.Mode == sandbox.ModeUnavailable:
	case !cfg.SandboxNetwork:
		c.add("network", statusOK, "desks have no network (SANDBOX_NETWORK=false)")
	case st.Mode == sandbox.ModeNone:
		c.add("network", statusWarn, "SANDBOX=none: desks share the host's network and reach its loopback (Redis, /metrics)")
	case st.Network:
		c.add("network", statusOK, "slirp4netns: desks reach the outside but not the host's loopback")
	default:
		c.add("network", statusWarn, "%s", st.NetworkReason)
	}
}

func (c *checker) models(ctx context.Context, cfg Config) {
	desks, err := loadCheckedDesks(cfg)
	if err != nil {
		c.add("desks", statusFail, "%s", deskbot.ErrorMessage(err))
		return
	}
	c.policies(cfg, desks)
	seen := map[string]bool{}
	for _, d := range desks {
		for _, mc := range d.Models {
			key := mc.Provider + " " + mc.BaseURL + " " + mc.Model
			if seen[key] {
				continue
			}
			seen[key] = true
			if mc.Provider == agent.ClaudeCode {
				c.claudeCode(ctx, cfg, mc)
				continue
			}
			status, detail := probeModel(ctx, mc)
			c.add("model "+modelLabel(mc), status, "%s", detail)
		}
	}
}

// loadCheckedDesks reads the desks (DESKS, or DESKS_FILE with its keys'
// variables) as the start does, and refuses a tool that does not exist.
func loadCheckedDesks(cfg Config) ([]agent.DeskConfig, error) {
	desks, err := agent.LoadDesks(cfg.Desks, cfg.DesksFile, []model.Config{cfg.DefaultModel()})
	if err != nil {
		return nil, err
	}
	if err := deskToolsExist(desks); err != nil {
		return nil, err
	}
	return desks, nil
}

// deskToolsExist refuses a desk whose tools list names a tool that does
// not exist, as the start does when it builds the desks' tools: check
// must not say ok to a file the service refuses.
func deskToolsExist(desks []agent.DeskConfig) error {
	known := KnownTools()
	for _, d := range desks {
		for _, name := range d.Tools {
			if !slices.Contains(known, name) {
				return deskbot.Errorf(deskbot.EINVALID, "desk %q lists tool %q, which does not exist (tools are %s)", d.Name, name, strings.Join(known, ", "))
			}
		}
	}
	return nil
}

// claudeCode runs the CLI's version check, as the start does: the API
// cannot be probed without spending a turn.
func (c *checker) claudeCode(ctx context.Context, cfg Config, mc model.Config) {
	v, err := claudecode.CheckVersion(ctx, cfg.ClaudeBin)
	if err != nil {
		c.add("model "+modelLabel(mc), statusFail, "CLAUDE_BIN=%s: %s", cfg.ClaudeBin, deskbot.ErrorMessage(err))
		return
	}
	c.add("model "+modelLabel(mc), statusOK, "Claude Code %s (CLAUDE_BIN=%s; %s or newer needed); its API is not probed", v, cfg.ClaudeBin, claudecode.MinVersion)
}

// policies checks the desks' approval policies against APPROVAL_TOOLS and
// the approvers, and says each in words: a mistake there must stop the
// start, never unguard a tool.
func (c *checker) policies(cfg Config, desks []agent.DeskConfig) {
	if err := CheckPolicies(desks, cfg.ApprovalTools, cfg.TelegramApprovers); err != nil {
		c.add("policy", statusFail, "%s", deskbot.ErrorMessage(err))
		return
	}
	for _, d := range desks {
		var lines []string
		for _, tool := range cfg.ApprovalTools {
			_, ok := d.Policy[tool]
			_, orders := d.Policy[deskbot.ToolPlaceOrder]
			switch {
			case ok:
			case tool == deskbot.ToolModifyOrder && orders:
				// Held, limited and approved as the order it becomes.
				lines = append(lines, tool+": "+deskbot.ToolPlaceOrder+"'s policy, for the order it becomes")
			default:
				lines = append(lines, tool+": 1 approver when held")
			}
		}
		for _, tool := range slices.Sorted(maps.Keys(d.Policy)) {
			lines = append(lines, words.Policy(tool, d.Policy[tool]))
		}
		c.add("policy "+d.Name, statusOK, "%s", strings.Join(lines, "; "))
		if rules := words.RiskRules(d.Risk); len(rules) > 0 {
			c.add("risk "+d.Name, statusOK, "%s", strings.Join(rules, "; "))
		}
	}
}
