// Package kitetest is a fake Zerodha Kite Connect v3 server for tests. It
// speaks the HTTP API and the order-update half of the websocket exactly as
// the official Go client (github.com/zerodha/gokiteconnect/v4 and its
// ticker) uses them, so tests drive the real client against it: point
// kiteconnect.Client.SetBaseURI at Server.URL and kiteticker.Ticker.SetRootURL
// at Server.TickerURL.
//
// What it owns: one app (api_key and api_secret), the sessions of the users
// who log in to it (Login issues the single-use request_token a person's
// browser login would), an instrument list with last prices the test sets
// and moves, and each user's orders, trades, positions and funds. Orders
// live as on Kite: placing one answers only its order_id; its fate (OPEN,
// COMPLETE, REJECTED, CANCELLED, TRIGGER PENDING) is read from GET /orders
// or heard on the ticker. GET /orders is the day's book, but an
// after-market order waits in it across midnight (AMO REQ RECEIVED) until
// OpenAMOs sends it to the exchange at the open; from then it is cancelled
// or modified as variety regular, as on Kite.
//
// Strictness: the fake is at least as strict as Kite where a mistake costs
// money or a session. It refuses a missing or wrong X-Kite-Version header
// and Authorization header, a wrong checksum, a reused or stale
// request_token, an unknown instrument, a quantity that is not a multiple
// of the lot size, a price or trigger that is not a multiple of the tick
// size, a tag that is not at most 20 letters and digits, a market order
// without market_protection, and it enforces Kite's rate limits by default
// (see Limits), answering 429 as Kite does. Under India's 2026 rules
// (rules2026.go) it refuses order requests from an address outside the
// app's IP whitelist once one is set (AllowSources), keeps each order's
// algo_id and that of each modification, and refuses a 26th modification
// of an order.
//
// Faults (faults.go): slow paths, injected error answers (429 and others),
// answers lost after an order was created (dropped connection or 504
// without a body), and session expiry.
//
// Concurrency: a Server is safe for use from many goroutines; accessors
// return copies. Order updates are pushed to every ticker connection of the
// order's user as each state change happens, in order.
package kitetest

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"strings"
	"sync"
	"testing"
	"time"
)

// IST is India Standard Time, the zone of every timestamp Kite writes. A
// fixed zone, because India has no daylight saving and the machine may have
// no tzdata.
var IST = time.FixedZone("IST", 5*3600+30*60)

// kiteTime is the layout of Kite's timestamps: IST wall time without a zone.
const kiteTime = "2006-01-02 15:04:05"

// Call is one HTTP request the fake received.
type Call struct {
	Method string
	Path   string
	At     time.Time // by the server's clock (see SetNow)
	// Status is the HTTP status answered; -1 when the connection was
	// dropped without an answer.
	Status int
	// ErrorType is the error_type of an error answer.
	ErrorType string
}

// Server is the fake. Create it with New.
type Server struct {
	URL       string // for kiteconnect.Client.SetBaseURI
	APIKey    string
	APISecret string

	http *httptest.Server
	done chan struct{}

	mu            sync.Mutex
	now           func() time.Time
	instruments   map[string]*Instrument // by "EXCHANGE:TRADINGSYMBOL"
	requestTokens map[string]pendingLogin
	sessions      map[string]*session // by access_token
	users         map[string]*account // by user_id
	orders        []*order            // every user's, in placement order
	byID          map[string]*order
	nextOrder     int
	nextTrade     int
	hold          bool
	rejectNext    []string
	faults        faults
	limits        *Limits
	calls         []Call
	placedByTag   map[string]int
	placed        int
	served429     int
	tickers       map[*tickerConn]struct{}
	candles       map[string][]Candle // by "token/interval"
	// sources is the app's IP whitelist for order requests; nil allows
	// every address (AllowSources). sourcesSeen is each order request's
	// source address, in order.
	sources     map[string]bool
	sourcesSeen []string
	gtts        []*gtt // every user's, in creation order (gtt.go)
	nextGTT     int
}

