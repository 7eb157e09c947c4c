package kite

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/words"
)

// Since April 2026 Kite refuses an order request (a placement, a
// modification, a cancellation) that does not come from an address in the
// app's IP whitelist on the Kite Connect developer console; every other
// call is served from anywhere, so a server whose orders leave from the
// wrong address looks healthy until its first order. KITE_SOURCE_IP names
// the local address order requests leave from (a host with a second,
// registered address binds to it); the refusal is recognised by its words
// (IsSourceIP) and never retried.

// orderRequest reports whether r is one Kite checks against the IP
// whitelist: anything but a read under /orders/, and the GTTs' changes
// (which place orders when they trigger).
func orderRequest(r *http.Request) bool {
	if r.Method == http.MethodGet {
		return false
	}
	return strings.HasPrefix(r.URL.Path, "/orders/") || strings.HasPrefix(r.URL.Path, "/gtt/")
}

// CheckSourceIP checks KITE_SOURCE_IP: an IP address (v4 or v6) this host
// can bind to, or "" for none.
func CheckSourceIP(ip string) error {
	if ip == "" {
		return nil
	}
	a := net.ParseIP(ip)
	if a == nil {
		return deskbot.Errorf(deskbot.EINVALID, "KITE_SOURCE_IP: %q is not an IP address; give the address registered in the Kite developer console's IP whitelist that this host owns, like 203.0.113.7", ip)
	}
	if a.IsUnspecified() || a.IsMulticast() {
		return deskbot.Errorf(deskbot.EINVALID, "KITE_SOURCE_IP: %s cannot be an order's source address; give one of this host's own addresses", ip)
	}
	l, err := net.ListenTCP("tcp", &net.TCPAddr{IP: a})
	if err != nil {
		return deskbot.Errorf(deskbot.EINVALID, "KITE_SOURCE_IP: this host has no address %s (orders could not leave from it); give one of this host's own addresses (ip addr lists them)", ip)
	}
	_ = l.Close()
	return nil
}

// SourceTransport is base (an *http.Transport, or the default one) with
// its connections made from the local address ip.
func SourceTransport(base http.RoundTripper, ip string) (http.RoundTripper, error) {
	a := net.ParseIP(ip)
	if a == nil {
		return nil, fmt.Errorf("kite: source address %q is not an IP address", ip)
	}
	t, ok := base.(*http.Transport)
	if !ok {
		t = http.DefaultTransport.(*http.Transport)
	}
	t = t.Clone()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: a}, Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	t.DialContext = d.DialContext
	t.DialTLSContext = nil
	t.Proxy = nil // a proxy would be the address Kite sees
	return t, nil
}

// failing is the order transport of a source address that cannot be
// used: every order request fails before it is sent.
type failing struct{ err error }

func (f failing) RoundTrip(*http.Request) (*http.Response, error) { return nil, f.err }

// OrderSource is the local address the order requests leave from:
// KITE_SOURCE_IP, else the one the host routes Kite's API host from
// (found without sending anything), and how it was found.
func (c *Client) OrderSource(ctx context.Context) (ip, how string, err error) {
	if c.sourceIP != "" {
		return c.sourceIP, "KITE_SOURCE_IP", nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.apiURL, nil)
	if err != nil {
		return "", "", err
	}
	host := req.URL.Hostname()
	port := req.URL.Port()
	if port == "" {
		port = "443"
	}
	var d net.Dialer
	// A UDP "connection" sends nothing; it only asks the kernel's routing
	// which local address would be used.
	conn, err := d.DialContext(ctx, "udp", net.JoinHostPort(host, port))
	if err != nil {
		return "", "", fmt.Errorf("kite: no route to %s: %w", host, err)
	}
	defer conn.Close()
	return conn.LocalAddr().(*net.UDPAddr).IP.String(), "this host's route to " + host, nil
}

// ErrSourceIP is the error of an order request Kite refused for its source
// address: not in the app's IP whitelist, deskbot.ESOURCE for the parts
// that know no Kite (the risk rules' halt). It is never retried: nothing
// but a change at the developer console (or KITE_SOURCE_IP) mends it.
var ErrSourceIP = deskbot.Errorf(deskbot.ESOURCE, "Kite refused the request because this server's address is not in the Kite app's IP whitelist; nothing was done at Kite, and the team has been told how to fix it")

// IsSourceIP reports whether err is Kite's refusal of an order request
// for its source address.
func IsSourceIP(err error) bool { return errors.Is(err, ErrSourceIP) }

// sourceNotPlaced is a placement's ErrSourceIP in the words its desk reads.
func sourceNotPlaced(o deskbot.Order) error {
	return errors.Join(deskbot.Errorf(deskbot.ESOURCE, "the order (%s) was not placed: Kite refuses orders from this server's address (not in the Kite app's IP whitelist). The team has been told how to fix it; do not place it again until they say it is fixed.", words.FormatOrder(o)), ErrSourceIP)
}

// ipWord finds "IP" as a word (not the "ip" of "API" or "zip").
var ipWord = regexp.MustCompile(`(?i)\bips?\b`)

// sourceRefusal reports whether Kite's message msg (of an order request's
// refusal) is about the request's address. Kite has published no exact
// text; it names the IP or its whitelist.
func sourceRefusal(msg string) bool {
	m := strings.ToLower(msg)
	if strings.Contains(m, "whitelist") || strings.Contains(m, "white list") || strings.Contains(m, "white-list") || strings.Contains(m, "static ip") {
		return true
	}
	return ipWord.MatchString(msg) && (strings.Contains(m, "not allowed") || strings.Contains(m, "not registered") || strings.Contains(m, "unregistered") || strings.Contains(m, "not permitted"))
}
