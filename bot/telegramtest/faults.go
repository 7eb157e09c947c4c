package telegramtest

import (
	"math"
	"net/http"
	"time"
)

// Failure makes the fake answer calls with an error instead of serving them.
type Failure struct {
	// Method names the method to fail. Empty means every method except
	// getUpdates, so that a test's Times is not used up by the poller; name
	// getUpdates explicitly to fail polling.
	Method string
	// Code is the error_code: 429, 500, 502, 400, 403...
	Code int
	// Description defaults to Telegram's text for the code.
	Description string
	// RetryAfter is sent as parameters.retry_after (seconds) with a 429.
	RetryAfter int
	// Times is how many calls fail; 0 means until ClearFailures.
	Times int
}

type hang struct {
	method  string // "" for every method
	d       time.Duration
	release chan struct{}
}

// Limits makes the fake enforce Telegram's flood limits with 429 answers
// (measured on the server's clock), so a test can show a sender never trips
// them.
type Limits struct {
	PerChat           time.Duration // minimum gap between sends to one chat
	PerGroupPerMinute int           // sends to one group (negative id) per minute
}

type faults struct {
	failures []*Failure
	hangs    []*hang
	down     bool
	limits   *Limits
	sends    map[int64][]time.Time // accepted sends per chat, for limits
}

// Fail queues a failure rule. Rules are matched in the order given.
func (s *Server) Fail(f Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.Description == "" {
		f.Description = describe(f.Code, f.RetryAfter)
	}
	s.faults.failures = append(s.faults.failures, &f)
}

// ClearFailures removes every failure rule.
func (s *Server) ClearFailures() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults.failures = nil
}

// Hang holds every call to method ("" for all, getUpdates included) for d
// before serving it, or until Release when d is 0. A call whose client gives
// up while held is not served.
func (s *Server) Hang(method string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults.hangs = append(s.faults.hangs, &hang{method: method, d: d, release: make(chan struct{})})
}

// Release ends every Hang and lets the held calls through.
func (s *Server) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, h := range s.faults.hangs {
		close(h.release)
	}
	s.faults.hangs = nil
}

// Down drops every connection without an answer while on, as when Telegram
// is unreachable: the client sees a network error. Polls are dropped after a
// short pause so that telebot's poller, which retries at once, does not spin.
func (s *Server) Down(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults.down = on
}

// Limit turns on flood-limit enforcement; nil turns it off.
func (s *Server) Limit(l *Limits) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults.limits = l
	s.faults.sends = map[int64][]time.Time{}
}

// failureFor consumes and returns the failure rule matching method. Caller
// holds mu.
func (s *Server) failureFor(method string) *Failure {
	for i, f := range s.faults.failures {
		if f.Method != method && (f.Method != "" || method == "getUpdates") {
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

func (s *Server) hangFor(method string) *hang {
	for _, h := range s.faults.hangs {
		if h.method == "" || h.method == method {
			return h
		}
	}
	return nil
}

// floodWait returns the seconds a send to chatID must wait under the limits,
// 0 when it may go now, and records the send when it may. Caller holds mu.
func (s *Server) floodWait(chatID int64, now time.Time) int {
	l := s.faults.limits
	if l == nil {
		return 0
	}
	past := s.faults.sends[chatID]
	var wait time.Duration
	if n := len(past); n > 0 && l.PerChat > 0 {
		wait = max(wait, past[n-1].Add(l.PerChat).Sub(now))
	}
	if chatID < 0 && l.PerGroupPerMinute > 0 {
		var recent []time.Time
		for _, t := range past {
			if now.Sub(t) < time.Minute {
				recent = append(recent, t)
			}
		}
		past = recent
		if len(recent) >= l.PerGroupPerMinute {
			wait = max(wait, recent[len(recent)-l.PerGroupPerMinute].Add(time.Minute).Sub(now))
		}
	}
	if wait > 0 {
		return int(math.Ceil(wait.Seconds()))
	}
	s.faults.sends[chatID] = append(past, now)
	return 0
}

func describe(code, retryAfter int) string {
	switch code {
	case http.StatusTooManyRequests:
		return "Too Many Requests: retry after " + itoa(retryAfter)
	case http.StatusInternalServerError:
		return "Internal Server Error"
	case http.StatusBadGateway:
		return "Bad Gateway"
	case http.StatusUnauthorized:
		return "Unauthorized"
	case http.StatusForbidden:
		return "Forbidden: bot was kicked from the supergroup chat"
	case http.StatusConflict:
		return "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"
	}
	return "Bad Request: injected failure"
}
