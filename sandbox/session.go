package sandbox

import (
	"context"
	"crypto/rand"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/deskbot/deskbot"
)

// Session is a desk's terminal: one bash that keeps its folder and
// variables from command to command, and the background jobs started in it.
// Its methods are safe for concurrent use; commands run one at a time.
type Session struct {
	m       *Manager
	desk    string
	dir     string // the desk's folder, the same path inside and outside bwrap
	uid     int    // the host uid its bash runs as in mode none; -1: the service's
	scratch string // background job logs
	turn    chan struct{}

	mu     sync.Mutex
	sh     *shell // nil until the next command starts one
	gen    int    // bumped whenever the shell goes; jobs of older gens are stopped
	note   string // what the model must hear with its next command
	jobs   map[string]*job
	closed bool
}

func (s *Session) Desk() string { return s.desk }

// Dir is the desk's folder: HOME and the working directory of its shell.
func (s *Session) Dir() string { return s.dir }

const exitedNote = "[The previous terminal had exited, so this command ran in a new one: the folder and variables were reset.]"

func timeoutText(d time.Duration) string {
	return fmt.Sprintf("The command did not finish within %s seconds. The terminal was restarted, so the folder and variables are reset; use bash_background for long commands.",
		strconv.FormatFloat(d.Seconds(), 'f', -1, 64))
}

// Run runs command in the desk's shell with input from /dev/null and
// returns its output (stdout and stderr together, cut to MaxOutput
// characters). A non-zero exit status is not an error result: the text ends
// with "exit status N", because a failing grep or test is information, not a
// mistake. A command past the timeout restarts the session and gets the
// timeout text as an error result. Errors are system failures or ctx's.
func (s *Session) Run(ctx context.Context, command string) (deskbot.ToolResult, error) {
	if msg := checkCommand(command); msg != "" {
		return deskbot.ToolResult{Text: msg, IsError: true}, nil
	}
	if err := s.acquire(ctx); err != nil {
		return deskbot.ToolResult{}, err
	}
	defer s.release()
	// Input is /dev/null already: the shell's own (see readFromFd3).
	o, err := s.exec(ctx, command)
	if err != nil {
		return deskbot.ToolResult{}, err
	}
	if o.timedOut {
		return deskbot.ToolResult{Text: timeoutText(s.m.cfg.Timeout), IsError: true}, nil
	}
	// The whole text stays within MaxOutput characters: what the service
	// adds (the note, the exit status) is taken from the output's share.
	var head, foot string
	if o.note != "" {
		head = o.note + "\n"
	}
	if o.status != 0 || o.exited {
		foot = fmt.Sprintf("exit status %d", o.status)
	}
	if o.exited {
		foot += "\n[The terminal exited. The next command starts a new one, with the folder and variables reset; background jobs were stopped.]"
	}
	room := s.m.cfg.MaxOutput - utf8.RuneCountInString(head) - utf8.RuneCountInString(foot) - 1
	text := o.col.String(max(room, 0))
	if foot != "" && text != "" && !strings.HasSuffix(text, "\n") {
		foot = "\n" + foot
	}
	out := head + text + foot
	if out == "" {
		out = "(no output)"
	}
	if utf8.RuneCountInString(out) > s.m.cfg.MaxOutput { // a maximum smaller than the notes
		out = firstChars(out, s.m.cfg.MaxOutput)
	}
	return deskbot.ToolResult{Text: out}, nil
}

func checkCommand(command string) string {
	if strings.TrimSpace(command) == "" {
		return `The command is empty. Give a shell command, e.g. {"command": "ls -la"}.`
	}
	if strings.IndexByte(command, 0) >= 0 {
		return "The command contains a NUL character, which bash cannot run."
	}
	return ""
}

