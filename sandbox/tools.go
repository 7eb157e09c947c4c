package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/deskbot/deskbot"
)

// Tools returns the desk's terminal tools. Each is bound to desk and
// refuses (as a system error) to run for any other: a wiring mistake must
// never put one desk's command in another's folder.
func (m *Manager) Tools(desk string) []deskbot.Tool {
	return []deskbot.Tool{
		&tool{m: m, desk: desk, name: deskbot.ToolBash, arg: "command"},
		&tool{m: m, desk: desk, name: deskbot.ToolBashBackground, arg: "command"},
		&tool{m: m, desk: desk, name: deskbot.ToolCheckBackground, arg: "job_id"},
	}
}

type tool struct {
	m         *Manager
	desk      string
	name, arg string
}

func (t *tool) Name() string { return t.name }

// unavailableText is the whole description of every terminal tool, and the
// answer to every call, when desks have no terminal.
const unavailableText = "UNAVAILABLE: this desk has no terminal, because the service cannot isolate it here (bubblewrap is missing or cannot start). " +
	"Do not call this tool: every call fails. Work with your other tools; the people running the service have been told."

func (t *tool) Description() string {
	if t.m.status.Mode == ModeUnavailable {
		return unavailableText
	}
	secs := strconv.FormatFloat(t.m.cfg.Timeout.Seconds(), 'f', -1, 64)
	net := "The network is available (for market data and the like)."
	if t.m.status.Mode == ModeBwrap {
		net = "The network is available (for market data and the like); the host's own services are not."
	}
	if !t.m.status.Network {
		net = "There is no network."
	}
	switch t.name {
	case deskbot.ToolBash:
		return fmt.Sprintf("Run a command in your own persistent bash terminal and get its output (stdout and stderr together). "+
			"The terminal stays open between calls: the current folder, variables and exported variables carry over to the next command. "+
			"It starts in your desk's folder, which is also HOME; keep your files there (elsewhere is read-only or temporary). "+
			"Input is /dev/null, so nothing can prompt or wait for typing: pass answers as arguments or files. "+
			"Output longer than %d characters is cut in the middle. A non-zero exit status is shown as \"exit status N\" at the end. "+
			"A command running longer than %s seconds is stopped and the terminal restarted (folder and variables reset), "+
			"so start long work with bash_background. Calls run one at a time. Times are India time (TZ=Asia/Kolkata). %s",
			t.m.cfg.MaxOutput, secs, net)
	case deskbot.ToolBashBackground:
		return fmt.Sprintf("Start a long-running command in the background in your terminal and return at once with a job id of 8 hexadecimal digits. "+
			"It starts in the terminal's current folder with its exported variables; its output (stdout and stderr) goes to a log file in your desk's folder. "+
			"Use check_background with the job id to see whether it is running or finished and the end of its log. "+
			"Background jobs stop if the terminal is restarted (a bash command that timed out, or the terminal exited), the desk stops, "+
			"or after running %s.", jobTimeoutText(t.m.cfg.JobTimeout))
	default:
		return fmt.Sprintf("Check a background job started with bash_background: says running, finished (with its exit status) or stopped, "+
			"and shows the last %d characters of its log.", JobTail)
	}
}

// CheckArguments has nothing to refuse before the gate: the command is
// shown to an approver as it runs, and Run tells the model of a bad call.
func (t *tool) CheckArguments(json.RawMessage) error { return nil }

func (t *tool) Schema() json.RawMessage {
	desc := "The bash command to run, e.g. \"ls -la\". Several lines are fine."
	if t.arg == "job_id" {
		desc = "The job id (8 hexadecimal digits) bash_background returned."
	}
	s, _ := json.Marshal(map[string]any{
		"type":                 "object",
		"properties":           map[string]any{t.arg: map[string]any{"type": "string", "description": desc}},
		"required":             []string{t.arg},
		"additionalProperties": false,
	})
	return s
}

// Run parses the one string argument; a model's bad arguments come back as
// an error result it can correct.
func (t *tool) Run(ctx context.Context, desk string, args json.RawMessage) (deskbot.ToolResult, error) {
	if desk != "" && desk != t.desk {
		return deskbot.ToolResult{}, deskbot.Errorf(deskbot.EINTERNAL, "the %s tool of desk %s was run for desk %s", t.name, t.desk, desk)
	}
	if t.m.status.Mode == ModeUnavailable {
		return deskbot.ToolResult{IsError: true, Text: unavailableText}, nil
	}
	var a map[string]json.RawMessage
	var v string
	d := json.NewDecoder(bytes.NewReader(args))
	if err := d.Decode(&a); err != nil || a == nil {
		return t.badArgs("the arguments are not a JSON object")
	}
	raw, ok := a[t.arg]
	if !ok {
		return t.badArgs(fmt.Sprintf("%q is missing", t.arg))
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return t.badArgs(fmt.Sprintf("%q must be a string", t.arg))
	}
	s, err := t.m.Session(t.desk)
	if err != nil {
		return deskbot.ToolResult{}, err
	}
	switch t.name {
	case deskbot.ToolBash:
		return s.Run(ctx, v)
	case deskbot.ToolCheckBackground:
		return s.CheckBackground(ctx, v)
	}
	id, err := s.RunInBackground(ctx, v)
	if deskbot.ErrorCode(err) == deskbot.EINVALID {
		return deskbot.ToolResult{Text: deskbot.ErrorMessage(err), IsError: true}, nil
	} else if err != nil {
		return deskbot.ToolResult{}, err
	}
	log, _ := s.jobPaths(id)
	return deskbot.ToolResult{Text: fmt.Sprintf(
		"Started background job %s. Its output goes to %s. Check it with check_background {\"job_id\": %q}.", id, log, id)}, nil
}

func (t *tool) badArgs(why string) (deskbot.ToolResult, error) {
	example := `{"command": "ls -la"}`
	if t.arg == "job_id" {
		example = `{"job_id": "0a1b2c3d"}`
	}
	return deskbot.ToolResult{IsError: true, Text: fmt.Sprintf("Bad arguments for %s: %s. Call it like %s.", t.name, why, example)}, nil
}
