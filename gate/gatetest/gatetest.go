// Package gatetest helps tests hold and decide calls the way the service
// does, through the gate's own entries.
package gatetest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/gate"
)

// Resolve decides request id on g as a person who saw the call whole, as
// it stands, and confirmed the grant's terms g offers now (an always
// allow). A gate that was not started (gate.Gate.Start) runs an allowed
// call in the caller's goroutine, so the answer's request is then as it
// ran.
func Resolve(ctx context.Context, g deskbot.Gate, id string, d deskbot.Decision, reason string, by deskbot.Person) (*deskbot.Answer, error) {
	seen := deskbot.Seen{Changes: -1, Whole: true}
	if d == deskbot.AlwaysAllow {
		if _, key, _, err := g.GrantTerms(ctx, id); err == nil {
			seen.Terms = key
		}
	}
	return g.Decide(ctx, id, seen, d, reason, by)
}

// Holder holds a desk's call: a *gate.Gate, or a test's fixture that
// reads the call first as the service does where it enters.
type Holder interface {
	Hold(ctx context.Context, desk, triggerID string, call deskbot.ToolCall) (*deskbot.Request, deskbot.ToolResult, error)
}

var _ Holder = (*gate.Gate)(nil)

// MustHold holds desk's call of tool with args (JSON; "" is {}) through
// h, as the desk's turn trigger-1 does, or fails the test; the desk's
// model must be told the request's id.
func MustHold(t testing.TB, h Holder, desk, tool, args string) *deskbot.Request {
	t.Helper()
	if args == "" {
		args = "{}"
	}
	r, res, err := h.Hold(t.Context(), desk, "trigger-1", deskbot.ToolCall{ID: "call_1", Name: tool, Arguments: json.RawMessage(args)})
	if err != nil {
		t.Fatalf("hold %s for %s: %v", tool, desk, err)
	}
	if !strings.Contains(res.Text, r.ID) {
		t.Fatalf("hold message %q does not name request %s", res.Text, r.ID)
	}
	return r
}
