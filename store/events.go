package store

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/redis/go-redis/v9"
)

// Events are read through consumer groups. A group is created on first use
// from the start of the stream ("0"), so a consumer added after events were
// published still sees them. A consumer first gets back what it was given
// and did not acknowledge (it crashed mid-handling), then new events.

// Publish appends e to the event stream.
func (s *Store) Publish(ctx context.Context, e deskbot.Event) error {
	data, err := encodeEvent(e)
	if err != nil {
		return err
	}
	return s.wrap(s.rdb.XAdd(ctx, s.streamAdd(s.eventsKey(), data)).Err())
}

// storedEvent is an event as the stream keeps it: one-letter keys, a short
// kind code (kindCodes), the time in ms, and no request (read as it stands
// instead). A call's arguments stay raw JSON inside it, never a quoted
// string.
//
// What a request the event names already holds is not repeated: a
// user_request leaves out its trigger, which is its request's (gate.Hold
// makes them one); TriggerOfRequest (the "t" flag) says to take it back
// from the request. A held call's tool_result is kept as said: its text is
// words meant for a model, which the store keeps and never reads. Events
// written when a held result kept only the hold message's words ("h")
// still read (decodeHeldWords).
type storedEvent struct {
	Kind      deskbot.EventKind `json:"k"`
	Desk      string            `json:"d,omitempty"`
	Time      int64             `json:"m"`
	TriggerID string            `json:"g,omitempty"`
	RequestID string            `json:"r,omitempty"`
	Call      *storedCall       `json:"c,omitempty"`
	Result    *storedResult     `json:"o,omitempty"`
	Text      string            `json:"x,omitempty"`
	Picture   string            `json:"p,omitempty"`
	Grant     *deskbot.Grant    `json:"gr,omitempty"` // the grant a call ran under
	// Hold and CallID: a held call's result in the earlier encoding, by
	// its words ("tool id clock") and its call's id; no longer written.
	Hold   string `json:"h,omitempty"`
	CallID string `json:"i,omitempty"`
	// TriggerOfRequest: the trigger is the request's.
	TriggerOfRequest bool `json:"t,omitempty"`
}

type storedCall struct {
	ID        string          `json:"i,omitempty"`
	Name      string          `json:"n"`
	Arguments json.RawMessage `json:"a,omitempty"`
}

type storedResult struct {
	Text    string `json:"x,omitempty"`
	IsError bool   `json:"e,omitempty"`
	Picture string `json:"p,omitempty"`
	Held    bool   `json:"h,omitempty"`
}

// kindCodes are the event kinds as the stream writes them. Entries written
// with the kinds' own names still read (decodeKind), and a kind without a
// code is written by its name.
var kindCodes = map[deskbot.EventKind]deskbot.EventKind{
	deskbot.EventToolCall:         "c",
	deskbot.EventToolResult:       "o",
	deskbot.EventUserRequest:      "u",
	deskbot.EventRequestDecided:   "d",
	deskbot.EventRequestLapsed:    "l",
	deskbot.EventRequestApproved:  "a",
	deskbot.EventDeskMessage:      "m",
	deskbot.EventDeskState:        "s",
	deskbot.EventModelUnreachable: "x",
}

var kindsByCode = func() map[deskbot.EventKind]deskbot.EventKind {
	m := make(map[deskbot.EventKind]deskbot.EventKind, len(kindCodes))
	for k, c := range kindCodes {
		m[c] = k
	}
	return m
}()

func decodeKind(k deskbot.EventKind) deskbot.EventKind {
	if long, ok := kindsByCode[k]; ok {
		return long
	}
	return k
}

func encodeEvent(e deskbot.Event) (string, error) {
	se := storedEvent{Kind: e.Kind, Desk: e.Desk, TriggerID: e.TriggerID, RequestID: e.RequestID, Text: e.Text, Picture: e.Picture, Grant: e.Grant}
	if c, ok := kindCodes[e.Kind]; ok {
		se.Kind = c
	}
	if !e.Time.IsZero() {
		se.Time = e.Time.UnixMilli()
	}
	if e.Kind == deskbot.EventUserRequest && e.RequestID != "" && e.TriggerID != "" {
		se.TriggerID, se.TriggerOfRequest = "", true
	}
	if c := e.Call; c != nil {
		se.Call = &storedCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments}
		if len(c.Arguments) > 0 && !json.Valid(c.Arguments) {
			// Raw JSON must be JSON to sit inside the event: a model's
			// broken arguments are kept as a string instead.
			q, _ := json.Marshal(string(c.Arguments))
			se.Call.Arguments = q
			se.Call.Name = "\x00" + c.Name // marks the arguments as quoted
		}
	}
	if r := e.Result; r != nil {
		se.Result = &storedResult{Text: r.Text, IsError: r.IsError, Picture: r.Picture, Held: r.Held}
	}
	buf := eventBufs.Get().(*[]byte)
	defer eventBufs.Put(buf)
	b, err := appendStoredEvent((*buf)[:0], &se)
	if err != nil {
		return "", fmt.Errorf("store: encode %T: %w", se, err)
	}
	if cap(b) <= maxPooledEvent {
		*buf = b
	}
	return string(b), nil
}

