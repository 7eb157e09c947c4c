package bot

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	tele "gopkg.in/telebot.v3"
)

// TelegramError is a failed Bot API call as the Sender returns it: the
// token is scrubbed from its text, and it unwraps only to telebot's API
// errors (never to a network error, whose text quotes the request URL), so
// errors.Is(err, tele.ErrBlockedByUser) and the like still work.
type TelegramError struct {
	Method string
	Code   int // Telegram's error_code; 0 for a network error
	Msg    string
	err    error
}

func (e *TelegramError) Error() string { return "telegram " + e.Method + ": " + e.Msg }
func (e *TelegramError) Unwrap() error { return e.err }

// TelegramCode returns the Bot API error code in err's chain, 0 if none.
func TelegramCode(err error) int {
	var te *TelegramError
	if errors.As(err, &te) {
		return te.Code
	}
	return 0
}

// networkFailure reports whether err is a call that never got Telegram's
// answer (DNS, a refused or cut connection, a timeout), rather than an
// answer refusing it. An HTTP client error wraps a *url.Error; telebot
// keeps the chain (%w).
func networkFailure(err error) bool {
	var (
		uerr *url.Error
		nerr net.Error
		derr *net.DNSError
		oerr *net.OpError
	)
	return errors.As(err, &uerr) || errors.As(err, &nerr) || errors.As(err, &derr) || errors.As(err, &oerr)
}

// telebot reports API errors it has no variable for as "telegram: <desc> (<code>)".
var trailingCode = regexp.MustCompile(`\((\d{3})\)$`)

// classify says what an error from telebot means: its code, and whether the
// call may succeed if tried again.
func classify(err error) (code int, retry bool) {
	var (
		flood tele.FloodError
		group tele.GroupError
		api   *tele.Error
		uerr  *url.Error
		nerr  net.Error
		serr  *json.SyntaxError
	)
	switch {
	case errors.As(err, &flood):
		return 429, true
	case errors.As(err, &group):
		return 400, false
	case errors.As(err, &api):
		return api.Code, api.Code >= 500
	case errors.As(err, &uerr), errors.As(err, &nerr), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return 0, true
	case errors.As(err, &serr):
		// A body that is not JSON: a proxy's error page, a cut connection.
		return 0, true
	}
	if m := trailingCode.FindStringSubmatch(err.Error()); m != nil {
		code, _ = strconv.Atoi(m[1])
		return code, code >= 500 || code == 429
	}
	return 0, false
}

// isNotModified reports Telegram's "message is not modified", in either of
// its two descriptions: the message already shows what we wanted.
func isNotModified(err error) bool {
	return errors.Is(err, tele.ErrSameMessageContent) || errors.Is(err, tele.ErrMessageNotModified) ||
		strings.Contains(err.Error(), "message is not modified")
}

// scrubbed wraps err for callers and logs, without the token.
func (s *Sender) scrubbed(method string, code int, err error) *TelegramError {
	te := &TelegramError{Method: method, Code: code, Msg: scrubToken(err.Error(), s.b.Token)}
	var (
		flood tele.FloodError
		api   *tele.Error
		group tele.GroupError
	)
	switch {
	case errors.As(err, &flood):
		te.err = flood
	case errors.As(err, &group):
		te.err = group
	case errors.As(err, &api):
		te.err = api
	}
	return te
}

// scrubToken removes the token, and its secret half on its own, from s.
func scrubToken(s, token string) string {
	if token == "" {
		return s
	}
	s = strings.ReplaceAll(s, token, "<token>")
	if _, secret, ok := strings.Cut(token, ":"); ok && len(secret) >= 8 {
		s = strings.ReplaceAll(s, secret, "<token>")
	}
	return s
}
