// Package claudecode is a desk backend that runs the Claude Code CLI
// headless (claude -p, stream-json output) as the desk's brain, with the
// desk's own tools as its only tools.
//
// A turn (agent.TurnBackend) opens the desk's tools on the MCP server
// (package mcpserve) with a fresh bearer token, and runs the CLI with that
// server as its only MCP server (--strict-mcp-config), its built-in tools
// off (--tools ""), the desk's MCP tools allowed by name, and --resume with
// the desk's Claude session id, kept in a note per desk so the desk keeps
// its conversation across turns and restarts. Every tools/call reaches the
// agent's ToolCallExecutor through the turn's Call, so a Claude Code desk
// gets the same events, loop guard, gate, argument checks and completed-call
// memory as the agent loop. A held call's answer is the gate's hold text,
// word for word, which tells the model to end its turn; the allowed call's
// result comes back later as a new trigger in the same session.
//
// The CLI runs on the host, outside any sandbox, so what it may read is
// fixed here: a clean environment (PATH, a HOME of its own under the
// service's state directory, the API key, switches that turn off updates
// and telemetry; never the bot token, the Redis URL or another variable of
// the service), the desk's folder as working directory, no settings from
// that folder or the machine (--bare: no hooks, no CLAUDE.md discovery, no
// keychain; --setting-sources user, with the private HOME).
// It is stopped (its whole process group) when the backend's timeout
// passes and when the service stops.
//
// The stream's final result text is the desk's message. A crash, an exit
// without a result, an error result (a limit such as max turns, an API
// error) and the timeout are EUNAVAILABLE failures: the next backend of the
// chain takes the turn over without repeating completed calls.
//
// Concurrency: a Backend serves one desk, whose turns run one at a time.
package claudecode

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/agent"
	"github.com/deskbot/deskbot/argtext"
	"github.com/deskbot/deskbot/mcpserve"
)

// DefaultBin is the CLI run when Config.Bin is empty.
const DefaultBin = "claude"

// maxLine bounds one line of the CLI's stream (a tool result it echoes can
// be long); maxResult the desk's final message taken from it.
const (
	maxLine   = 8 << 20
	maxResult = 64 << 10
)

// Config is one desk's Claude Code backend.
type Config struct {
	Name    string        // label in chat and logs; default "claude-code:<model>"
	Bin     string        // the CLI; default DefaultBin
	Model   string        // --model; "" leaves the CLI's default
	APIKey  string        // given to the CLI as ANTHROPIC_API_KEY
	BaseURL string        // given to the CLI as ANTHROPIC_BASE_URL when set
	Timeout time.Duration // bound of one turn's run; required
	Desk    string
	Dir     string // the desk's folder: the CLI's working directory
	// StateDir is the backend's own directory, never inside a desk's
	// folder: the CLI's HOME (its sessions and settings) and the turn's
	// MCP config live there.
	StateDir string
	MCP      *mcpserve.Server
	Sessions deskbot.Notes // where the desk's Claude session id is kept
	Log      *slog.Logger
}

// Backend runs turns on the Claude Code CLI.
type Backend struct {
	c Config
}

