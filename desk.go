package deskbot

import (
	"context"
	"time"
)

// DeskState is what a desk is doing, as shown by /desks.
type DeskState string

const (
	DeskIdle    DeskState = "idle"
	DeskWorking DeskState = "working"
	DeskWaiting DeskState = "waiting for approval"
	DeskPaused  DeskState = "paused"
)

// DeskStatus is a desk's state as the store keeps it.
type DeskStatus struct {
	Desk         string    `json:"desk"`
	State        DeskState `json:"state"`
	Paused       bool      `json:"paused"`
	LastActivity time.Time `json:"last_activity,omitzero"`
}

// DeskStore keeps each desk's state and its pause switch, which survives
// restarts.
type DeskStore interface {
	DeskStatus(ctx context.Context, desk string) (DeskStatus, error)
	SetDeskState(ctx context.Context, desk string, state DeskState, at time.Time) error
	SetPaused(ctx context.Context, desk string, paused bool, audit AuditEntry) error
}

// Message is one entry of a desk's conversation with its model, in a form
// independent of any provider.
type Message struct {
	Role       string     `json:"role"` // system, user, assistant, tool
	Content    string     `json:"content,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"` // assistant
	ToolCallID string     `json:"tool_call_id,omitempty"`
	IsError    bool       `json:"is_error,omitempty"` // tool
}

// CallMemory remembers the calls completed within a trigger, so that a
// fallback backend or a restarted turn never repeats one.
type CallMemory interface {
	RememberCall(ctx context.Context, triggerID string, c CompletedCall) error
	CompletedCalls(ctx context.Context, triggerID string) ([]CompletedCall, error)
}

// History keeps a desk's bounded conversation.
type History interface {
	AppendHistory(ctx context.Context, desk string, msgs ...Message) error
	// History returns up to the last limit messages, oldest first.
	History(ctx context.Context, desk string, limit int) ([]Message, error)
}

// Notes is a small key-value space for adapters' bookkeeping, such as the
// chat message that shows a request or the update ids already handled.
type Notes interface {
	PutNote(ctx context.Context, key, value string, ttl time.Duration) error
	// PutNoteOnce sets key only if it is absent and reports whether it did.
	PutNoteOnce(ctx context.Context, key, value string, ttl time.Duration) (bool, error)
	// Note returns ENOTFOUND when key is absent.
	Note(ctx context.Context, key string) (string, error)
	DeleteNote(ctx context.Context, key string) error
}
