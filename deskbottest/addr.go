package deskbottest

import (
	"net"
	"testing"
)

// ClosedAddr returns a loopback host:port that nothing listens on (it was
// free a moment ago): a Redis, model or Bot API that is down, or a port for
// a server the test starts next.
func ClosedAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}
