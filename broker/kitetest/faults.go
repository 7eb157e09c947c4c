package kitetest

import (
	"net/http"
	"strings"
	"time"
)

// Failure makes the fake answer matching requests with an error instead of
// serving them. Nothing is done: an injected failure on POST /orders/* places
// no order.
type Failure struct {
	Method string // "" for any
	Path   string // path.Match pattern; "" for every path
	Code   int    // HTTP status: 429, 500, 502, 503, 504, 403...
	// ErrorType defaults to Kite's for the code: NetworkException for 429,
	// 502, 503 and 504, TokenException for 403, InputException for 400,
	// GeneralException otherwise.
	ErrorType string
	Message   string // defaults to Kite's text for the code
	// NoBody answers the status with an empty body, as a gateway in front
	// of Kite does (the client then reports a DataException).
	NoBody bool
	Times  int // how many requests fail; 0 means until ClearFaults
}

// Loss is how LoseAnswers loses the answer to a placed order.
type Loss int

const (
	noLoss Loss = iota
	// LoseByDrop closes the connection without an answer: the client sees
	// a NetworkException ("Request failed.").
	LoseByDrop
	// LoseBy504 answers 504 Gateway Timeout with an empty body: the client
	// sees a DataException ("Error parsing response.").
	LoseBy504
)

// Limits are Kite's rate limits per user, enforced with 429 answers
// (NetworkException "Too many requests"), measured on the server's clock.
// A zero field means no limit of that kind.
type Limits struct {
	OrdersPerSecond int // POST and PUT /orders/*: placements and modifications
	OrdersPerMinute int
	OrdersPerDay    int // past it placements get an InputException, as on Kite
	QuotesPerSecond int // /quote*
	OthersPerSecond int // every other authenticated call
}

// DefaultLimits are Kite's published limits.
var DefaultLimits = Limits{OrdersPerSecond: 10, OrdersPerMinute: 400, OrdersPerDay: 5000, QuotesPerSecond: 1, OthersPerSecond: 10}

type slowRule struct {
	method, pattern string
	d               time.Duration
}

type faults struct {
	slow     []slowRule
	failures []*Failure
	losses   []Loss
	seen     map[string][]time.Time // by user and class, for Limits
}

// Slow holds every request matching method ("" for any) and pattern
// (path.Match syntax) for d before serving it. The request is served after
// the delay even if the client has given up, as Kite's servers carry on with
// an order whose caller timed out.
func (s *Server) Slow(method, pattern string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults.slow = append(s.faults.slow, slowRule{method: method, pattern: pattern, d: d})
}

// Fail queues a failure rule. Rules are matched in the order given.
func (s *Server) Fail(f Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.ErrorType == "" {
		f.ErrorType = errorTypeFor(f.Code)
	}
	if f.Message == "" {
		f.Message = messageFor(f.Code)
	}
	s.faults.failures = append(s.faults.failures, &f)
}

// TooManyRequests answers the next times requests matching method and
// pattern with Kite's 429.
func (s *Server) TooManyRequests(method, pattern string, times int) {
	s.Fail(Failure{Method: method, Path: pattern, Code: http.StatusTooManyRequests, Times: times})
}

// LoseAnswers makes the next times order placements that create an order,
// and modifications that modify one, lose their answer the way given: the
// order exists, or is modified (GET /orders shows it), but the client
// never hears so.
func (s *Server) LoseAnswers(how Loss, times int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range times {
		s.faults.losses = append(s.faults.losses, how)
	}
}

// SetLimits replaces the rate limits; nil turns them off.
func (s *Server) SetLimits(l *Limits) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l != nil {
		c := *l
		l = &c
	}
	s.limits = l
	s.faults.seen = nil
}

// ClearFaults removes every slow, failure and loss rule.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults.slow, s.faults.failures, s.faults.losses = nil, nil, nil
}

