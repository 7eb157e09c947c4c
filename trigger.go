package deskbot

import (
	"context"
	"time"
)

// TriggerKind says what started a desk's turn.
type TriggerKind string

const (
	TriggerMessage    TriggerKind = "message"    // /tell or a reply in the chat
	TriggerSchedule   TriggerKind = "schedule"   // a cron entry fired
	TriggerPermission TriggerKind = "permission" // the response to a held call
	TriggerLapse      TriggerKind = "lapse"      // a held call lapsed
	TriggerFlatten    TriggerKind = "flatten"    // the user flattened the desk, or the harness squared it off
	TriggerHalt       TriggerKind = "halt"       // a risk rule halted the desk
	TriggerWhy        TriggerKind = "why"        // the team asks why a held call (RequestID): a turn with no tools
	TriggerOrder      TriggerKind = "order"      // one of the desk's orders changed state at the broker
	TriggerWatch      TriggerKind = "watch"      // the market crossed a level the desk watches (Watch)
)

// Trigger is one item in a desk's inbox.
type Trigger struct {
	ID        string      `json:"id"` // a UUID, set when queued
	Desk      string      `json:"desk"`
	Kind      TriggerKind `json:"kind"`
	Text      string      `json:"text"` // what the model is told
	From      string      `json:"from,omitempty"`
	RequestID string      `json:"request_id,omitempty"`
	CreatedAt time.Time   `json:"created_at"`
	// StreamID is the inbox entry id, set by the store when read.
	StreamID string `json:"-"`
}

// Inbox is the per-desk queue of triggers as its producers see it. It
// survives restarts: a trigger taken and not acknowledged is taken again
// first. A desk takes its triggers only by opening a turn
// (TurnStore.OpenTurn) and acknowledges them only by closing one
// (TurnStore.CloseTurn).
type Inbox interface {
	Enqueue(ctx context.Context, t Trigger) error
	// PendingTriggers counts triggers queued or in hand for the desk.
	PendingTriggers(ctx context.Context, desk string) (int64, error)
}