// New checks c and returns its backend.
func New(c Config) (*Backend, error) {
	c.Bin = cmp.Or(c.Bin, DefaultBin)
	c.Name = cmp.Or(c.Name, agent.ClaudeCode+":"+cmp.Or(c.Model, "default"))
	switch {
	case c.MCP == nil || c.Sessions == nil:
		return nil, deskbot.Errorf(deskbot.EINVALID, "Model backend %s: no MCP server or no store", c.Name)
	case c.Timeout <= 0:
		return nil, deskbot.Errorf(deskbot.EINVALID, "Model backend %s: needs a positive timeout", c.Name)
	case c.Dir == "" || c.StateDir == "":
		return nil, deskbot.Errorf(deskbot.EINVALID, "Model backend %s: needs the desk's folder and a state directory", c.Name)
	}
	if err := deskbot.ValidDeskName(c.Desk); err != nil {
		return nil, err
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	return &Backend{c: c}, nil
}

// Name labels the backend.
func (b *Backend) Name() string { return b.c.Name }

// Complete is not how this backend works: a desk calls RunTurn.
func (b *Backend) Complete(context.Context, deskbot.ModelRequest) (deskbot.ModelReply, error) {
	return deskbot.ModelReply{}, deskbot.Errorf(deskbot.EUNAVAILABLE, "%s runs whole turns only", b.c.Name)
}

// event is the part of a stream-json line the backend reads.
type event struct {
	Type      string `json:"type"`
	Subtype   string `json:"subtype"`
	SessionID string `json:"session_id"`
	Result    string `json:"result"`
	IsError   bool   `json:"is_error"`
	NumTurns  int    `json:"num_turns"`
	// Usage is the whole run's, as the CLI reports it: the cached input
	// it read and wrote counts as input.
	Usage struct {
		Input       int64 `json:"input_tokens"`
		Output      int64 `json:"output_tokens"`
		CacheRead   int64 `json:"cache_read_input_tokens"`
		CacheCreate int64 `json:"cache_creation_input_tokens"`
	} `json:"usage"`
}

// usage is the run's tokens as the desk counts them.
func (e *event) usage() deskbot.Usage {
	if e == nil {
		return deskbot.Usage{}
	}
	return deskbot.Usage{InputTokens: e.Usage.Input + e.Usage.CacheRead + e.Usage.CacheCreate, OutputTokens: e.Usage.Output}
}

// RunTurn runs one turn of the desk on the CLI.
func (b *Backend) RunTurn(ctx context.Context, req agent.TurnRequest) (deskbot.ModelReply, error) {
	c := b.c
	log := c.Log.With("backend", c.Name, "trigger", req.TriggerID)
	session, err := c.Sessions.Note(ctx, sessionKey(c.Desk))
	if err != nil && deskbot.ErrorCode(err) != deskbot.ENOTFOUND {
		return deskbot.ModelReply{}, deskbot.Errorf(deskbot.EUNAVAILABLE, "%s: cannot read the desk's session: %s", c.Name, deskbot.ErrorMessage(err))
	}
	turn, err := c.MCP.Open(c.Desk, req.Tools, req.Call)
	if err != nil {
		return deskbot.ModelReply{}, err
	}
	defer turn.Close()

	home := filepath.Join(c.StateDir, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return deskbot.ModelReply{}, deskbot.Errorf(deskbot.EUNAVAILABLE, "%s: %v", c.Name, err)
	}
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return deskbot.ModelReply{}, deskbot.Errorf(deskbot.EUNAVAILABLE, "%s: %v", c.Name, err)
	}
	cfgFile, err := writeMCPConfig(c.StateDir, turn)
	if err != nil {
		return deskbot.ModelReply{}, deskbot.Errorf(deskbot.EUNAVAILABLE, "%s: cannot write the MCP config: %v", c.Name, err)
	}
	defer os.Remove(cfgFile)

	args := b.args(req, cfgFile, session)
	rctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	cmd := exec.CommandContext(rctx, c.Bin, args...)
	cmd.Dir = c.Dir
	cmd.Env = b.env(home)
	cmd.Stdin = strings.NewReader(prompt(req))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// The CLI's children (node, anything it starts) go with it.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stderr tailBuffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return deskbot.ModelReply{}, deskbot.Errorf(deskbot.EUNAVAILABLE, "%s: %v", c.Name, err)
	}
	if err := cmd.Start(); err != nil {
		return deskbot.ModelReply{}, deskbot.Errorf(deskbot.EUNAVAILABLE, "%s: cannot start %s: %v", c.Name, c.Bin, err)
	}
	started, final, streamErr := b.read(ctx, log, out)
	waitErr := cmd.Wait()

	if session != "" && !started && rctx.Err() == nil {
		// The CLI gave up before its session started: most likely the
		// session is gone (another machine, a wiped HOME). The next turn
		// starts a new conversation rather than failing the same way.
		if err := c.Sessions.DeleteNote(context.WithoutCancel(ctx), sessionKey(c.Desk)); err != nil {
			log.WarnContext(ctx, "could not forget the desk's session", "err", err)
		}
	}
	switch {
	case ctx.Err() != nil:
		return deskbot.ModelReply{}, fmt.Errorf("%s: %w", c.Name, ctx.Err())
	case rctx.Err() != nil:
		return deskbot.ModelReply{}, deskbot.Errorf(deskbot.EUNAVAILABLE, "%s: no answer within %s", c.Name, c.Timeout)
	case final != nil && final.Subtype == "success" && !final.IsError:
		if waitErr != nil {
			log.WarnContext(ctx, "Claude Code exited with an error after its result", "err", waitErr)
		}
		return deskbot.ModelReply{Text: argtext.Clip(final.Result, maxResult, "…"), Usage: final.usage()}, nil
	case final != nil:
		return deskbot.ModelReply{Usage: final.usage()}, deskbot.Errorf(deskbot.EUNAVAILABLE, "%s: %s after %d turns: %s", c.Name, cmp.Or(final.Subtype, "error"), final.NumTurns, b.redact(final.Result, turn.Token))
	}
	why := cmp.Or(b.redact(stderr.String(), turn.Token), "no output")
	if streamErr != nil {
		why = streamErr.Error() + "; " + why
	}
	return deskbot.ModelReply{}, deskbot.Errorf(deskbot.EUNAVAILABLE, "%s: ended without a result (%v): %s", c.Name, waitErr, why)
}