// New starts a fake on loopback for the app apiKey/apiSecret and closes it
// when the test ends (after cleanups registered later, such as stopping a
// ticker). Kite's rate limits are on (DefaultLimits).
func New(tb testing.TB, apiKey, apiSecret string) *Server {
	tb.Helper()
	s := &Server{
		APIKey:        apiKey,
		APISecret:     apiSecret,
		done:          make(chan struct{}),
		now:           time.Now,
		instruments:   map[string]*Instrument{},
		requestTokens: map[string]pendingLogin{},
		sessions:      map[string]*session{},
		users:         map[string]*account{},
		byID:          map[string]*order{},
		placedByTag:   map[string]int{},
		tickers:       map[*tickerConn]struct{}{},
	}
	l := DefaultLimits
	s.limits = &l
	s.http = httptest.NewServer(s)
	s.URL = s.http.URL
	tb.Cleanup(s.Close)
	return s
}

// TickerURL is the root URL for kiteticker.Ticker.SetRootURL. The ticker
// adds api_key and access_token to its query.
func (s *Server) TickerURL() url.URL {
	u, _ := url.Parse(s.URL)
	return url.URL{Scheme: "ws", Host: u.Host, Path: "/"}
}

// Close drops ticker connections and held requests, then stops the server.
// It is called by the test's cleanup; calling it earlier simulates Kite gone.
func (s *Server) Close() {
	s.mu.Lock()
	select {
	case <-s.done:
		s.mu.Unlock()
		return
	default:
	}
	close(s.done)
	conns := make([]*tickerConn, 0, len(s.tickers))
	for c := range s.tickers {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
	s.http.CloseClientConnections()
	s.http.Close()
}

// SetNow sets the clock used for timestamps, session and request-token
// expiry and rate limits, so a test with an injected clock can check pacing
// without waiting.
func (s *Server) SetNow(now func() time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = now
}

// Calls returns every request received so far, in order.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// Requests counts the requests whose method is method ("" for any) and
// whose path matches pattern (path.Match syntax: "/orders/*" matches
// "/orders/regular"; a plain path matches itself).
func (s *Server) Requests(method, pattern string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.calls {
		if (method == "" || c.Method == method) && matchPath(pattern, c.Path) {
			n++
		}
	}
	return n
}

// Served429 counts the 429 answers served, injected or from rate limits.
func (s *Server) Served429() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.served429
}

// OrdersPlaced counts the orders created with tag ("" for untagged ones),
// including those the fake then rejected.
func (s *Server) OrdersPlaced(tag string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.placedByTag[tag]
}

// AllOrdersPlaced counts every order created, whatever its tag.
func (s *Server) AllOrdersPlaced() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.placed
}

func matchPath(pattern, p string) bool {
	if pattern == "" || pattern == p {
		return true
	}
	ok, _ := path.Match(pattern, p)
	return ok
}

// recorder keeps the status and error type answered, for Calls.
type recorder struct {
	http.ResponseWriter
	status    int
	errorType string
	// record adds the call to the server's list, once; drop calls it
	// before the connection closes, so a client that saw the drop finds
	// the call counted (never under the server's lock, which it takes).
	record   func()
	recorded bool
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

// drop closes the connection without an answer, as a lost network does.
func (r *recorder) drop() {
	r.status = -1
	r.record()
	if hj, ok := r.ResponseWriter.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.SetLinger(0)
			}
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

// ServeHTTP authenticates, applies faults and limits, and routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		s.serveTicker(w, r)
		return
	}
	rec := &recorder{ResponseWriter: w}
	rec.record = func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if rec.recorded {
			return
		}
		rec.recorded = true
		if rec.status == http.StatusTooManyRequests {
			s.served429++
		}
		s.calls = append(s.calls, Call{Method: r.Method, Path: r.URL.Path, At: s.now(), Status: rec.status, ErrorType: rec.errorType})
	}
	defer rec.record()
	if !s.delay(r) {
		rec.drop()
		return
	}
	if f := s.failureFor(r); f != nil {
		s.writeFailure(rec, f)
		return
	}
	if v := r.Header.Get("X-Kite-Version"); v != "3" {
		writeError(rec, http.StatusBadRequest, InputException, "Missing or invalid X-Kite-Version header: this API speaks version 3.")
		return
	}
	if r.Method == http.MethodPost && r.URL.Path == "/session/token" {
		s.createSession(rec, r)
		return
	}
	sess := s.authenticate(r)
	if sess == nil {
		writeError(rec, http.StatusForbidden, TokenException, "Incorrect `api_key` or `access_token`.")
		return
	}
	if ip, refused := s.sourceRefused(r); refused {
		writeError(rec, http.StatusForbidden, PermissionException, fmt.Sprintf(SourceIPError, ip))
		return
	}
	if s.rateLimited(sess.userID, classify(r)) {
		writeError(rec, http.StatusTooManyRequests, NetworkException, "Too many requests")
		return
	}
	s.route(rec, r, sess)
}

