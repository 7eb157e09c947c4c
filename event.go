package deskbot

import (
	"context"
	"time"
)

// EventKind names what happened.
type EventKind string

const (
	EventToolCall         EventKind = "tool_call"
	EventToolResult       EventKind = "tool_result"
	EventUserRequest      EventKind = "user_request"
	EventRequestDecided   EventKind = "request_decided" // any decision; for allows, again once the call ran
	EventRequestLapsed    EventKind = "request_lapsed"
	EventRequestApproved  EventKind = "request_approved" // an approval counted, more needed: the request is still open
	EventRequestChanged   EventKind = "request_changed"  // what an open request would do changed since it was shown: show it again
	EventDeskMessage      EventKind = "desk_message"
	EventDeskState        EventKind = "desk_state"
	EventModelUnreachable EventKind = "model_unreachable"
	EventRisk             EventKind = "risk"   // a risk rule acted on a desk (a halt, a square-off) or cannot be checked: Text says it
	EventBroker           EventKind = "broker" // the broker's session began: Text says it
	// EventBrokerLogin: the broker needs a login (Kite ended the day's
	// session, or none is kept before the open). Text says why; the chat
	// offers the login button with it.
	EventBrokerLogin EventKind = "broker_login"
	EventOrder       EventKind = "order" // a desk's order filled (in part or in full) or was rejected: Text says it in trading words
)

// Event is something the team may want to see. Events are delivered at
// least once: consumers acknowledge after handling and must tolerate a
// repeat (use ID).
type Event struct {
	ID        string      `json:"id,omitempty"` // the stream id, set by the store
	Kind      EventKind   `json:"kind"`
	Desk      string      `json:"desk,omitempty"`
	Time      time.Time   `json:"time"`
	TriggerID string      `json:"trigger_id,omitempty"`
	RequestID string      `json:"request_id,omitempty"`
	Call      *ToolCall   `json:"call,omitempty"`
	Result    *ToolResult `json:"result,omitempty"`
	Text      string      `json:"text,omitempty"`    // desk_message, model_unreachable, risk
	Picture   string      `json:"picture,omitempty"` // desk_message with a photo
	// Grant is the standing grant a tool_result's call ran under, without
	// asking anyone (nil: it was held, or is not guarded).
	Grant *Grant `json:"grant,omitempty"`
	// Request is the request as it stood when the event was read (the store
	// fills it in for events that name one).
	Request *Request `json:"request,omitempty"`
}

// Publisher publishes events.
type Publisher interface {
	Publish(ctx context.Context, e Event) error
}

// EventLog is the durable event stream with consumer groups, so that a
// consumer that was down gets what it missed.
type EventLog interface {
	Publisher
	// ReadEvents returns events for the group: first those delivered to this
	// consumer and not acknowledged, then new ones, waiting up to block.
	ReadEvents(ctx context.Context, group, consumer string, count int, block time.Duration) ([]Event, error)
	AckEvent(ctx context.Context, group, id string) error
}

// Teller tells a desk (a trigger in its inbox) and the chat (an event)
// about one thing once: the first TellOnce of a key queues both, in one
// atomic step, and every later one of that key does nothing and reports
// false. A broker tells order updates through it, so an update read again
// after a crash, a restart or a hand-over is never told twice, and one
// handled is never lost between the desk's inbox and the chat. Either of
// t and e may be nil.
type Teller interface {
	TellOnce(ctx context.Context, key string, t *Trigger, e *Event) (told bool, err error)
}

// ChatBacklog says how many of a desk's chat messages wait to be posted, so
// a desk that says more than the team's chat can take is told to wait.
type ChatBacklog interface {
	ChatBacklog(desk string) int
}
