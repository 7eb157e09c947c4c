package sandbox

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strconv"
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
	cmd   *exec.Cmd
	stdin *os.File
	outR  *os.File
	out   *bufio.Reader
	done  chan struct{} // closed once the process has exited
	once  sync.Once
}

func startShell(m *Manager, desk, dir string) (*shell, error) {
	env := m.cfg.env(desk, dir)
	var cmd *exec.Cmd
	if m.mode == ModeBwrap {
		args := append(bwrapArgs(m.cfg, dir, env), "--", m.bash, "--noprofile", "--norc")
		cmd = exec.Command(m.bwrap, args...)
	} else {
		cmd = exec.Command(m.bash, "--noprofile", "--norc")
	}
	cmd.Env = env // bwrap too: its own environment is readable from inside
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}

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
	// One pipe for stdout and stderr keeps their order as the model would
	// see it in a terminal.
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, outW
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, deskbot.Errorf(deskbot.EUNAVAILABLE, "cannot start the terminal of desk %s: %v", desk, err)
	}
	sh := &shell{cmd: cmd, stdin: inW, outR: outR, out: bufio.NewReaderSize(outR, 64<<10), done: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(sh.done)
	}()
	if _, err := inW.WriteString(markDef); err != nil {
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
		syscall.Kill(-sh.cmd.Process.Pid, syscall.SIGKILL)
		select {
		case <-sh.done:
		case <-time.After(5 * time.Second): // cannot happen short of a kernel in trouble
		}
		sh.stdin.Close()
		sh.outR.Close()
	})
}

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
// so a command printing marker-like lines cannot end its output early.
func readUntil(r *bufio.Reader, marker []byte, c *collector) readResult {
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
		if err != nil { // EOF, or the pipe closed under us by kill
			return readResult{}
		}
	}
}