// read follows the stream until it ends: it keeps the session id as soon
// as the CLI names it (a turn cut short still resumes its conversation)
// and returns the result message, if any.
func (b *Backend) read(ctx context.Context, log *slog.Logger, out io.Reader) (started bool, final *event, err error) {
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	saved := ""
	for sc.Scan() {
		var ev event
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue // not ours to judge; the result decides
		}
		// Only the init message starts a session: the CLI echoes a
		// --resume id it does not know in its error result.
		if ev.Type == "system" && ev.Subtype == "init" && ev.SessionID != "" && ev.SessionID != saved {
			started, saved = true, ev.SessionID
			if err := b.c.Sessions.PutNote(context.WithoutCancel(ctx), sessionKey(b.c.Desk), ev.SessionID, sessionTTL); err != nil {
				log.WarnContext(ctx, "could not keep the desk's Claude session", "err", err)
			}
		}
		if ev.Type == "result" {
			final = &ev
		}
	}
	if err := sc.Err(); err != nil {
		// Drain so the CLI is not blocked writing; the result is lost.
		_, _ = io.Copy(io.Discard, out)
		return started, final, fmt.Errorf("unreadable output: %v", err)
	}
	return started, final, nil
}

// args is the CLI's command line. The prompt goes on stdin.
func (b *Backend) args(req agent.TurnRequest, mcpConfig, session string) []string {
	allowed := make([]string, len(req.Tools))
	for i, t := range req.Tools {
		allowed[i] = ToolName(t.Name)
	}
	args := []string{
		"-p", "--output-format", "stream-json", "--verbose",
		"--max-turns", strconv.Itoa(max(req.MaxSteps, 1)),
		"--append-system-prompt", req.System,
		"--strict-mcp-config", "--mcp-config", mcpConfig,
		"--tools", "",
		"--allowedTools", strings.Join(allowed, ","),
		// Nothing from the desk's folder or the machine: no hooks, no
		// CLAUDE.md discovery, no keychain, the API key only.
		"--bare",
		"--setting-sources", "user",
		"--settings", `{"disableAllHooks":true}`,
		// The system prompt carries the time: rendered afresh each turn,
		// not recorded with the session.
		"--system-prompt-snapshot", "off",
	}
	if b.c.Model != "" {
		args = append(args, "--model", b.c.Model)
	}
	if session != "" {
		args = append(args, "--resume", session)
	}
	return args
}

