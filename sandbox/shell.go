package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/deskbot/deskbot"
)

// shell is one running bash (inside bwrap or not). It is the leader of its
// own process group, so killing the group kills what it started; in bwrap
// mode the group holds bwrap, whose death ends the sandbox's PID namespace
// and with it every process inside, including those that called setsid.
type shell struct {
	l     *launch
	cmd   *exec.Cmd
	stdin *os.File
	outR  *os.File
	out   *bufio.Reader
	done  chan struct{} // closed once the process has exited
	once  sync.Once
}

// limitsLine sets the desk's rlimits, hard and soft, before its first
// command: an unprivileged desk can lower them but never raise them. A
// limit the service's own hard limit already holds lower stays lower.
// Processes are counted per uid in each user namespace, so in bwrap mode
// the limit is the desk's own; in mode none it is left to the host (the
// desk shares a uid with the service or with the other desks).
func limitsLine(cfg Config, bwrap bool) string {
	l := cfg.Limits
	var b strings.Builder
	set := func(opt string, v int64) {
		fmt.Fprintf(&b, "ulimit -HS %s %d 2>/dev/null;", opt, v)
	}
	if bwrap {
		set("-u", int64(l.Processes))
	}
	set("-n", int64(l.OpenFiles))
	set("-f", l.FileSize/1024) // bash counts -f in 1024-byte blocks
	set("-d", l.Memory/1024)   // and -d in kilobytes
	set("-c", 0)               // no core files of the desk's programs
	b.WriteString("\n")
	return b.String()
}

func startShell(m *Manager, desk, dir string) (*shell, error) {
	env := m.cfg.env(desk, dir)
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	// The desks' user reopens its end of the command pipe (readFromFd3):
	// the pipe is its own, as its other descriptors are.
	if uid := m.cfg.asHost(); uid >= 0 {
		if err := inR.Chown(uid, uid); err != nil {
			inR.Close()
			inW.Close()
			outR.Close()
			outW.Close()
			return nil, deskbot.Errorf(deskbot.EUNAVAILABLE, "cannot start the terminal of desk %s: %v", desk, err)
		}
	}
	// One pipe for stdout and stderr keeps their order as the model would
	// see it in a terminal.
	setIO := func(cmd *exec.Cmd) { cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, outW }
	var l *launch
	if m.status.Mode == ModeBwrap {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		l, err = startSandbox(ctx, m.cfg, m.bwrap, m.slirp, dir, env, []string{m.bash, "--noprofile", "--norc"}, setIO)
		cancel()
	} else {
		cmd := exec.Command(m.bash, "--noprofile", "--norc")
		cmd.Env = env
		cmd.Dir = dir
		// Its own session: a background job's timeout(1) makes a process
		// group of its own, but stays in the session, where kill finds it.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
		hostCredential(m.cfg, cmd)
		setIO(cmd)
		if err = cmd.Start(); err == nil {
			l = &launch{cmd: cmd, session: true}
		}
	}
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, deskbot.Errorf(deskbot.EUNAVAILABLE, "cannot start the terminal of desk %s: %v", desk, err)
	}
	cmd := l.cmd
	sh := &shell{l: l, cmd: cmd, stdin: inW, outR: outR, out: bufio.NewReaderSize(outR, 64<<10), done: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(sh.done)
		// Wake a command's reader: bash is gone (exec decides what next).
		outR.SetReadDeadline(past)
	}()
	if _, err := inW.WriteString(readFromFd3 + limitsLine(m.cfg, m.status.Mode == ModeBwrap) + markDef); err != nil {
		sh.kill()
		return nil, deskbot.Errorf(deskbot.EUNAVAILABLE, "the terminal of desk %s did not start: %v", desk, err)
	}
	return sh, nil
}

func (sh *shell) exited() bool {
	select {
	case <-sh.done:
		return true
	default:
		return false
	}
}

// exitCode is the status bash exited with (bwrap passes it through), or -1
// when a signal ended it.
func (sh *shell) exitCode() int { return sh.cmd.ProcessState.ExitCode() }

// kill ends the shell and everything in its process group, waits for the
// shell to be reaped and closes the pipes, which unblocks any reader.
func (sh *shell) kill() {
	sh.once.Do(func() {
		sh.l.kill()
		select {
		case <-sh.done:
		case <-time.After(5 * time.Second): // cannot happen short of a kernel in trouble
		}
		sh.stdin.Close()
		sh.outR.Close()
	})
}

// readFromFd3 is the shell's first line: bash replaces itself with a bash
// that reads its commands from the same pipe, reopened as a script on fd 3
// (bash moves it to a high, close-on-exec descriptor; fd 3 is closed), and
// whose standard input is /dev/null. Every command then reads /dev/null,
// as it must (the pipe holds the next commands), without a "</dev/null" on
// each: redirecting the shell's own input was the costliest part of a
// trivial command. The process stays the same (exec), so its rlimits,
// process group and exit status are those of the process the service
// started.
const readFromFd3 = `exec "$BASH" --noprofile --norc /dev/fd/3 3<&0 </dev/null` + "\nexec 3<&-\n"

// markFunc prints the marker line: a newline (the output may not end with
// one), "__deskbot_<id>__ " and the status of the command before it. It is
// a function, not eval'd code's wrapper, so that "declare" and "local" in a
// command keep their top-level meaning.
const (
	markFunc = "__dbm"
	markDef  = markFunc + "() { printf '\\n__deskbot_%s__ %d\\n' \"$1\" \"$?\"; }\n"
)

// readResult is how reading a command's output ended.
type readResult struct {
	status int
	marked bool // false: the output ended (bash gone) before the marker
}

// readUntil copies output to c until the line "<marker> <status>" appears at
// the start of a line. The marker holds a random id the command never saw,
// so a command printing marker-like lines cannot end its output early. When
// the read deadline passes it asks interrupted whether to go on reading.
func readUntil(r *bufio.Reader, marker []byte, c *collector, interrupted func() (goOn bool)) readResult {
	atStart := true
	for {
		line, err := r.ReadSlice('\n')
		if atStart && len(line) > len(marker)+1 && line[len(line)-1] == '\n' && bytes.HasPrefix(line, marker) {
			if st, perr := strconv.Atoi(string(line[len(marker) : len(line)-1])); perr == nil {
				return readResult{status: st, marked: true}
			}
		}
		c.Write(line)
		if len(line) > 0 {
			atStart = line[len(line)-1] == '\n'
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if errors.Is(err, os.ErrDeadlineExceeded) && interrupted() {
			continue
		}
		if err != nil { // EOF, or the pipe closed under us by kill
			return readResult{}
		}
	}
}
