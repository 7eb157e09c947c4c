package deskbottest

import (
	"fmt"
	"net"
	"syscall"
	"testing"
)

// FreeAddr returns a loopback host:port that was free a moment ago, for a
// server the test starts next. It is not a port that stays closed: the
// kernel may give it to the next listener; use RefusedAddr for that.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// RefusedAddr returns a loopback host:port that refuses connections for
// the whole test: a Redis, model or Bot API that is down. The port is held
// by a socket that is bound but never listens, so no server the test (or
// a test beside it) starts is given it; a port that was merely free a
// moment ago can be, and the "down" service then answers.
func RefusedAddr(t testing.TB) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
}
