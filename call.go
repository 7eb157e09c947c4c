package deskbot

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
)

// ToolCall is one call a model asked for. Arguments is a JSON object.
type ToolCall struct {
	ID        string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
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
	// Run executes the call. A model's mistake (bad arguments, a failing
	// command) is a ToolResult with IsError; a system failure is an error.
	Run(ctx context.Context, desk string, args json.RawMessage) (ToolResult, error)
}

// ToolRunner runs a call through a desk's registry of tools. The gate uses it
// to run exactly the call that was held.
type ToolRunner interface {
	RunTool(ctx context.Context, desk string, call ToolCall) (ToolResult, error)
}

// CanonicalArguments returns args re-encoded with sorted keys and no spaces,
// so that two calls differing only in formatting compare equal. Numbers keep
// their exact text. Invalid JSON is returned unchanged.
func CanonicalArguments(args json.RawMessage) string {
	canon, _, _ := canonicalArguments(args)
	return canon
}

// canonicalArguments is CanonicalArguments with the value it encoded, so
// that a caller who also shows the arguments (ShownAndCanonicalArguments)
// parses them once; ok is false when args is not JSON (canon is then args
// as they came).
func canonicalArguments(args json.RawMessage) (canon string, v any, ok bool) {
	if len(bytes.TrimSpace(args)) == 0 {
		return "{}", map[string]any{}, true
	}
	d := json.NewDecoder(bytes.NewReader(args))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return string(args), nil, false
	}
	// Whatever follows the first value goes to the tool with it: dropped
	// here, an approver would see {"quantity":1} of {"quantity":1}
	// {"quantity":1000}. Such arguments are shown as they came.
	if _, err := d.Token(); err != io.EOF {
		return string(args), nil, false
	}
	b, err := json.Marshal(v) // maps marshal with sorted keys
	if err != nil {
		return string(args), nil, false
	}
	return string(b), v, true
}
