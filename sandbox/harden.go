package sandbox

import (
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
