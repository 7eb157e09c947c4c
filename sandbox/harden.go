package sandbox

import (
	"os"
	"strconv"
	"syscall"

	"github.com/deskbot/deskbot"
)

// HardenProcess makes the calling process non-dumpable
// (prctl(PR_SET_DUMPABLE, 0)): its /proc/<pid>/environ, mem and maps then
// belong to root and no process of the same uid may ptrace it. The service
// calls it first thing, before any desk runs, so that a desk that shares
// its uid (SANDBOX=none as a non-root user) still cannot read the token or
// the Redis password out of the service. Children are dumpable again after
// exec, which is what the desks' programs need.
func HardenProcess() error {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_DUMPABLE, 0, 0); errno != 0 {
		return deskbot.Errorf(deskbot.EUNAVAILABLE, "cannot make the service non-dumpable: %v", errno)
	}
	return nil
}

// keepInheritedOutside marks every descriptor of the service above stderr
// close-on-exec. Go opens its own that way, but a descriptor the service
// inherited open from whatever started it (a supervisor's pipe, a shell's
// "3>file", a socket passed down) is not, and exec passes such descriptors
// on to every child: through bubblewrap into a desk's sandbox, or straight
// to its bash with SANDBOX=none. It runs before every start of a desk's
// terminal, so the descriptors passed on purpose (ExtraFiles, dup'd in the
// child) are the only ones a desk holds. Marking one of Go's own again, or
// one closed meanwhile, is harmless.
func keepInheritedOutside() {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return // no /proc: nothing to go by; Go's own are close-on-exec anyway
	}
	for _, e := range ents {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
}
