package kite

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/deskbot/deskbot"
	kiteconnect "github.com/zerodha/gokiteconnect/v4"
)

// ErrSession is the error of every call made without a live Kite session
// (Kite's TokenException): the day's session ended (about 06:00 India time)
// or was never made. Only a person's login mends it.
var ErrSession = deskbot.Errorf(deskbot.EUNAUTHORIZED, "the Kite session has ended; an approver must /login")

// IsSession reports whether err says the Kite session must be made again.
func IsSession(err error) bool { return errors.Is(err, ErrSession) }

// lostAnswer reports whether err leaves unknown what Kite did: no answer,
// or one that says nothing about the request (a gateway's, a 5xx).
func lostAnswer(err error) bool {
	var ke kiteconnect.Error
	if !errors.As(err, &ke) {
		return true
	}
	switch ke.ErrorType {
	case kiteconnect.NetworkError, kiteconnect.DataError:
		return ke.Code != http.StatusTooManyRequests
	}
	return ke.Code >= 500
}

// classify turns a failure of op into deskbot's error type. secrets (and
// the access token) are scrubbed from whatever Kite said. A context's end
// is returned as it is, so that callers see errors.Is(err, ctx.Err()).
func (c *Client) classify(ctx context.Context, op string, err error, secrets ...string) error {
	if ctx.Err() != nil {
		return fmt.Errorf("kite %s: %w", op, ctx.Err())
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("kite %s: %w", op, err)
	}
	secrets = append(secrets, c.secrets()...)
	var ke kiteconnect.Error
	if !errors.As(err, &ke) {
		c.log.Warn("kite: call failed", "op", op, "error", scrub(err.Error(), secrets...))
		return deskbot.Errorf(deskbot.EUNAVAILABLE, "Kite did not answer the %s; try again", op)
	}
	msg := scrub(ke.Message, secrets...)
	switch {
	case op != "login" && ke.Code < 500 && ke.Code != http.StatusTooManyRequests && sourceRefusal(ke.Message):
		// Before the session's case: were Kite to call it a
		// TokenException, taking it for an ended session would send
		// everyone to /login, which mends nothing.
		c.log.Error("kite: Kite refused an order request for the address it came from", "op", op, "status", ke.Code, "type", ke.ErrorType, "message", msg)
		return ErrSourceIP
	case ke.ErrorType == kiteconnect.TokenError && op == "login":
		// The person logging in reads it on the callback's page, which
		// says what to do next.
		return deskbot.Errorf(deskbot.EUNAUTHORIZED, "Kite refused the login (%s).", msg)
	case ke.ErrorType == kiteconnect.TokenError:
		return ErrSession
	case ke.ErrorType == kiteconnect.PermissionError || ke.ErrorType == "PermissionException":
		return deskbot.Errorf(deskbot.EUNAUTHORIZED, "Kite does not allow the %s: %s", op, msg)
	case lostAnswer(err):
		c.log.Warn("kite: call failed", "op", op, "status", ke.Code, "type", ke.ErrorType, "message", msg)
		return deskbot.Errorf(deskbot.EUNAVAILABLE, "Kite did not answer the %s (%s); try again", op, msg)
	}
	// InputException, OrderException, MarginException, GeneralException 4xx:
	// the broker's refusal, its reason shown.
	return deskbot.Errorf(deskbot.EINVALID, "Kite refused the %s: %s", op, msg)
}

var urlPattern = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://[^\s"']+`)

const maxMessage = 200

// scrub removes secrets and addresses from a text for an error or a log,
// and clips it: Kite's messages are for people and need no more.
func scrub(s string, secrets ...string) string {
	for _, sec := range secrets {
		if len(sec) >= 4 {
			s = strings.ReplaceAll(s, sec, "[redacted]")
		}
	}
	s = urlPattern.ReplaceAllString(s, "[address]")
	return clip(strings.TrimSpace(s), maxMessage)
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