// ToolName is the name Claude Code gives a desk's tool served by mcpserve.
func ToolName(tool string) string { return "mcp__" + mcpserve.ServerName + "__" + tool }

// env is the CLI's whole environment: nothing of the service's own.
func (b *Backend) env(home string) []string {
	env := []string{
		"HOME=" + home,
		"PATH=" + cmp.Or(os.Getenv("PATH"), "/usr/local/bin:/usr/bin:/bin"),
		"LANG=C.UTF-8",
		"ENABLE_TOOL_SEARCH=false",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		// A provider that is down fails over to the next backend soon,
		// rather than after the CLI's ten retries.
		"CLAUDE_CODE_MAX_RETRIES=2",
		"MCP_TOOL_TIMEOUT=" + strconv.FormatInt(b.c.Timeout.Milliseconds(), 10),
	}
	if b.c.APIKey != "" {
		env = append(env, "ANTHROPIC_API_KEY="+b.c.APIKey)
	}
	if b.c.BaseURL != "" {
		env = append(env, "ANTHROPIC_BASE_URL="+b.c.BaseURL)
	}
	return env
}

// prompt is what the CLI is told this turn: the trigger, and the calls
// already made for it by an earlier backend or attempt.
func prompt(req agent.TurnRequest) string {
	var sb strings.Builder
	if strings.HasPrefix(strings.TrimSpace(req.Trigger), "/") {
		// The CLI reads a prompt that starts with a slash as one of its
		// own commands; a trigger is always words for the model.
		sb.WriteString("Message:\n")
	}
	sb.WriteString(req.Trigger)
	if len(req.Completed) > 0 {
		sb.WriteString("\n\nCalls already made for this message (their results stand; do not make them again):")
		for _, c := range req.Completed {
			fmt.Fprintf(&sb, "\n- %s %s → %s", c.Call.Name, argtext.Clip(string(c.Call.Arguments), 500, "…"), argtext.Clip(c.Result.Text, 2000, "…"))
		}
	}
	return sb.String()
}

// mcpConfig is the --mcp-config file: the one server, with the turn's
// token.
type mcpConfig struct {
	MCPServers map[string]mcpServer `json:"mcpServers"`
}

type mcpServer struct {
	Type    string            `json:"type"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
}

// writeMCPConfig writes the config to a file only the service can read
// (in its state directory, never on the command line, which any process
// may read).
func writeMCPConfig(dir string, t *mcpserve.Turn) (string, error) {
	b, err := json.Marshal(mcpConfig{MCPServers: map[string]mcpServer{
		mcpserve.ServerName: {Type: "http", URL: t.URL, Headers: map[string]string{"Authorization": "Bearer " + t.Token}},
	}})
	if err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, "mcp-*.json")
	if err != nil {
		return "", err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), f.Close()
}

// redact shortens what the CLI said and removes the key and the token.
func (b *Backend) redact(s, token string) string {
	for _, secret := range []string{b.c.APIKey, token} {
		if secret != "" {
			s = strings.ReplaceAll(s, secret, "[redacted]")
		}
	}
	return argtext.Clip(strings.Join(strings.Fields(s), " "), 300, "…")
}

// tailBuffer keeps the last 4 KiB written to it (the CLI's stderr).
type tailBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b.Write(p)
	if over := t.b.Len() - 4096; over > 0 {
		t.b.Next(over)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.b.String()
}

// Version runs bin --version (for deskbot check).
func Version(ctx context.Context, bin string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, cmp.Or(bin, DefaultBin), "--version")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(), "DISABLE_AUTOUPDATER=1"}
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("%s --version: %v: %s", bin, err, argtext.Clip(strings.TrimSpace(string(ee.Stderr)), 200, "…"))
		}
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}
