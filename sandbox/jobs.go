package sandbox

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/deskbot/deskbot"
)

// job is a background job as the session remembers it. Whether it still
// runs is read from its files and the session's generation: a job whose
// shell is gone was killed with it.
type job struct {
	id, command string
	gen         int
}

// ScratchDir is the folder, inside the desk's folder, that holds background
// job logs (<id>.log) and exit statuses (<id>.exit).
const ScratchDir = ".scratch"

var jobIDPattern = regexp.MustCompile(`^[a-z0-9]{8}$`)

func newJobID() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 8)
	rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)] // the slight bias does not matter for ids
	}
	return string(b)
}

func (s *Session) jobPaths(id string) (log, exit string) {
	return filepath.Join(s.scratch, id+".log"), filepath.Join(s.scratch, id+".exit")
}

// RunInBackground starts command in the desk's shell without waiting for
// it and returns its 8-character job id. The job sees the shell's folder and
// exported variables at the time it starts; its output goes to
// <desk>/.scratch/<id>.log. It runs until it ends, the session restarts or
// the desk stops. A model's mistake (an empty command) is an EINVALID error.
func (s *Session) RunInBackground(ctx context.Context, command string) (string, error) {
	if msg := checkCommand(command); msg != "" {
		return "", deskbot.Errorf(deskbot.EINVALID, "%s", msg)
	}
	if err := s.acquire(ctx); err != nil {
		return "", err
	}
	defer s.release()
	id := newJobID()
	log, exit := s.jobPaths(id)
	// The inner subshell keeps an "exit" in the command from skipping the
	// status file; the status is renamed into place so a reader never sees
	// it half written. Only the second subshell is put in the background.
	script := "mkdir -p " + quote(s.scratch) + " && { ( ( eval " + quote(command) + " ) </dev/null >" + quote(log) + " 2>&1; " +
		"echo $? >" + quote(exit+".tmp") + "; mv -f " + quote(exit+".tmp") + " " + quote(exit) + " ) </dev/null >/dev/null 2>&1 & }"
	o, err := s.exec(ctx, script)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if o.note != "" && s.note == "" {
		s.note = o.note // a background start does not show it; the next command will
	}
	switch {
	case o.timedOut || o.exited:
		return "", deskbot.Errorf(deskbot.EUNAVAILABLE, "the terminal of desk %s ended while starting a background job", s.desk)
	case o.status != 0:
		return "", deskbot.Errorf(deskbot.EINVALID, "The background job could not start: %s", strings.TrimSpace(o.text))
	}
	if len(s.jobs) >= 1000 { // forget jobs of earlier terminals; their files remain
		for k, j := range s.jobs {
			if j.gen != s.gen {
				delete(s.jobs, k)
			}
		}
	}
	s.jobs[id] = &job{id: id, command: command, gen: s.gen}
	return id, nil
}

// CheckBackground says whether a job is running, finished (with its exit
// status) or stopped, with the last JobTail characters of its log. An
// unknown id is an error result for the model.
func (s *Session) CheckBackground(ctx context.Context, jobID string) (deskbot.ToolResult, error) {
	unknown := deskbot.ToolResult{IsError: true, Text: fmt.Sprintf(
		"There is no background job '%s'. A job id is the 8 letters and digits bash_background returned.", jobID)}
	if !jobIDPattern.MatchString(jobID) {
		return unknown, nil
	}
	s.mu.Lock()
	j := s.jobs[jobID]
	running := j != nil && j.gen == s.gen && s.sh != nil && !s.sh.exited()
	s.mu.Unlock()

	logPath, exitPath := s.jobPaths(jobID)
	state := "stopped before it finished, because the terminal was restarted or the desk stopped (exit status unknown)"
	if b, err := os.ReadFile(exitPath); err == nil {
		if st, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			state = fmt.Sprintf("finished, exit status %d", st)
		}
	} else if running {
		state = "running"
	}
	tail, err := tailFile(logPath, JobTail)
	if errors.Is(err, fs.ErrNotExist) {
		if j == nil {
			return unknown, nil // not this session's, and no trace on disk
		}
		tail, err = "", nil
	}
	if err != nil {
		return deskbot.ToolResult{}, fmt.Errorf("sandbox: reading job log: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Background job %s: %s\n", jobID, state)
	if j != nil {
		fmt.Fprintf(&b, "Command: %s\n", j.command)
	}
	fmt.Fprintf(&b, "Log: %s\n", logPath)
	if tail == "" {
		b.WriteString("The log is empty.")
	} else {
		fmt.Fprintf(&b, "Log tail (at most the last %d characters):\n%s", JobTail, tail)
	}
	return deskbot.ToolResult{Text: b.String()}, nil
}

// tailFile returns the last n characters of a file, reading only its end.
func tailFile(path string, n int) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	off := fi.Size() - int64(4*n)
	if off < 0 {
		off = 0
	}
	b, err := io.ReadAll(io.NewSectionReader(f, off, fi.Size()-off))
	if err != nil {
		return "", err
	}
	return strings.ToValidUTF8(lastChars(string(b), n), "\uFFFD"), nil
}