// eventBufs are encodeEvent's scratch buffers: the string it returns is
// the one copy. One grown past maxPooledEvent (a long tool result) is
// left to the collector rather than kept.
var eventBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

const maxPooledEvent = 16 << 10

// decodeEvent decodes a stream entry; held is the request id whose call and
// trigger the event must be completed from (see storedEvent), "" if none.
func decodeEvent(data string) (e deskbot.Event, held string, err error) {
	var se storedEvent
	if err := json.Unmarshal([]byte(data), &se); err != nil {
		return deskbot.Event{}, "", err
	}
	if se.Kind == "" { // the earlier encoding: the event's own JSON
		err := json.Unmarshal([]byte(data), &e)
		return e, "", err
	}
	e = deskbot.Event{Kind: decodeKind(se.Kind), Desk: se.Desk, TriggerID: se.TriggerID, RequestID: se.RequestID, Text: se.Text, Picture: se.Picture, Grant: se.Grant}
	if se.Time != 0 {
		e.Time = time.UnixMilli(se.Time).UTC()
	}
	if se.Hold != "" {
		id, err := decodeHeldWords(&e, se.Hold, se.CallID)
		return e, id, err
	}
	if c := se.Call; c != nil {
		e.Call = &deskbot.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments}
		if name, quoted := strings.CutPrefix(c.Name, "\x00"); quoted {
			var raw string
			if err := json.Unmarshal(c.Arguments, &raw); err != nil {
				return e, "", err
			}
			e.Call.Name, e.Call.Arguments = name, json.RawMessage(raw)
		}
	}
	if r := se.Result; r != nil {
		e.Result = &deskbot.ToolResult{Text: r.Text, IsError: r.IsError, Picture: r.Picture, Held: r.Held}
	}
	if se.TriggerOfRequest {
		held = se.RequestID
	}
	return e, held, nil
}

// ReadEvents returns up to count events for consumer in group: its
// unacknowledged ones if any, else new ones, waiting up to block (no wait
// when block <= 0). Events that name a request carry it as it stands now.
func (s *Store) ReadEvents(ctx context.Context, group, consumer string, count int, block time.Duration) ([]deskbot.Event, error) {
	msgs, err := s.readGroup(ctx, s.eventsKey(), group, consumer, int64(count), block)
	if err != nil {
		return nil, err
	}
	out := make([]deskbot.Event, 0, len(msgs))
	of := make([]string, 0, len(msgs))
	for _, m := range msgs {
		e, held, err := decodeEvent(dataOf(m))
		if err != nil {
			return nil, fmt.Errorf("store: decode event %s: %w", m.ID, err)
		}
		e.ID = m.ID
		out, of = append(out, e), append(of, held)
	}
	return out, s.hydrate(ctx, out, of)
}

// ReadEventsAfter reads the group's events for consumer without the
// pending-first rule of ReadEvents, so a consumer that keeps many events in
// hand can page through them: after ">" returns new events only (waiting up
// to block), any other id returns the consumer's unacknowledged events with
// a greater id ("0" from the first), never new ones. Events whose entry was
// trimmed from the stream come back with no Kind; they cannot be handled and
// may be acknowledged.
func (s *Store) ReadEventsAfter(ctx context.Context, group, consumer, after string, count int, block time.Duration) ([]deskbot.Event, error) {
	if count <= 0 {
		count = 1
	}
	if after != ">" {
		block = -1
	} else if block <= 0 {
		block = -1
	} else if block < time.Millisecond {
		block = time.Millisecond
	}
	msgs, err := s.xreadgroup(ctx, s.eventsKey(), group, consumer, int64(count), after, block)
	if err != nil {
		return nil, err
	}
	out := make([]deskbot.Event, 0, len(msgs))
	of := make([]string, 0, len(msgs))
	for _, m := range msgs {
		var e deskbot.Event
		var held string
		if d := dataOf(m); d != "" {
			if e, held, err = decodeEvent(d); err != nil {
				return nil, fmt.Errorf("store: decode event %s: %w", m.ID, err)
			}
		}
		e.ID = m.ID
		out, of = append(out, e), append(of, held)
	}
	return out, s.hydrate(ctx, out, of)
}

