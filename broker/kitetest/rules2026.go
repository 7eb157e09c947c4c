package kitetest

import (
	"net"
	"net/http"
	"strings"
)

// India's rules for API trading from April 2026, as Kite applies them:
// order requests (place, modify, cancel) are refused from an address not
// in the app's IP whitelist, while every other call is served from
// anywhere; an order carries the exchange's algo id when the app sends
// one; an order can be modified at most MaxModifications times; and the
// day's placements are capped (Limits.OrdersPerDay).

// SourceIPError is the fake's refusal of an order request from an address
// not in the whitelist: a 403 PermissionException. Kite has published no
// text for it, so this one is the fake's own, naming the address Kite saw.
const SourceIPError = "Order requests are not allowed from the IP %s: it is not in the app's IP whitelist. Add it under \"IP Whitelist\" in the Kite Connect developer console."

// MaxModifications is how often Kite lets one order be modified.
const MaxModifications = 25

// maxModificationsError is Kite's refusal of a modification past the cap.
const maxModificationsError = "Maximum allowed order modifications exceeded."

// AllowSources sets the app's IP whitelist: from then on an order request
// whose source address is not one of ips is refused with SourceIPError.
// No arguments lifts the whitelist (every address allowed, the default).
func (s *Server) AllowSources(ips ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(ips) == 0 {
		s.sources = nil
		return
	}
	s.sources = map[string]bool{}
	for _, ip := range ips {
		s.sources[ip] = true
	}
}

// orderRequest reports whether r is one the whitelist applies to: a
// placement, a modification or a cancellation, and a GTT's placing or
// deletion (a GTT places orders when it triggers).
func orderRequest(r *http.Request) bool {
	return r.Method != http.MethodGet && (strings.HasPrefix(r.URL.Path, "/orders/") || strings.HasPrefix(r.URL.Path, "/gtt/"))
}

// sourceRefused reports whether r is an order request from an address the
// whitelist does not hold, and that address.
func (s *Server) sourceRefused(r *http.Request) (string, bool) {
	if !orderRequest(r) {
		return "", false
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sourcesSeen = append(s.sourcesSeen, host)
	return host, s.sources != nil && !s.sources[host]
}

// OrderSources returns the source address of every order request
// received, in order (refused ones too).
func (s *Server) OrderSources() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.sourcesSeen...)
}

// DayOrders counts userID's orders placed on the server's current India
// date: the count Kite's daily cap (Limits.OrdersPerDay) is kept by.
func (s *Server) DayOrders(userID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dayOrdersLocked(userID)
}
