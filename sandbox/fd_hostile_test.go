package sandbox_test

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
)

// The service may be started with descriptors open that are not marked
// close-on-exec (a supervisor's pipe, a shell's "3>file", a socket
// passed down): Go's exec passes such descriptors on to every child, and
// bubblewrap on into the sandbox. A desk must not hold any of them: each
// is a handle on something outside, opened by someone on the host.
func TestHostileInheritedDescriptorsStayOutside(t *testing.T) {
	var pipe [2]int
	if err := syscall.Pipe(pipe[:]); err != nil {
		t.Fatal(err)
	}
	// High numbers, clear of the few the sandbox passes on purpose, and
	// not close-on-exec (dup2 clears it), as a parent would leave them.
	p := [2]int{200, 201}
	for i := range p {
		if err := syscall.Dup2(pipe[i], p[i]); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, fd := range append(pipe[:], p[:]...) {
			syscall.Close(fd)
		}
	})
	eachMode(t, func(t *testing.T, mode string) {
		m := mustManager(t, testConfig(t, mode))
		s := mustSession(t, m, "main")
		for _, fd := range p {
			cmd := fmt.Sprintf(`for p in /proc/$$/fd/%d /proc/1/fd/%d; do if [ -e $p ]; then echo "open: $p"; fi; done; echo checked`, fd, fd)
			got := mustOutput(t, s, cmd)
			if strings.Contains(got, "open:") {
				t.Errorf("the desk's terminal holds the service's inherited descriptor %d: %q", fd, got)
			}
		}
		bg := mustOutput(t, s, fmt.Sprintf(`ls /proc/self/fd/ | tr '\n' ' '; if [ -e /proc/self/fd/%d ]; then echo LEAK; fi`, p[1]))
		if strings.Contains(bg, "LEAK") {
			t.Errorf("a command of the desk holds the service's inherited descriptor %d (fds %s)", p[1], bg)
		}
	})
}
