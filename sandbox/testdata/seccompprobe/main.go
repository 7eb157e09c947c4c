// Command seccompprobe makes system calls a desk's seccomp filter denies and
// prints, for each, its name and the errno it got ("0" when it went
// through). The arguments are chosen so that, without the filter, most
// calls fail with another errno (EFAULT, EINVAL, EBADF, ENOSPC) or succeed:
// the filter answers before the kernel looks at them, so EPERM (ENOSYS for
// clone3) tells the filter's answer from the kernel's. The sandbox's tests
// build it and run it inside a desk's sandbox.
package main

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

type call struct {
	name string
	nr   uintptr
	args [6]uintptr
}

func main() {
	calls := []call{
		{"ptrace", unix.SYS_PTRACE, [6]uintptr{unix.PTRACE_TRACEME}},
		{"process_vm_readv", unix.SYS_PROCESS_VM_READV, [6]uintptr{uintptr(os.Getpid())}},
		{"mount", unix.SYS_MOUNT, [6]uintptr{}},                       // NULL target: EFAULT
		{"umount2", unix.SYS_UMOUNT2, [6]uintptr{0, 0xffff}},          // bad flags: EINVAL
		{"unshare", unix.SYS_UNSHARE, [6]uintptr{unix.CLONE_NEWUSER}}, // a threaded process: EINVAL
		{"setns", unix.SYS_SETNS, [6]uintptr{^uintptr(0), 0}},         // fd -1: EBADF
		{"clone", unix.SYS_CLONE, [6]uintptr{unix.CLONE_NEWUSER | uintptr(syscall.SIGCHLD)}},
		{"clone3", unix.SYS_CLONE3, [6]uintptr{0, 0}},       // size 0: EINVAL
		{"keyctl", unix.SYS_KEYCTL, [6]uintptr{9999}},       // no such command: EOPNOTSUPP
		{"add_key", unix.SYS_ADD_KEY, [6]uintptr{}},         // NULL type: EFAULT
		{"request_key", unix.SYS_REQUEST_KEY, [6]uintptr{}}, // NULL type: EFAULT
		{"bpf", unix.SYS_BPF, [6]uintptr{9999}},
		{"userfaultfd", unix.SYS_USERFAULTFD, [6]uintptr{1 | 2}},    // user-mode only, bad flag: EINVAL
		{"perf_event_open", unix.SYS_PERF_EVENT_OPEN, [6]uintptr{}}, // NULL attr: EFAULT
		{"io_uring_setup", unix.SYS_IO_URING_SETUP, [6]uintptr{0, 0}},
		{"init_module", unix.SYS_INIT_MODULE, [6]uintptr{}},
		{"finit_module", unix.SYS_FINIT_MODULE, [6]uintptr{^uintptr(0)}},
		{"delete_module", unix.SYS_DELETE_MODULE, [6]uintptr{}},
		{"kexec_load", unix.SYS_KEXEC_LOAD, [6]uintptr{}},
		{"clock_settime", unix.SYS_CLOCK_SETTIME, [6]uintptr{unix.CLOCK_REALTIME, 0}}, // NULL time: EFAULT
		{"clock_adjtime", unix.SYS_CLOCK_ADJTIME, [6]uintptr{unix.CLOCK_REALTIME, 0}}, // NULL: EFAULT
		{"adjtimex", unix.SYS_ADJTIMEX, [6]uintptr{}},                                 // NULL: EFAULT
		{"reboot", unix.SYS_REBOOT, [6]uintptr{}},
		{"open_by_handle_at", unix.SYS_OPEN_BY_HANDLE_AT, [6]uintptr{^uintptr(0)}},
		{"ioctl TIOCSTI", unix.SYS_IOCTL, [6]uintptr{0, unix.TIOCSTI, 0}},
		{"ioctl TIOCSTI high", unix.SYS_IOCTL, [6]uintptr{0, 1<<32 | unix.TIOCSTI, 0}}, // the kernel drops the high bits // stdin is a pipe: ENOTTY
	}
	for _, c := range calls {
		r, _, errno := unix.RawSyscall6(c.nr, c.args[0], c.args[1], c.args[2], c.args[3], c.args[4], c.args[5])
		if c.nr == unix.SYS_CLONE && errno == 0 && r == 0 {
			unix.RawSyscall(unix.SYS_EXIT_GROUP, 0, 0, 0) // the child of a clone that went through
		}
		fmt.Printf("%s %d\n", c.name, errno)
	}
}