// hydrate fills Event.Request in one pipelined round trip for the batch,
// and completes from its request what an event left to it (of[i], the
// request's id; storedEvent says what).
func (s *Store) hydrate(ctx context.Context, evs []deskbot.Event, of []string) error {
	var ids []string
	var at []int
	for i, e := range evs {
		if id := cmp.Or(e.RequestID, of[i]); id != "" {
			ids, at = append(ids, id), append(at, i)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.HGetAll(ctx, s.requestKey(id))
		}
		return nil
	}); err != nil {
		return s.wrap(err)
	}
	for i, c := range cmds {
		r, err := decodeRequest(ids[i], c.Val())
		if deskbot.ErrorCode(err) == deskbot.ENOTFOUND {
			continue // vanished: the event still says what happened
		} else if err != nil {
			return err
		}
		e := &evs[at[i]]
		if of[at[i]] != "" {
			e.TriggerID = r.TriggerID
			if e.Kind == deskbot.EventToolResult && e.Call != nil {
				e.Call.Arguments = r.Content.Arguments
			}
		}
		if e.RequestID != "" {
			e.Request = r
		}
	}
	return nil
}

// AckEvent acknowledges an event for the group.
func (s *Store) AckEvent(ctx context.Context, group, id string) error {
	return s.wrap(s.rdb.XAck(ctx, s.eventsKey(), group, id).Err())
}

// AckEvents acknowledges events for the group in one round trip (none:
// nothing to do). A reader that handles a batch at once acknowledges it at
// once: one XACK, not one per event.
func (s *Store) AckEvents(ctx context.Context, group string, ids ...string) error {
	if len(ids) == 0 {
		return nil
	}
	return s.wrap(s.rdb.XAck(ctx, s.eventsKey(), group, ids...).Err())
}

// readGroup reads the consumer's pending entries, and only when there are
// none, new entries with BLOCK. Pending entries that were trimmed from the
// stream meanwhile come back without data; they can never be handled, so
// they are acknowledged and dropped.
func (s *Store) readGroup(ctx context.Context, stream, group, consumer string, count int64, block time.Duration) ([]redis.XMessage, error) {
	if count <= 0 {
		count = 1
	}
	for {
		msgs, err := s.xreadgroup(ctx, stream, group, consumer, count, "0", -1)
		if err != nil {
			return nil, err
		}
		if len(msgs) == 0 {
			break
		}
		var live []redis.XMessage
		var gone []string
		for _, m := range msgs {
			if dataOf(m) == "" {
				gone = append(gone, m.ID)
			} else {
				live = append(live, m)
			}
		}
		if len(gone) > 0 {
			if err := s.rdb.XAck(ctx, stream, group, gone...).Err(); err != nil {
				return nil, s.wrap(err)
			}
		}
		if len(live) > 0 {
			return live, nil
		}
	}
	if block <= 0 {
		block = -1 // no BLOCK argument at all: BLOCK 0 would wait forever
	} else if block < time.Millisecond {
		block = time.Millisecond
	}
	return s.xreadgroup(ctx, stream, group, consumer, count, ">", block)
}

// xreadgroup creates the group on NOGROUP and retries once, so groups need
// no setup and come back if their stream was deleted.
func (s *Store) xreadgroup(ctx context.Context, stream, group, consumer string, count int64, id string, block time.Duration) ([]redis.XMessage, error) {
	args := &redis.XReadGroupArgs{Group: group, Consumer: consumer, Streams: []string{stream, id}, Count: count, Block: block}
	for attempt := 0; ; attempt++ {
		res, err := s.rdb.XReadGroup(ctx, args).Result()
		switch {
		case err == redis.Nil:
			return nil, nil
		case err == nil:
			if len(res) == 0 {
				return nil, nil
			}
			return res[0].Messages, nil
		case attempt == 0 && strings.HasPrefix(err.Error(), "NOGROUP"):
			if err := s.makeGroup(ctx, stream, group); err != nil {
				return nil, err
			}
		default:
			return nil, s.wrap(err)
		}
	}
}

// makeGroup makes group on stream (and the stream), reading from its start;
// a group someone else made meanwhile is no error.
func (s *Store) makeGroup(ctx context.Context, stream, group string) error {
	err := s.rdb.XGroupCreateMkStream(ctx, stream, group, "0").Err()
	if err != nil && !strings.HasPrefix(err.Error(), "BUSYGROUP") {
		return s.wrap(err)
	}
	return nil
}
