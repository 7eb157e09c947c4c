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
// Processes are counted per uid in each user namespace, so in bwrap mode,
// and in mode none where the desk has a uid of its own (ownUID), the limit
// is the desk's own; in mode none as another user it is left to the host
// (the desk shares that user's uid). In mode none the desk also shares the
// host's /tmp, so what it makes there is private to its uid (umask 077).
func limitsLine(cfg Config, bwrap, ownUID bool) string {
	l := cfg.Limits
	var b strings.Builder
	set := func(opt string, v int64) {
		fmt.Fprintf(&b, "ulimit -HS %s %d 2>/dev/null;", opt, v)
	}
	if bwrap || ownUID {
		set("-u", int64(l.Processes))
	}
	if !bwrap {
		b.WriteString("umask 077;")
	}
	set("-n", int64(l.OpenFiles))
	set("-f", l.FileSize/1024) // bash counts -f in 1024-byte blocks
	set("-d", l.Memory/1024)   // and -d in kilobytes
	set("-c", 0)               // no core files of the desk's programs
	b.WriteString("\n")
	return b.String()
}

// startShell starts the desk's bash; in mode none it runs as uid (-1: the
// service's own).
func startShell(m *Manager, desk, dir string, uid int) (*shell, error) {
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
	owner := uid
	if m.status.Mode == ModeBwrap {
		owner = m.cfg.asHost()
	}
	if owner >= 0 {
		if err := inR.Chown(owner, owner); err != nil {
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
	keepInheritedOutside()
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
		runAs(uid, cmd)
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
	if _, err := inW.WriteString(readFromFd3 + limitsLine(m.cfg, m.status.Mode == ModeBwrap, uid >= 0) + commandLoop); err != nil {
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

// commandLoop is the shell's last line: the loop that runs every command.
// bash reads a pipe one byte per system call (so that it never reads past
// a command a child might want), so a command the parser reads off the
// pipe costs a system call per byte. The loop instead reads each command
// with "read -N", which takes a counted block in one call: the service
// writes 8 hexadecimal digits (the length of the quoted command), the
// command quoted as $'...' (pure ASCII, so that a length in characters is
// one in bytes whatever the locale), then the marker's id. The loop line is
// parsed once, when the shell starts.
//
// After the command the loop reads the id and prints the marker line,
// "__deskbot_<id>__ <status>", in one write. The id follows the command in
// the pipe and is read only once the command ended, so the command never
// has it in a variable (a command could still read the shell's own input
// on purpose, as it could before; that only garbles its own output).
//
// The command runs with eval at the top level, not in a function, so that
// "declare" and "local" keep their top-level meaning. The first command
// runs before the loop; the others in its body, after the marker of the one
// before and the read of the next in its condition, so a "continue" still
// ends with a marker (status 0, as "continue" and "break" return), and a
// "break" leaves the inner loop to the outer one, which starts it again. Only a "break 2" (or more) at the top level ends
// the shell, which the next command reports like any exit. Its own input
// ending (the service closed the pipe) ends the shell.
const commandLoop = `__deskbot_c=; ` + readCommand + ` && { eval "eval $__deskbot_c"; __deskbot_s=$?; }; ` +
	`while :; do while IFS= read -rN` + markIDLen + ` -u255 __deskbot_c || exit; ` +
	`printf '__deskbot_%s__ %d\n' "$__deskbot_c" "$__deskbot_s"; ` + readCommand + ` || exit; ` +
	`do __deskbot_s=0; eval "eval $__deskbot_c"; __deskbot_s=$?; done; done; exit` + "\n"

const readCommand = `IFS= read -rN8 -u255 __deskbot_c && IFS= read -rN$((16#$__deskbot_c)) -u255 __deskbot_c`

// markIDLen is the length of a marker's id: rand.Text's 26 characters
// (crypto/rand documents the length), 130 random bits.
const markIDLen = "26"

// commandBlock is what the service writes for one command: see commandLoop.
func commandBlock(script, id string) []byte {
	q := quote(script)
	b := make([]byte, 0, 8+len(q)+len(id))
	b = fmt.Appendf(b, "%08x", len(q))
	b = append(b, q...)
	return append(b, id...)
}

// readResult is how reading a command's output ended.
type readResult struct {
	status int
	marked bool // false: the output ended (bash gone) before the marker
}

// readUntil copies output to c until the marker line "<marker><status>\n"
// ends a line (the marker comes right after the command's output, which
// may not end with a newline). The marker holds a random id the command
// never saw, so a command printing marker-like lines cannot end its output
// early. When the read deadline passes it asks interrupted whether to go
// on reading.
func readUntil(r *bufio.Reader, marker []byte, c *collector, interrupted func() (goOn bool)) readResult {
	// A line longer than the reader's buffer comes in pieces; the last
	// bytes of a piece are held back, so that a marker split across two
	// pieces is still seen whole.
	keep := len(marker) + 4 // the marker, a status of up to 3 digits, "\n"
	var carry []byte
	for {
		line, err := r.ReadSlice('\n')
		if len(carry) > 0 {
			carry = append(carry, line...)
			line = carry
		}
		if n := len(line); n > 0 && line[n-1] == '\n' {
			if i := bytes.LastIndex(line, marker); i >= 0 {
				if st, perr := strconv.Atoi(string(line[i+len(marker) : n-1])); perr == nil {
					c.Write(line[:i])
					return readResult{status: st, marked: true}
				}
			}
			c.Write(line)
			carry = carry[:0]
		} else {
			// A piece of a line (the buffer is full, or the read timed
			// out): hold back what may be the start of the marker.
			cut := max(len(line)-keep, 0)
			c.Write(line[:cut])
			carry = append(carry[:0], line[cut:]...)
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, os.ErrDeadlineExceeded) && interrupted():
		case err != nil: // EOF, or the pipe closed under us by kill
			c.Write(carry)
			return readResult{}
		}
	}
}