func (s *Server) route(w *recorder, r *http.Request, sess *session) {
	p := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	m := r.Method
	switch {
	case m == http.MethodDelete && r.URL.Path == "/session/token":
		s.deleteSession(w, r, sess)
	case m == http.MethodGet && r.URL.Path == "/user/profile":
		s.profile(w, sess)
	case m == http.MethodGet && r.URL.Path == "/user/margins":
		s.userMargins(w, sess, "")
	case m == http.MethodGet && len(p) == 3 && p[0] == "user" && p[1] == "margins":
		s.userMargins(w, sess, p[2])
	case m == http.MethodGet && r.URL.Path == "/orders":
		s.listOrders(w, sess)
	case m == http.MethodPost && len(p) == 2 && p[0] == "orders":
		s.placeOrder(w, r, sess, p[1])
	case m == http.MethodPut && len(p) == 3 && p[0] == "orders":
		s.modifyOrder(w, r, sess, p[1], p[2])
	case m == http.MethodDelete && len(p) == 3 && p[0] == "orders":
		s.cancelOrder(w, sess, p[1], p[2])
	case m == http.MethodGet && len(p) == 2 && p[0] == "orders":
		s.orderHistory(w, sess, p[1])
	case m == http.MethodGet && len(p) == 3 && p[0] == "orders" && p[2] == "trades":
		s.listTrades(w, sess, p[1])
	case m == http.MethodGet && r.URL.Path == "/trades":
		s.listTrades(w, sess, "")
	case m == http.MethodPost && r.URL.Path == "/gtt/triggers":
		s.placeGTT(w, r, sess)
	case m == http.MethodGet && r.URL.Path == "/gtt/triggers":
		s.listGTTs(w, sess)
	case m == http.MethodGet && len(p) == 3 && p[0] == "gtt" && p[1] == "triggers":
		s.getGTT(w, sess, p[2])
	case m == http.MethodPut && len(p) == 3 && p[0] == "gtt" && p[1] == "triggers":
		s.modifyGTT(w, r, sess, p[2])
	case m == http.MethodDelete && len(p) == 3 && p[0] == "gtt" && p[1] == "triggers":
		s.deleteGTT(w, sess, p[2])
	case m == http.MethodGet && r.URL.Path == "/portfolio/positions":
		s.positions(w, sess)
	case m == http.MethodPost && r.URL.Path == "/margins/orders":
		s.orderMargins(w, r, sess)
	case m == http.MethodGet && (r.URL.Path == "/quote" || r.URL.Path == "/quote/ltp" || r.URL.Path == "/quote/ohlc"):
		s.quote(w, r)
	case m == http.MethodGet && len(p) == 4 && p[0] == "instruments" && p[1] == "historical":
		s.historical(w, r, p[2], p[3])
	case m == http.MethodGet && r.URL.Path == "/portfolio/holdings":
		s.holdings(w, sess)
	case m == http.MethodGet && len(p) == 2 && p[0] == "instruments":
		s.instrumentsCSV(w, p[1])
	case m == http.MethodGet && r.URL.Path == "/instruments":
		s.instrumentsCSV(w, "")
	default:
		writeError(w, http.StatusNotFound, GeneralException, "Route not found")
	}
}

// Kite's error types, as error_type carries them.
const (
	TokenException      = "TokenException"
	InputException      = "InputException"
	OrderException      = "OrderException"
	NetworkException    = "NetworkException"
	GeneralException    = "GeneralException"
	DataException       = "DataException"
	PermissionException = "PermissionException"
)

func writeData(w http.ResponseWriter, data any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": data})
}

func writeError(w *recorder, code int, errorType, message string) {
	w.errorType = errorType
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"status": "error", "message": message, "data": nil, "error_type": errorType,
	})
}

func inputError(w *recorder, format string, args ...any) {
	writeError(w, http.StatusBadRequest, InputException, fmt.Sprintf(format, args...))
}
