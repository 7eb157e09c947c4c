package storetest

import (
	"os/exec"
	"syscall"
)

const canTieToParent = true

// dieWithParent has the kernel kill cmd when the test binary ends, even on
// a crash or a timeout's SIGQUIT, where no cleanup of ours would run.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
