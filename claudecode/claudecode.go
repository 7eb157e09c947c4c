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
// error; its errors are the failure's words) and the timeout are
// EUNAVAILABLE failures: the next backend of the chain takes the turn over
// without repeating completed calls. So is a run whose init line shows the
// link to the desk's tools down (deskbot's MCP server not connected, or
// none of the desk's tools offered): the CLI is stopped there, since it
// would answer anyway, without tools, and nothing it said is posted.
//
// The CLI must be MinVersion or newer (CheckVersion; deskbot check and the
// start refuse an older one): older ones refuse a flag given here, or were
// seen losing the session's first prompt on --resume.
//
// The service builds its Claude Code desks through Desks: their folders
// and state under DATA_DIR, and one MCP server for them all.
//
// Concurrency: a Backend serves one desk, whose turns run one at a time.
package claudecode

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
	// Errors is why an error result ended the run; its result is empty.
	Errors []string `json:"errors"`
	// MCPServers and Tools are the init line's: the servers the CLI
	// tried, each with its status ("connected", "failed", …), and the
	// tools it offers the model.
	MCPServers []struct {
		Name   string `json:"name"`
		Status string `json:"status"`
	} `json:"mcp_servers"`
	Tools []string `json:"tools"`
	// Usage is the whole run's, as the CLI reports it: the cached input
	// it read and wrote counts as input.
	Usage struct {
		Input       int64 `json:"input_tokens"`
		Output      int64 `json:"output_tokens"`
		CacheRead   int64 `json:"cache_read_input_tokens"`
		CacheCreate int64 `json:"cache_creation_input_tokens"`
	} `json:"usage"`
}

// why is the reason an error result gives: its errors, else its result
// text (an API error's words).
func (e *event) why() string {
	if len(e.Errors) > 0 {
		return strings.Join(e.Errors, "; ")
	}
	return e.Result
}

// linkProblem says what is wrong with an init line's link to the desk's
// tools: deskbot's MCP server missing or not connected (a refused token),
// or none of the desk's tools (named as the CLI names them) offered. ""
// when the link is up. A turn without it cannot act, and the CLI would
// still answer, without tools, as if it had.
func linkProblem(init *event, tools []string) string {
	found, status := false, ""
	for _, s := range init.MCPServers {
		if s.Name == mcpserve.ServerName {
			found, status = true, s.Status
		}
	}
	switch {
	case !found:
		return "deskbot's MCP server is not among the CLI's"
	case status == "":
		return "deskbot's MCP server has no status"
	case status != "connected":
		return "deskbot's MCP server has status " + argtext.Clip(status, 40, "…")
	case len(tools) == 0:
		return "" // a turn without tools (the team's Why?)
	}
	for _, t := range tools {
		if slices.Contains(init.Tools, t) {
			return ""
		}
	}
	return "none of the desk's tools is offered"
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
	offered := make([]string, len(req.Tools))
	for i, t := range req.Tools {
		offered[i] = ToolName(t.Name)
	}
	// A dead link stops the CLI at once: whatever it goes on to say
	// without the desk's tools is not an answer.
	st := b.read(ctx, log, out, offered, cancel)
	waitErr := cmd.Wait()

	if session != "" && !st.started && rctx.Err() == nil {
		// The CLI gave up before its session started: most likely the
		// session is gone (another machine, a wiped HOME). The next turn
		// starts a new conversation rather than failing the same way.
		if err := c.Sessions.DeleteNote(context.WithoutCancel(ctx), sessionKey(c.Desk)); err != nil {
			log.WarnContext(ctx, "could not forget the desk's session", "err", err)
		}
	}
	final := st.final
	switch {
	case ctx.Err() != nil:
		return deskbot.ModelReply{}, fmt.Errorf("%s: %w", c.Name, ctx.Err())
	case st.link != "":
		return deskbot.ModelReply{}, deskbot.Errorf(deskbot.EUNAVAILABLE, "%s: no link to the desk's tools (%s); the run was stopped", c.Name, st.link)
	case rctx.Err() != nil:
		return deskbot.ModelReply{}, deskbot.Errorf(deskbot.EUNAVAILABLE, "%s: no answer within %s", c.Name, c.Timeout)
	case final != nil && final.Subtype == "success" && !final.IsError && !st.inited:
		// Nothing showed the desk's tools were there: not an answer.
		return deskbot.ModelReply{Usage: final.usage()}, deskbot.Errorf(deskbot.EUNAVAILABLE, "%s: a result with no init line before it", c.Name)
	case final != nil && final.Subtype == "success" && !final.IsError:
		if waitErr != nil {
			log.WarnContext(ctx, "Claude Code exited with an error after its result", "err", waitErr)
		}
		return deskbot.ModelReply{Text: argtext.Clip(final.Result, maxResult, "…"), Usage: final.usage()}, nil
	case final != nil:
		why := b.redact(final.why(), turn.Token)
		if why == "" {
			why = "no reason given"
			// What the CLI wrote on stderr is all there is to go on.
			log.WarnContext(ctx, "Claude Code's error result gave no reason", "subtype", final.Subtype, "exit", fmt.Sprint(waitErr),
				"stderr", b.redactLong(stderr.String(), turn.Token))
		}
		return deskbot.ModelReply{Usage: final.usage()}, deskbot.Errorf(deskbot.EUNAVAILABLE, "%s: %s after %d turns: %s", c.Name, cmp.Or(final.Subtype, "error"), final.NumTurns, why)
	}
	why := cmp.Or(b.redact(stderr.String(), turn.Token), "no output")
	if st.err != nil {
		why = st.err.Error() + "; " + why
	}
	return deskbot.ModelReply{}, deskbot.Errorf(deskbot.EUNAVAILABLE, "%s: ended without a result (%v): %s", c.Name, waitErr, why)
}

