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
	// TokensDay is the India day (2006-01-02) the desk's models last spent
	// tokens on, and Tokens how many they spent that day.
	TokensDay string `json:"tokens_day,omitempty"`
	Tokens    int64  `json:"tokens,omitempty"`
	// Halt is set while a risk rule holds the desk halted (Paused is then
	// true too); only an approver's /resume lifts it.
	Halt *Halt `json:"halt,omitempty"`
	// Restart is where the day's rules count from after the last resume
	// from a halt; nil when the desk was not resumed from one.
	Restart *Restart `json:"restart,omitempty"`
}

// DeskStore keeps each desk's state and its pause switch, which survives
// restarts.
type DeskStore interface {
	DeskStatus(ctx context.Context, desk string) (DeskStatus, error)
	// SetPaused flips the pause switch; resuming a desk a risk rule halted
	// is refused (ECONFLICT): only Resume lifts a halt.
	SetPaused(ctx context.Context, desk string, paused bool, audit AuditEntry) error
	// Resume lifts the desk's halt taken at halt (its Halt.At) and its
	// pause, with its audit entry: the resume of an approver who was shown
	// why the desk was halted. Another halt in force, or none, is
	// ECONFLICT and changes nothing: an approver who read one halt does
	// not lift the next, and two taps resume once.
	Resume(ctx context.Context, desk string, halt time.Time, audit AuditEntry) error
	// History returns up to the desk's last limit messages, oldest first
	// (/desk shows the desk's last turn from it).
	History(ctx context.Context, desk string, limit int) ([]Message, error)
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
	CompletedCalls(ctx context.Context, triggerID string) ([]CompletedCall, error)
	// RecordResult publishes a call's event (nil: published already),
	// remembers the completed call (nil: none) and publishes its result
	// event, in one round trip and in that order: a crash never leaves a
	// result people saw without the memory that stops a repeat.
	RecordResult(ctx context.Context, triggerID string, call *Event, c *CompletedCall, result Event) error
}

// TurnEnd is what a desk's turn ends with, written in this order: its
// closing words (nil: none), its history, the tokens its models spent
// (counted for the desk's India day of At), the state the desk rests in
// (waiting when HeldNow or any request of the desk is open, else idle),
// and last the acknowledgement of Ack (nil: none).
type TurnEnd struct {
	Words   *Event
	History []Message
	Tokens  int64
	HeldNow bool
	At      time.Time
	Ack     *Trigger
}

// OpenedTurn is what a desk's turn starts from: the trigger taken (nil:
// none came), the desk's status as read once it was in hand, its last
// messages of history, and the calls already completed for the trigger.
type OpenedTurn struct {
	Trigger   *Trigger
	Status    DeskStatus
	History   []Message
	Completed []CompletedCall
}

// TurnStore is everything a desk reads and writes, whole: its inbox (its
// schedule queues triggers), its state, its history, its calls' memory, its notes and its events, with a turn opened
// and closed in one call each. A turn is opened only by OpenTurn and its
// trigger acknowledged only by CloseTurn: one way per step, so a wrapper
// that sees one sees every turn. The desks take it as one port, so a
// wrapper either forwards all of it or does not compile.
type TurnStore interface {
	Inbox
	Notes
	Publisher
	CallMemory
	DeskStatus(ctx context.Context, desk string) (DeskStatus, error)
	// OpenTurn takes the desk's trigger in hand, else the next queued one,
	// waiting up to block when there is none, and reads what its turn
	// starts from (OpenedTurn); unless the desk is paused it saves and
	// announces it working at now(). A paused desk keeps the trigger in
	// hand. A nil Trigger when none came.
	OpenTurn(ctx context.Context, desk string, block time.Duration, historyLimit int, now Now) (OpenedTurn, error)
	// AnnounceDeskState saves the desk's state and publishes its event.
	AnnounceDeskState(ctx context.Context, desk string, state DeskState, at time.Time) error
	// CloseTurn writes what a desk's turn ends with, all or nothing, and
	// returns the state the desk rests in. Its Ack is the only
	// acknowledgement of a trigger.
	CloseTurn(ctx context.Context, desk string, end TurnEnd) (DeskState, error)
	// OpenRequestCount counts the desk's open requests.
	OpenRequestCount(ctx context.Context, desk string) (int64, error)
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

// FencedNotes is Notes with the fenced write a leader keeps its own
// bookkeeping with (the bot's update offset). It is one type, not an
// optional method found by assertion, so a wrapper around the store cannot
// hide the fenced write and leave a leader without it.
type FencedNotes interface {
	Notes
	// PutNoteFenced sets key only while token is the lease's current one,
	// and reports whether it did.
	PutNoteFenced(ctx context.Context, key, value string, ttl time.Duration, token int64) (bool, error)
}
