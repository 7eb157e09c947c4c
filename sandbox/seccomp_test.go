package sandbox

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"runtime"
	"testing"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// seccompVM runs the filter exactly as bwrap is handed it (the bytes read
// from its descriptor) in a BPF interpreter.
func seccompVM(t *testing.T) *bpf.VM {
	t.Helper()
	if runtime.GOARCH != "amd64" {
		t.Skip("the decisions below use x86_64's call numbers")
	}
	b, err := seccompFilter()
	if err != nil {
		t.Fatalf("seccompFilter: %v", err)
	}
	if len(b)%8 != 0 || len(b) == 0 {
		t.Fatalf("filter is %d bytes, not a whole number of struct sock_filter", len(b))
	}
	var prog []bpf.Instruction
	for r := bytes.NewReader(b); r.Len() > 0; {
		var in struct {
			Op     uint16
			Jt, Jf uint8
			K      uint32
		}
		if err := binary.Read(r, binary.NativeEndian, &in); err != nil {
			t.Fatal(err)
		}
		prog = append(prog, bpf.RawInstruction{Op: in.Op, Jt: in.Jt, Jf: in.Jf, K: in.K}.Disassemble())
	}
	vm, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatalf("the filter is not a valid program: %v", err)
	}
	return vm
}

// seccompData is struct seccomp_data as the interpreter loads it: it reads
// words big-endian, the kernel natively (little-endian here), so each
// 32-bit word is written big-endian, low word of an argument first.
func seccompData(nr, auditArch uint32, args ...uint64) []byte {
	b := make([]byte, 64)
	binary.BigEndian.PutUint32(b[0:], nr)
	binary.BigEndian.PutUint32(b[4:], auditArch)
	for i, a := range args {
		binary.BigEndian.PutUint32(b[16+8*i:], uint32(a))
		binary.BigEndian.PutUint32(b[20+8*i:], uint32(a>>32))
	}
	return b
}

func TestSeccompFilterDecisions(t *testing.T) {
	vm := seccompVM(t)
	x86 := uint32(arch.X86_64.ID)
	nr := func(name string) uint32 {
		t.Helper()
		n, ok := arch.X86_64.SyscallNames[name]
		if !ok {
			t.Fatalf("no x86_64 call %s", name)
		}
		return uint32(n)
	}
	eperm := uint32(seccomp.ActionErrno) | uint32(unix.EPERM)
	enosys := uint32(seccomp.ActionErrno) | uint32(unix.ENOSYS)
	allow := uint32(seccomp.ActionAllow)
	type tc struct {
		name string
		data []byte
		want uint32
	}
	tests := []tc{
		{"read", seccompData(nr("read"), x86, 0), allow},
		{"execve", seccompData(nr("execve"), x86), allow},
		{"openat", seccompData(nr("openat"), x86), allow},
		{"fork as glibc does", seccompData(nr("clone"), x86, unix.CLONE_CHILD_SETTID|unix.CLONE_CHILD_CLEARTID|uint64(unix.SIGCHLD)), allow},
		{"a thread", seccompData(nr("clone"), x86, unix.CLONE_VM|unix.CLONE_FS|unix.CLONE_FILES|unix.CLONE_SIGHAND|unix.CLONE_THREAD|unix.CLONE_SYSVSEM), allow},
		{"ioctl TCGETS", seccompData(nr("ioctl"), x86, 0, unix.TCGETS), allow},
		{"ioctl TIOCSTI", seccompData(nr("ioctl"), x86, 0, unix.TIOCSTI), eperm},
		{"ioctl TIOCLINUX", seccompData(nr("ioctl"), x86, 0, ioctlTIOCLINUX), eperm},
		{"ioctl TIOCSTI with high bits the kernel drops", seccompData(nr("ioctl"), x86, 0, 1<<32|unix.TIOCSTI), eperm},
		{"ioctl FIONREAD", seccompData(nr("ioctl"), x86, 0, unix.TIOCGWINSZ), allow},
		{"ptrace after an ioctl check", seccompData(nr("ptrace"), x86, 0, unix.TIOCSTI), eperm},
		{"clone3", seccompData(nr("clone3"), x86), enosys},
		{"clone with high bits and a new user namespace", seccompData(nr("clone"), x86, 1<<32|unix.CLONE_NEWUSER), eperm},
		{"an i386 call (int 0x80)", seccompData(26 /* i386 ptrace */, uint32(arch.I386.ID)), enosys},
		{"an i386 read", seccompData(3, uint32(arch.I386.ID)), enosys},
		{"an x32 call", seccompData(0x40000000|nr("ptrace"), x86), enosys},
	}
	for _, flag := range []uint64{unix.CLONE_NEWNS, unix.CLONE_NEWCGROUP, unix.CLONE_NEWUTS, unix.CLONE_NEWIPC, unix.CLONE_NEWUSER, unix.CLONE_NEWPID, unix.CLONE_NEWNET} {
		tests = append(tests, tc{fmt.Sprintf("clone with namespace flag %#x", flag), seccompData(nr("clone"), x86, flag|uint64(unix.SIGCHLD)), eperm})
	}
	for _, name := range deniedCalls {
		tests = append(tests, tc{name, seccompData(nr(name), x86), eperm})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := vm.Run(tt.data)
			if err != nil {
				t.Fatal(err)
			}
			if uint32(got) != tt.want {
				t.Errorf("got %#x, want %#x", uint32(got), tt.want)
			}
		})
	}
}