// delay applies the Slow rules; false means the server closed meanwhile.
func (s *Server) delay(r *http.Request) bool {
	s.mu.Lock()
	var d time.Duration
	for _, rule := range s.faults.slow {
		if (rule.method == "" || rule.method == r.Method) && matchPath(rule.pattern, r.URL.Path) {
			d += rule.d
		}
	}
	s.mu.Unlock()
	if d == 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.done:
		return false
	}
}

// failureFor consumes and returns the failure rule matching r.
func (s *Server) failureFor(r *http.Request) *Failure {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, f := range s.faults.failures {
		if (f.Method != "" && f.Method != r.Method) || !matchPath(f.Path, r.URL.Path) {
			continue
		}
		out := *f
		if f.Times > 0 {
			f.Times--
			if f.Times == 0 {
				s.faults.failures = append(s.faults.failures[:i:i], s.faults.failures[i+1:]...)
			}
		}
		return &out
	}
	return nil
}

func (s *Server) writeFailure(w *recorder, f *Failure) {
	if f.NoBody {
		w.WriteHeader(f.Code)
		return
	}
	writeError(w, f.Code, f.ErrorType, f.Message)
}

func (s *Server) lossLocked() Loss {
	if len(s.faults.losses) == 0 {
		return noLoss
	}
	l := s.faults.losses[0]
	s.faults.losses = s.faults.losses[1:]
	return l
}

func errorTypeFor(code int) string {
	switch code {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return NetworkException
	case http.StatusForbidden:
		return TokenException
	case http.StatusBadRequest:
		return InputException
	}
	return GeneralException
}

func messageFor(code int) string {
	switch code {
	case http.StatusTooManyRequests:
		return "Too many requests"
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return "Gateway timed out or is unavailable. Try again."
	case http.StatusForbidden:
		return "Incorrect `api_key` or `access_token`."
	}
	return "Something went wrong. Try again."
}

// classify names the rate-limit class of a request.
func classify(r *http.Request) string {
	switch {
	case (r.Method == http.MethodPost || r.Method == http.MethodPut) && strings.HasPrefix(r.URL.Path, "/orders/"):
		return "order"
	case strings.HasPrefix(r.URL.Path, "/quote"):
		return "quote"
	case strings.HasPrefix(r.URL.Path, "/instruments/historical/"):
		return "historical"
	}
	return "other"
}

// rateLimited reports whether a request of class by userID is over the
// limits, and counts it when it is not: a refused request does not use up
// the allowance, so a client that backs off recovers.
func (s *Server) rateLimited(userID, class string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.limits
	if l == nil && class != "historical" {
		return false
	}
	if l == nil {
		l = &Limits{}
	}
	perSec, perMin := l.OthersPerSecond, 0
	switch class {
	case "order":
		perSec, perMin = l.OrdersPerSecond, l.OrdersPerMinute
	case "quote":
		perSec = l.QuotesPerSecond
	case "historical":
		// Kite's pace for candles, always kept: 3 a second.
		perSec = HistoricalPerSecond
	}
	if s.faults.seen == nil {
		s.faults.seen = map[string][]time.Time{}
	}
	key := userID + "|" + class
	now := s.now()
	var recent []time.Time
	inSec := 0
	for _, t := range s.faults.seen[key] {
		if now.Sub(t) < time.Minute {
			recent = append(recent, t)
			if now.Sub(t) < time.Second {
				inSec++
			}
		}
	}
	s.faults.seen[key] = recent
	if (perSec > 0 && inSec >= perSec) || (perMin > 0 && len(recent) >= perMin) {
		return true
	}
	s.faults.seen[key] = append(recent, now)
	return false
}

// dayOrdersLocked counts the user's orders placed on the server's current
// India date.
func (s *Server) dayOrdersLocked(userID string) int {
	today := s.now().In(IST).Format("2006-01-02")
	n := 0
	for _, o := range s.orders {
		if o.UserID == userID && o.PlacedAt.In(IST).Format("2006-01-02") == today {
			n++
		}
	}
	return n
}

func (s *Server) dayLimitLocked() int {
	if s.limits == nil || s.limits.OrdersPerDay == 0 {
		return int(^uint(0) >> 1)
	}
	return s.limits.OrdersPerDay
}
