package model

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net"
	"strconv"
	"syscall"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/model/internal/toolargs"
)

// rawCall is a tool call as the provider sent it.
type rawCall struct {
	id, name, args string
}

// checkCalls validates the calls' arguments and gives every call an id. An
// error means the model's arguments were malformed (worth one more try).
func checkCalls(req deskbot.ModelRequest, raw []rawCall) ([]deskbot.ToolCall, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	calls := make([]deskbot.ToolCall, len(raw))
	seen := make(map[string]bool, len(raw))
	for i, r := range raw {
		args, err := toolargs.Parse(r.args)
		if err != nil {
			return nil, deskbot.Errorf(deskbot.EUNAVAILABLE, "arguments of tool call %q %s", r.name, deskbot.ErrorMessage(err))
		}
		id := r.id
		if id == "" || seen[id] {
			id = stableID(req, i, r)
		}
		seen[id] = true
		calls[i] = deskbot.ToolCall{ID: id, Name: r.name, Arguments: args}
	}
	return calls, nil
}

// stableID makes up an id for a call that came without one. It depends only
// on the conversation's length and last message and on the call itself, so
// the same step asked twice gives the same id, and two steps of a turn (or
// two calls of one reply) do not collide.
func stableID(req deskbot.ModelRequest, i int, c rawCall) string {
	h := sha256.New()
	io.WriteString(h, strconv.Itoa(len(req.Messages)))
	if n := len(req.Messages); n > 0 {
		last, _ := json.Marshal(req.Messages[n-1])
		h.Write(last)
	}
	for _, s := range []string{strconv.Itoa(i), c.name, c.args} {
		io.WriteString(h, "\x00"+s)
	}
	return "call_" + hex.EncodeToString(h.Sum(nil)[:12])
}

// netReason names a transport failure without quoting it: the SDK's error
// text carries the URL, which may carry credentials.
func netReason(err error) string {
	var dns *net.DNSError
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.As(err, &dns):
		return "host not found"
	case errors.As(err, &ne) && ne.Timeout():
		return "network timeout"
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET):
		return "connection dropped"
	}
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	if errors.As(err, &se) || errors.As(err, &te) {
		return "malformed response"
	}
	return "request failed"
}
