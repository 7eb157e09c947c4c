package deskbottest

import (
	"net"
	"strings"
	"testing"
)

// A refused address refuses every connection, and no server can be given
// its port while the test runs.
func TestRefusedAddrStaysRefused(t *testing.T) {
	addr := RefusedAddr(t)
	for range 3 {
		if c, err := net.Dial("tcp", addr); err == nil || !strings.Contains(err.Error(), "refused") {
			if c != nil {
				c.Close()
			}
			t.Fatalf("dial %s: %v, want connection refused", addr, err)
		}
	}
	if l, err := net.Listen("tcp", addr); err == nil {
		l.Close()
		t.Fatalf("a server could listen on %s", addr)
	}
}
