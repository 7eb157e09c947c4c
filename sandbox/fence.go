package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
)

// slirpNet is the network slirp4netns gives the sandbox: addresses in it
// are slirp4netns's own (gateway, resolver, the sandbox), never the host's.
var slirpNet = &net.IPNet{IP: net.IPv4(10, 0, 2, 0), Mask: net.CIDRMask(24, 32)}

// fenceRoutes are the destinations a desk must not reach although
// slirp4netns would connect to them from the host: the host's own
// addresses (a service bound to 0.0.0.0 listens on them as on its
// loopback, which slirp4netns already refuses) and the link-local range (a
// cloud's metadata service, 169.254.169.254). Only IPv4: the sandbox has no
// IPv6 route out.
func fenceRoutes() ([]string, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	routes := []string{"169.254.0.0/16"}
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok || n.IP.To4() == nil || n.IP.IsLoopback() || n.IP.IsLinkLocalUnicast() || slirpNet.Contains(n.IP) {
			continue
		}
		routes = append(routes, n.IP.String()+"/32")
	}
	return routes, nil
}

// noFenceHelper says why desks get no network when the tools that keep
// them off the host's own addresses are missing.
const noFenceHelper = "nsenter (Debian package util-linux) and ip (Debian package iproute2) are needed to keep desks off the host's own addresses"

// fence makes fenceRoutes unreachable inside the sandbox's network
// namespace before the desk's shell starts. The namespace belongs to the
// user namespace bwrap made first, whose owner (the service, or HostUID)
// may enter it; the desk lives in a nested one without rights over the
// network, so it cannot remove the routes.
func fence(ctx context.Context, userns, netns *os.File) error {
	nsenter, err1 := exec.LookPath("nsenter")
	ip, err2 := exec.LookPath("ip")
	if err1 != nil || err2 != nil {
		return fmt.Errorf("%s", noFenceHelper)
	}
	routes, err := fenceRoutes()
	if err != nil {
		return fmt.Errorf("cannot list the host's addresses: %v", err)
	}
	var script strings.Builder
	for _, r := range routes {
		fmt.Fprintf(&script, "route add unreachable %s\n", r)
	}
	args := []string{"--user=/proc/self/fd/3", "--net=/proc/self/fd/4", "--", ip, "-batch", "-"}
	if os.Geteuid() != 0 {
		// Unprivileged, bwrap denies setgroups in its user namespace, where
		// it maps the service's user to root; nsenter's own switch to root
		// there starts with setgroups and fails, so keep the credentials
		// (already root there). As root, bwrap runs as HostUID and nsenter
		// must switch to become root in the namespace.
		args = append([]string{"--preserve-credentials"}, args...)
	}
	cmd := exec.CommandContext(ctx, nsenter, args...)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	cmd.ExtraFiles = []*os.File{userns, netns}
	cmd.Stdin = strings.NewReader(script.String())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("cannot keep the desk off the host's own addresses: %v: %s", err, strings.TrimSpace(out.String()))
	}
	return nil
}
