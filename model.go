package deskbot

import (
	"context"
	"encoding/json"
)

// ToolSpec describes a tool to a model.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"` // JSON schema of the arguments object
}

// ModelRequest is one step of a turn: the conversation so far and the tools.
type ModelRequest struct {
	System   string
	Messages []Message
	Tools    []ToolSpec
}

// ModelReply is the model's answer: words, tool calls, or both. A reply
// without tool calls ends the turn.
type ModelReply struct {
	Text      string
	ToolCalls []ToolCall
	// Usage is what the provider says the answer cost, a retry of a
	// malformed answer included (zero when it says nothing).
	Usage Usage
}

// Usage counts a model's tokens.
type Usage struct {
	InputTokens, OutputTokens int64
}

// Add is u and v together.
func (u Usage) Add(v Usage) Usage {
	return Usage{InputTokens: u.InputTokens + v.InputTokens, OutputTokens: u.OutputTokens + v.OutputTokens}
}

// Total is every token counted.
func (u Usage) Total() int64 { return u.InputTokens + u.OutputTokens }

// Model is one backend in a desk's chain (an OpenAI-compatible endpoint or
// Anthropic). Complete returns an error with code EUNAVAILABLE for failures
// where the next backend in the chain should take over: connection errors,
// 5xx, timeouts, and tool arguments that were still malformed after a retry.
type Model interface {
	Name() string
	Complete(ctx context.Context, req ModelRequest) (ModelReply, error)
}
