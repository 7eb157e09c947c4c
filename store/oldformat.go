package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/words"
	"github.com/redis/go-redis/v9"
)

// Requests written before the compact encoding kept their creation data as
// JSON in "data" and long field names. Such a request is still read as it
// is, and at Open every one still indexed (open, running, or a denial
// waiting for its reason) is rewritten in the compact encoding, so that the
// transitions' scripts, which read only the compact fields, find it. Closed
// old requests are left as they are until their retention ends.
const oldData = "data"

type oldCreation struct {
	ID        string    `json:"request_id"`
	Desk      string    `json:"desk"`
	Kind      string    `json:"kind"`
	ToolName  string    `json:"tool_name"`
	CallID    string    `json:"call_id"`
	TriggerID string    `json:"trigger_id,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

func decodeOldRequest(id string, h map[string]string) (*deskbot.Request, error) {
	var c oldCreation
	if err := json.Unmarshal([]byte(h[oldData]), &c); err != nil {
		return nil, fmt.Errorf("store: decode request %s: %w", id, err)
	}
	r := &deskbot.Request{
		ID: id, Desk: c.Desk, Kind: c.Kind, TriggerID: c.TriggerID,
		CreatedAt: msTime(c.CreatedAt), ExpiresAt: msTime(c.ExpiresAt),
		Content:       deskbot.PermissionContent{ToolName: c.ToolName, CallID: c.CallID},
		State:         deskbot.RequestState(h["state"]),
		Decision:      deskbot.Decision(h["decision"]),
		DecidedBy:     h["decided_by"],
		Reason:        h["reason"],
		Response:      h["response"],
		DecisionToken: h["decision_token"],
	}
	if a := h["args"]; a != "" {
		r.Content.Arguments = json.RawMessage(a)
	}
	r.DecidedByID, _ = strconv.ParseInt(h["decided_by_id"], 10, 64)
	r.DecidedAt = msField(h["decided_at"])
	r.DeliveredAt = msField(h["delivered_at"])
	r.DenyDueAt = msField(h["deny_due_at"])
	if res := h["result"]; res != "" {
		r.Result = new(deskbot.ToolResult)
		if err := json.Unmarshal([]byte(res), r.Result); err != nil {
			return nil, fmt.Errorf("store: decode result of request %s: %w", id, err)
		}
	}
	return r, nil
}

// requestFields is r in the compact encoding, as HSET field, value pairs.
func requestFields(r *deskbot.Request) ([]any, error) {
	f, err := appendCreation([]any{fState, string(r.State), fExpiresAt, r.ExpiresAt.UnixMilli(), fDesk, r.Desk}, r)
	if err != nil {
		return nil, err
	}
	if r.Result != nil {
		b, err := json.Marshal(r.Result)
		if err != nil {
			return nil, fmt.Errorf("store: encode result: %w", err)
		}
		f = append(f, fResult, string(b))
	}
	return appendPatch(f, deskbot.RequestPatch{
		Decision: r.Decision, DecidedBy: deskbot.Person{Name: r.DecidedBy, ID: r.DecidedByID}, DecidedAt: r.DecidedAt,
		Reason: r.Reason, Response: r.Response, DeliveredAt: r.DeliveredAt, DenyDueAt: r.DenyDueAt, Token: r.DecisionToken,
	})
}

// migrateScript rewrites one old request if it is still old, keeping its
// time to live, and counts it for its desk when it is open.
var migrateScript = redis.NewScript(`
if redis.call('HEXISTS', KEYS[1], 'data') == 0 then return 0 end
local ttl = redis.call('PTTL', KEYS[1])
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], unpack(ARGV, 3))
if ttl > 0 then redis.call('PEXPIRE', KEYS[1], ttl) end
if ARGV[1] == 'open' then redis.call('HINCRBY', KEYS[2], ARGV[2], 1) end
return 1`)

// MigrateRequests rewrites every indexed request still in the old encoding.
// It reports how many it rewrote. It is safe to run again, and from several
// processes at once.
func (s *Store) MigrateRequests(ctx context.Context) (int, error) {
	var open, denials *redis.StringSliceCmd
	var running *redis.StringSliceCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		open = p.ZRange(ctx, s.openKey(), 0, -1)
		running = p.SMembers(ctx, s.runningKey())
		denials = p.ZRange(ctx, s.denialsKey(), 0, -1)
		return nil
	})
	if err != nil {
		return 0, s.wrap(err)
	}
	ids := append(append(open.Val(), running.Val()...), denials.Val()...)
	if len(ids) == 0 {
		return 0, nil
	}
	old := make([]*redis.BoolCmd, len(ids))
	if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			old[i] = p.HExists(ctx, s.requestKey(id), oldData)
		}
		return nil
	}); err != nil {
		return 0, s.wrap(err)
	}
	n := 0
	for i, id := range ids {
		if !old[i].Val() {
			continue
		}
		h, err := s.rdb.HGetAll(ctx, s.requestKey(id)).Result()
		if err != nil {
			return n, s.wrap(err)
		}
		if h[oldData] == "" {
			continue // migrated meanwhile
		}
		r, err := decodeOldRequest(id, h)
		if err != nil {
			return n, err
		}
		f, err := requestFields(r)
		if err != nil {
			return n, err
		}
		done, err := migrateScript.Run(ctx, s.rdb, []string{s.requestKey(id), s.openByDeskKey()},
			append([]any{string(r.State), r.Desk}, f...)...).Int()
		if err != nil {
			return n, s.wrap(err)
		}
		n += done
	}
	return n, nil
}

// Held calls were once kept by the hold message's words alone (an event's
// "h": "tool id clock"; the call memory's "w": "id clock") and the message
// rebuilt on reading. Nothing writes them any more (the store keeps words
// meant for a model as said, and never reads them); entries still kept
// from then read as they were written, until the events stream's cap and
// the call memory's week drop them.

// decodeHeldWords completes e, an event in that encoding, from its words
// and its call's id, and returns the request id whose call and trigger e
// is completed from.
func decodeHeldWords(e *deskbot.Event, held, callID string) (string, error) {
	f := strings.Split(held, " ")
	if len(f) != 3 {
		return "", fmt.Errorf("held result %q has %d words, not 3", held, len(f))
	}
	e.Call = &deskbot.ToolCall{ID: callID, Name: f[0]}
	e.Result = &deskbot.ToolResult{Text: heldMessage(f[0], f[1], f[2]), Held: true}
	return f[1], nil
}

// heldMessage is the hold message those words stood for, word for word.
func heldMessage(tool, id, clock string) string {
	return words.HoldWords{Tool: tool, RequestID: id, Clock: clock}.Message()
}
