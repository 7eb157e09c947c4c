package sandbox_test

import (
	"net"
	"strings"
	"testing"

	"github.com/deskbot/deskbot/sandbox"
)

// hostAddress is one of the host's own IPv4 addresses other than loopback,
// or "" when it has none.
func hostAddress(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	return ""
}

// A service that listens on all of the host's addresses (a Redis with
// "bind 0.0.0.0", HTTP_ADDR=0.0.0.0:8080 as the compose file sets it) also
// listens on its loopback. With the network on, the desk reaches it neither
// through the loopback nor through the host's other addresses, nor the
// link-local range where clouds serve their metadata; and it cannot lift
// the fence.
func TestHostileNetworkHostAddresses(t *testing.T) {
	needNetwork(t)
	ip := hostAddress(t)
	if ip == "" {
		t.Skip("the host has no address but loopback")
	}
	_, port, _ := net.SplitHostPort(listen(t, "0.0.0.0:0"))
	cfg := testConfig(t, sandbox.ModeBwrap)
	cfg.Network = true
	s := mustSession(t, mustManager(t, cfg), "main")
	reach := "timeout 5 bash -c 'exec 3<>/dev/tcp/" + ip + "/" + port + " && read -r -t 2 line <&3; echo \"$line\"'"
	if r := mustRun(t, s, reach); strings.Contains(r.Text, "HOST-SERVICE-REACHED") {
		t.Errorf("the desk reached a service of the host at %s:%s: %q", ip, port, r.Text)
	}
	if r := mustRun(t, s, "timeout 5 bash -c 'exec 3<>/dev/tcp/169.254.169.254/80' 2>&1"); !strings.Contains(r.Text, "No route to host") {
		t.Errorf("the link-local range is routed: %q", r.Text)
	}
	// The desk has no right over its network: the fence stays.
	mustRun(t, s, "ip route del unreachable "+ip+"/32 2>&1; ip route flush table main 2>&1")
	if r := mustRun(t, s, reach); strings.Contains(r.Text, "HOST-SERVICE-REACHED") {
		t.Errorf("the desk lifted the fence and reached %s:%s: %q", ip, port, r.Text)
	}
}
