package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/deskfs"
)

// job is a background job as the session remembers it. Whether it still
// runs is read from its files and the session's generation: a job whose
// shell is gone was killed with it.
type job struct {
	id, command string
	gen         int
}

// ScratchDir is the folder, inside the desk's folder, that holds background
// job logs (<id>.log) and exit statuses (<id>.exit). The desk may write
// there too: the service reads these files only through
// deskfs.Open.
const ScratchDir = ".scratch"

var jobIDPattern = regexp.MustCompile(`^[0-9a-f]{8}$`)

// newJobID is 8 hexadecimal digits (32 random bits).
func newJobID() string {
	b := make([]byte, 4)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func jobTimeoutText(d time.Duration) string {
	return strings.TrimSuffix(strings.TrimSuffix(d.String(), "0s"), "0m")
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
	// timeout(1) bounds the job's life and puts it in its own process
	// group, which it kills whole when the time is up; --verbose leaves a
	// line in the log saying so. The job gets the shell's exported
	// variables and current folder. The status is renamed into place so a
	// reader never sees it half written. Only the outer subshell is put in
	// the background.
	secs := strconv.FormatInt(int64(math.Ceil(s.m.cfg.JobTimeout.Seconds())), 10)
	script := "mkdir -p " + quote(s.scratch) + " && { ( timeout --verbose --kill-after=10 " + secs + " " + quote(s.m.bash) +
		" --noprofile --norc -c " + quote(command) + " </dev/null >" + quote(log) + " 2>&1; " +
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
		return "", deskbot.Errorf(deskbot.EINVALID, "The background job could not start: %s", strings.TrimSpace(o.col.String(s.m.cfg.MaxOutput/2)))
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
// unknown id is an error result for the model. The job's files are the
// desk's to write, so they are read through deskfs.ReadTail: a
// symlink out of the folder, a FIFO or a device is refused, never followed
// or waited on.
func (s *Session) CheckBackground(ctx context.Context, jobID string) (deskbot.ToolResult, error) {
	unknown := deskbot.ToolResult{IsError: true, Text: fmt.Sprintf(
		"There is no background job '%s'. A job id is the 8 hexadecimal digits bash_background returned.", jobID)}
	if !jobIDPattern.MatchString(jobID) {
		return unknown, nil
	}
	s.mu.Lock()
	j := s.jobs[jobID]
	running := j != nil && j.gen == s.gen && s.sh != nil && !s.sh.exited()
	s.mu.Unlock()

	logPath, _ := s.jobPaths(jobID)
	relLog, relExit := ScratchDir+"/"+jobID+".log", ScratchDir+"/"+jobID+".exit"
	state := "stopped before it finished, because the terminal was restarted or the desk stopped (exit status unknown)"
	if b, err := deskfs.ReadTail(s.dir, relExit, 32); err == nil {
		if st, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			state = fmt.Sprintf("finished, exit status %d", st)
			if st == 124 || st == 137 {
				state += fmt.Sprintf(" (also the status of a job stopped at the time limit of %s; its log then ends with timeout's words)", jobTimeoutText(s.m.cfg.JobTimeout))
			}
		}
	} else if running {
		state = "running"
	}
	var tail string
	b, err := deskfs.ReadTail(s.dir, relLog, 4*JobTail)
	switch {
	case err == nil:
		tail = strings.ToValidUTF8(lastChars(string(b), JobTail), "\uFFFD")
	case deskbot.ErrorCode(err) == deskbot.ENOTFOUND:
		if j == nil {
			return unknown, nil // not this session's, and no trace on disk
		}
	case deskbot.ErrorCode(err) == deskbot.EINVALID:
		tail = "[The log cannot be shown: " + deskbot.ErrorMessage(err) + "]"
	default:
		return deskbot.ToolResult{}, fmt.Errorf("sandbox: reading job log: %w", err)
	}
	var out strings.Builder
	fmt.Fprintf(&out, "Background job %s: %s\n", jobID, state)
	if j != nil {
		fmt.Fprintf(&out, "Command: %s\n", j.command)
	}
	fmt.Fprintf(&out, "Log: %s\n", logPath)
	if tail == "" {
		out.WriteString("The log is empty.")
	} else {
		fmt.Fprintf(&out, "Log tail (at most the last %d characters):\n%s", JobTail, tail)
	}
	return deskbot.ToolResult{Text: out.String()}, nil
}
