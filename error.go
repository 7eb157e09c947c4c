package deskbot

import (
	"errors"
	"fmt"
)

// Error codes. Only EINTERNAL is a system failure worth logging as an error;
// the others are answers for the person or model that caused them.
const (
	EINVALID      = "invalid"
	ENOTFOUND     = "not_found"
	EUNAUTHORIZED = "unauthorized"
	ECONFLICT     = "conflict"
	EUNAVAILABLE  = "unavailable" // a dependency (Redis, Telegram, a model) is down
	// ESOURCE: the broker refused an order request (a placement, a
	// modification, a cancellation, a GTT's change) for the address it
	// came from, not registered with it (India's static IP rule). Nothing
	// was done, only a change at the broker's console mends it, so it is
	// never retried: it is said, and what it left is left.
	ESOURCE   = "source_refused"
	EINTERNAL = "internal"
)

// Error is the one error type with a code. Message is safe to show to a
// person in the chat or to a model: it never carries secrets.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("deskbot %s: %s", e.Code, e.Message) }

// Errorf builds an *Error.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain, EINTERNAL for
// any other non-nil error, and "" for nil.
func ErrorCode(err error) string {
	var e *Error
	if err == nil {
		return ""
	} else if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the human message of an *Error, or a generic text for
// other errors (their text may hold addresses or secrets).
func ErrorMessage(err error) string {
	var e *Error
	if err == nil {
		return ""
	} else if errors.As(err, &e) {
		return e.Message
	}
	return "Internal error."
}
