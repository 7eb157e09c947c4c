package deskbot

import (
	"context"
	"encoding/json"
)

// ToolCall is one call a model asked for. Arguments is a JSON object.
type ToolCall struct {
	ID        string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	// Order is place_order's arguments as read once where the call
	// entered (package sizing): parsed, checked and sized. nil for any
	// other tool, and for a call not read yet. It is not part of what the
	// model sent, so it is never encoded with the call; a held request
	// keeps it (PermissionContent.Order).
	Order *SizedOrder `json:"-"`
}

// ToolResult is what a tool call produced. IsError marks a result the model
// should treat as a failure (its own mistake or a refused call); system
// failures are Go errors instead.
type ToolResult struct {
	Text    string `json:"text"`
	IsError bool   `json:"is_error,omitempty"`
	Picture string `json:"picture,omitempty"` // a path in the desk's folder
	// Held marks the answer to a call the gate held for a person: the call
	// did not run. It is kept with a completed call, so a replayed turn knows
	// the desk is waiting without reading the words of the answer.
	Held bool `json:"held,omitempty"`
	// Limit marks the answer to a call a hard limit (or a risk rule)
	// refused: the risk rules count it among the desk's refusals in a row.
	Limit bool `json:"limit,omitempty"`
}

type callKey struct{}

// WithCallKey is ctx carrying the key of the call being run: the held
// request's id when the gate runs an allowed call, the turn's trigger and
// the model's call id when a desk runs an unguarded one. A broker places at
// most one order per key (Broker.PlaceOrder), so the key must be the
// call's, stable across a crash and a restart, never made up.
func WithCallKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, callKey{}, key)
}

// CallKey is the key WithCallKey gave ctx; false when none was given (a
// broker tool then refuses to trade rather than make one up).
func CallKey(ctx context.Context) (string, bool) {
	k, ok := ctx.Value(callKey{}).(string)
	return k, ok && k != ""
}

type readOrderKey struct{}

// WithReadOrder is ctx carrying the order of the call being run as it was
// read where the call entered (ToolCall.Order): the registry gives it to
// every tool it runs, so modify_order runs the change the approver was
// shown, from the order as it stood then, and never reads it anew.
func WithReadOrder(ctx context.Context, s *SizedOrder) context.Context {
	return context.WithValue(ctx, readOrderKey{}, s)
}

// ReadOrder is the order WithReadOrder gave ctx; false when none was given.
func ReadOrder(ctx context.Context) (*SizedOrder, bool) {
	s, ok := ctx.Value(readOrderKey{}).(*SizedOrder)
	return s, ok && s != nil
}

// CompletedCall is a call that ran (or was held) within a trigger, with what
// the model was told. A fallback backend and a restarted turn are given these
// so that no call is repeated.
type CompletedCall struct {
	Call   ToolCall   `json:"call"`
	Result ToolResult `json:"result"`
}

// Tool is one capability a desk's model can call.
type Tool interface {
	Name() string
	Description() string
	// Schema is the JSON schema of the arguments object.
	Schema() json.RawMessage
	// CheckArguments refuses a call's arguments before the gate holds it, so
	// an approver is never asked about a call that would fail or that runs
	// as something other than it reads (a broker symbol padded with U+00A0
	// or spelled with a look-alike letter). The error's message is what the
	// model is told; a tool with nothing to check returns nil. It is part of
	// the port, not an optional extra, so a wrapper cannot hide it.
	CheckArguments(args json.RawMessage) error
	// Run executes the call. A model's mistake (bad arguments, a failing
	// command) is a ToolResult with IsError; a system failure is an error.
	Run(ctx context.Context, desk string, args json.RawMessage) (ToolResult, error)
}

// ToolRunner runs a call through a desk's registry of tools. The gate uses it
// to run exactly the call that was held.
type ToolRunner interface {
	RunTool(ctx context.Context, desk string, call ToolCall) (ToolResult, error)
}
