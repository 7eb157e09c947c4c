package sandbox

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/deskbot/deskbot"
)

// The seccomp filter bwrap installs (--seccomp) just before it starts the
// desk's first program: a deny-list of calls a desk's terminal never needs
// and that are the kernel's usual doors out of a sandbox or into the host.
// The desk has no capabilities, so most of them fail already; the filter
// takes away the kernel code behind them too (a bug in a namespace, BPF or
// keyring path is then out of reach) and stops the ones that need no
// capability at all (ptrace of the desk's own processes, keyctl,
// userfaultfd, perf_event_open, io_uring). Denied calls return EPERM, as
// they would for any unprivileged user, so programs take their usual
// "not allowed" path instead of being killed.
//
// The filter is inherited by every process of the sandbox and cannot be
// removed (bwrap sets no_new_privs; seccomp filters only ever add up).

// deniedCalls fail with EPERM whatever their arguments.
var deniedCalls = []string{
	// Debugging and reading other processes' memory: a desk's processes
	// are all the same uid, and one could otherwise drive another.
	"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd",
	// Mounts and the new mount API.
	"mount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount",
	"fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
	// Namespaces: entering or making any (clone's flags are checked below).
	"unshare", "setns",
	// The kernel keyring is shared beyond the sandbox.
	"keyctl", "add_key", "request_key",
	// Kernel programs and kernel-facing interfaces with a long record of
	// privilege escalations.
	"bpf", "userfaultfd", "perf_event_open",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	// Kernel modules and replacing the kernel.
	"init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
	// The clock is the host's: setting it would move every desk's and the
	// service's time (grants, expiries).
	"clock_settime", "clock_adjtime", "adjtimex", "settimeofday",
	// The rest of what only an administrator does.
	"reboot", "swapon", "swapoff", "acct", "quotactl", "quotactl_fd",
	"open_by_handle_at", "syslog", "vhangup", "sethostname", "setdomainname",
	"iopl", "ioperm", "lookup_dcookie", "uselib", "_sysctl", "nfsservctl",
}

// namespaceFlags are clone's flags that make new namespaces.
const namespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET

// Terminal ioctls that push input into, or drive, the terminal: bwrap's
// --new-session already keeps the desk off the service's terminal; these
// cost nothing to refuse too. The kernel reads ioctl's request as 32 bits,
// so the filter compares only the low 32 bits of the argument (the
// library's Equal compares all 64, and TIOCSTI|1<<32 would pass it).
const (
	ioctlTIOCSTI   = 0x5412
	ioctlTIOCLINUX = 0x541c
)

// seccompArch is the architecture the filter is built for: the service's
// own, whose system calls the desks' programs make.
func seccompArch() (*arch.Info, error) {
	switch runtime.GOARCH {
	case "amd64":
		return arch.X86_64, nil
	case "arm64":
		return arch.AARCH64, nil
	}
	return nil, deskbot.Errorf(deskbot.EUNAVAILABLE, "the sandbox's seccomp filter is built for x86_64 and aarch64 only, not %s; run deskbot on one of those", runtime.GOARCH)
}

// seccompPolicy is the deny-list for a, skipping calls a has no number for
// (aarch64 never had ioperm or uselib).
func seccompPolicy(a *arch.Info) seccomp.Policy {
	eperm := seccomp.ActionErrno | seccomp.Action(unix.EPERM)
	var names []string
	for _, n := range deniedCalls {
		if _, ok := a.SyscallNames[n]; ok {
			names = append(names, n)
		}
	}
	return seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{
			{Action: eperm, Names: names},
			{Action: eperm, NamesWithCondtions: []seccomp.NameWithConditions{
				{Name: "clone", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.BitsSet, Value: namespaceFlags}}},
			}},
			// clone3 passes its flags in memory, which a filter cannot
			// read: "not implemented" makes glibc fall back to clone, whose
			// flags the group above checks.
			{Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS), Names: []string{"clone3"}},
		},
	}
}

// seccompProgram assembles the filter for a. The library's own program
// lets a call of another architecture through to the default action
// (allow): on x86_64 a process can still make i386 calls (int 0x80), with
// other numbers, which would walk around the deny-list. So the program
// starts with its own check and answers ENOSYS to every call that is not
// of a; a desk has no 32-bit programs to run.
func seccompProgram(a *arch.Info) ([]bpf.Instruction, error) {
	policy := seccompPolicy(a)
	body, err := policy.Assemble()
	if err != nil {
		return nil, fmt.Errorf("assembling the seccomp filter: %w", err)
	}
	// struct seccomp_data: int nr; __u32 arch; __u64 ip; __u64 args[6].
	const nrOffset, archOffset, argsOffset = 0, 4, 16
	arg1Low := uint32(argsOffset + 8)
	if binary.NativeEndian.Uint16([]byte{0, 1}) == 1 { // big-endian: the low half is second
		arg1Low += 4
	}
	ioctl, ok := a.SyscallNames["ioctl"]
	if !ok {
		return nil, fmt.Errorf("no ioctl call on %s", a.Name)
	}
	eperm := uint32(seccomp.ActionErrno) | uint32(unix.EPERM)
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: archOffset, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(a.ID), SkipTrue: 1},
		bpf.RetConstant{Val: uint32(seccomp.ActionErrno) | uint32(unix.ENOSYS)},
		bpf.LoadAbsolute{Off: nrOffset, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(ioctl), SkipFalse: 4},
		bpf.LoadAbsolute{Off: arg1Low, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: ioctlTIOCSTI, SkipTrue: 1},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: ioctlTIOCLINUX, SkipFalse: 1},
		bpf.RetConstant{Val: eperm},
		// The library's program loads what it needs itself.
	}
	return append(prog, body...), nil
}

// seccompFilter is the filter for this machine in the form bwrap's
// --seccomp reads: struct sock_filter entries (u16 code, u8 jt, u8 jf,
// u32 k) in native byte order, up to end of file.
var seccompFilter = sync.OnceValues(func() ([]byte, error) {
	a, err := seccompArch()
	if err != nil {
		return nil, err
	}
	prog, err := seccompProgram(a)
	if err != nil {
		return nil, err
	}
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, fmt.Errorf("assembling the seccomp filter: %w", err)
	}
	if len(raw) > unix.BPF_MAXINSNS {
		return nil, fmt.Errorf("the seccomp filter has %d instructions, more than the kernel takes (%d)", len(raw), unix.BPF_MAXINSNS)
	}
	var b bytes.Buffer
	for _, in := range raw {
		binary.Write(&b, binary.NativeEndian, struct {
			Code   uint16
			Jt, Jf uint8
			K      uint32
		}{in.Op, in.Jt, in.Jf, in.K})
	}
	return b.Bytes(), nil
})