// streamed is what read saw of the CLI's stream.
type streamed struct {
	started bool   // a session started (an init line named it)
	inited  bool   // an init line came, and showed the desk's tools linked
	link    string // what an init line showed wrong with that link
	final   *event // the result line
	err     error  // the stream could not be read to its end
}

// read follows the stream until it ends: it keeps the session id as soon
// as the CLI names it (a turn cut short still resumes its conversation),
// checks the init line's link to the desk's tools (offered, as the CLI
// names them), calling stop when it is down, and returns the result line,
// if any.
func (b *Backend) read(ctx context.Context, log *slog.Logger, out io.Reader, offered []string, stop func()) streamed {
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	var r streamed
	saved := ""
	for sc.Scan() {
		var ev event
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue // not ours to judge; the result decides
		}
		// Only the init message starts a session: the CLI echoes a
		// --resume id it does not know in its error result.
		if ev.Type == "system" && ev.Subtype == "init" {
			if ev.SessionID != "" && ev.SessionID != saved {
				r.started, saved = true, ev.SessionID
				if err := b.c.Sessions.PutNote(context.WithoutCancel(ctx), sessionKey(b.c.Desk), ev.SessionID, sessionTTL); err != nil {
					log.WarnContext(ctx, "could not keep the desk's Claude session", "err", err)
				}
			}
			if p := linkProblem(&ev, offered); p != "" && r.link == "" {
				r.link = p
				log.WarnContext(ctx, "Claude Code has no link to the desk's tools; stopping it", "problem", p)
				stop()
			}
			r.inited = r.link == ""
		}
		if ev.Type == "result" {
			r.final = &ev
		}
	}
	if err := sc.Err(); err != nil {
		// Drain so the CLI is not blocked writing; the result is lost.
		_, _ = io.Copy(io.Discard, out)
		r.err = fmt.Errorf("unreadable output: %v", err)
	}
	return r
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
	return argtext.Clip(strings.Join(strings.Fields(b.redactLong(s, token)), " "), 300, "…")
}

// redactLong is redact for the log, which takes the CLI's stderr whole
// (its last 4 KiB).
func (b *Backend) redactLong(s, token string) string {
	for _, secret := range []string{b.c.APIKey, token} {
		if secret != "" {
			s = strings.ReplaceAll(s, secret, "[redacted]")
		}
	}
	return strings.TrimSpace(s)
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