func (s *Session) acquire(ctx context.Context) error {
	select {
	case s.turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Session) release() { <-s.turn }

// outcome is how one command in the shell ended.
type outcome struct {
	col      *collector // the output; nil when there is none to show
	status   int
	exited   bool // bash itself ended; status is its exit status
	timedOut bool
	note     string
}

// exec runs script in the shell (see commandLoop) and reads its output up
// to the marker. The caller holds the turn.
//
// The output is read in the calling goroutine, so a command costs no
// goroutine, channel or timer, and one wake-up fewer: the timeout is the
// pipe's read deadline, and whatever must stop the read early (ctx ending,
// bash exiting) moves the deadline to the past.
func (s *Session) exec(ctx context.Context, script string) (outcome, error) {
	sh, note, err := s.shell()
	if err != nil {
		return outcome{}, err
	}
	id := rand.Text() // 130 bits; the command never sees it anyway
	marker := "__deskbot_" + id + "__ "
	c := newCollector(s.m.cfg.MaxOutput)

	if _, err := sh.stdin.Write(commandBlock(script, id)); err != nil {
		// bash died between the check and the write.
		s.drop(sh, true)
		return outcome{note: note, col: c, status: sh.exitCode(), exited: true}, nil
	}
	sh.outR.SetReadDeadline(time.Now().Add(s.m.cfg.Timeout))
	if sh.exited() { // it died before the deadline was set: see shell's waiter
		sh.outR.SetReadDeadline(past)
	}
	cancelled := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		sh.outR.SetReadDeadline(past)
		close(cancelled)
	})
	var why stopReason
	r := readUntil(sh.out, []byte(marker), c, func() bool {
		switch {
		case ctx.Err() != nil:
			why = stoppedByCtx
		case why == stoppedByExit:
			// Two seconds after the kill the pipe is still open: a child
			// in its own session holds it. What was read is the output.
		case sh.exited():
			// Children that inherited the pipe would keep it open past
			// bash's death; killing the group lets the reader see the end.
			why = stoppedByExit
			syscall.Kill(-sh.cmd.Process.Pid, syscall.SIGKILL)
			sh.outR.SetReadDeadline(time.Now().Add(2 * time.Second))
			return true
		default:
			why = stoppedByTimeout
		}
		return false
	})
	if !stop() {
		// ctx ended as the read finished: its past deadline must be set
		// before the next command sets its own, or it could cut that
		// command short.
		<-cancelled
	}
	switch why {
	case stoppedByTimeout:
		s.drop(sh, false)
		return outcome{timedOut: true}, nil
	case stoppedByCtx:
		s.drop(sh, false)
		return outcome{}, ctx.Err()
	}
	if r.marked {
		return outcome{note: note, col: c, status: r.status}, nil
	}
	<-sh.done
	if s.drop(sh, true) {
		return outcome{}, deskbot.Errorf(deskbot.EUNAVAILABLE, "the terminal of desk %s was stopped", s.desk)
	}
	return outcome{note: note, col: c, status: sh.exitCode(), exited: true}, nil
}

// stopReason is why reading a command's output stopped before its marker.
type stopReason int

const (
	notStopped stopReason = iota
	stoppedByTimeout
	stoppedByCtx
	stoppedByExit // bash exited; what is left is read for two more seconds
)

// past is a read deadline that has passed: it wakes a reader at once.
var past = time.Unix(1, 0)

// shell returns the running shell, starting one if there is none, with the
// note the model must hear (and forgets the note).
func (s *Session) shell() (*shell, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, "", deskbot.Errorf(deskbot.EUNAVAILABLE, "the terminal of desk %s was stopped", s.desk)
	}
	if s.sh != nil && s.sh.exited() { // died between commands
		go s.sh.kill()
		s.sh, s.note = nil, exitedNote
		s.gen++
	}
	if s.sh == nil {
		sh, err := startShell(s.m, s.desk, s.dir, s.uid)
		if err != nil {
			return nil, "", err
		}
		s.sh = sh
	}
	note := s.note
	s.note = ""
	return s.sh, note, nil
}

// drop ends sh if it is still the session's shell, stopping its background
// jobs. exited says bash ended on its own, so the next command's output
// must say the terminal is new. It reports whether the session is closed.
func (s *Session) drop(sh *shell, exited bool) (closed bool) {
	s.mu.Lock()
	if s.sh == sh {
		s.sh = nil
		s.gen++
		if exited {
			s.note = exitedNote
		}
	}
	closed = s.closed
	s.mu.Unlock()
	sh.kill()
	return closed
}

// Close stops the shell and its background jobs; later commands fail.
func (s *Session) Close() error {
	s.mu.Lock()
	sh := s.sh
	s.sh, s.closed = nil, true
	s.gen++
	s.mu.Unlock()
	if sh != nil {
		sh.kill()
	}
	return nil
}
