package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/redis/go-redis/v9"
)

// callMemoryTTL bounds how long a trigger's completed calls are kept: a turn
// that has not finished in a week will not be resumed.
const callMemoryTTL = 7 * 24 * time.Hour

// pushCompleted queues on p the append of an encoded completed call
// (encodeCompleted) to the trigger's call memory, with its time to live.
func (s *Store) pushCompleted(ctx context.Context, p redis.Pipeliner, triggerID, data string) {
	key := s.callsKey(triggerID)
	p.RPush(ctx, key, data)
	p.PExpire(ctx, key, callMemoryTTL)
}

// CompletedCalls returns the trigger's completed calls in the order made.
func (s *Store) CompletedCalls(ctx context.Context, triggerID string) ([]deskbot.CompletedCall, error) {
	key := s.callsKey(triggerID)
	vals, err := s.rdb.LRange(ctx, key, 0, -1).Result()
	if err != nil {
		return nil, s.wrap(err)
	}
	return decodeCompletedCalls(key, vals)
}

// decodeCompletedCalls reads the entries of call memory key, whoever read
// them (CompletedCalls, openTurn, takeTurn).
func decodeCompletedCalls(key string, vals []string) ([]deskbot.CompletedCall, error) {
	out := make([]deskbot.CompletedCall, len(vals))
	for i, v := range vals {
		var err error
		if out[i], err = decodeCompleted(v); err != nil {
			return nil, fmt.Errorf("store: decode %s entry: %w", key, err)
		}
	}
	return out, nil
}

// storedCompleted is a completed call as the call memory keeps it: the
// call whole (what a replayed turn matches a repeat by, so nothing of it is
// left to another key) and its result as said, one-letter keys. Entries
// written before this encoding (CompletedCall's own JSON) still read, and
// so do held calls written with only the hold message's request id and
// clock ("w", no longer written; decodeHeldWords).
type storedCompleted struct {
	Call   *storedCall  `json:"c"`
	Result storedResult `json:"o"`
	Words  string       `json:"w,omitempty"`
}

func encodeCompleted(c deskbot.CompletedCall) (string, error) {
	sc := storedCompleted{Call: &storedCall{ID: c.Call.ID, Name: c.Call.Name, Arguments: c.Call.Arguments}, Result: storedResult{
		Text: c.Result.Text, IsError: c.Result.IsError, Picture: c.Result.Picture, Held: c.Result.Held}}
	if len(c.Call.Arguments) > 0 && !json.Valid(c.Call.Arguments) {
		// As in an event: broken arguments are kept as a string.
		q, _ := json.Marshal(string(c.Call.Arguments))
		sc.Call.Name, sc.Call.Arguments = "\x00"+c.Call.Name, q
	}
	return encode(sc)
}

func decodeCompleted(data string) (deskbot.CompletedCall, error) {
	var sc storedCompleted
	if err := json.Unmarshal([]byte(data), &sc); err != nil {
		return deskbot.CompletedCall{}, err
	}
	if sc.Call == nil { // the earlier encoding
		var c deskbot.CompletedCall
		err := json.Unmarshal([]byte(data), &c)
		return c, err
	}
	r := sc.Result
	c := deskbot.CompletedCall{Call: deskbot.ToolCall{ID: sc.Call.ID, Name: sc.Call.Name, Arguments: sc.Call.Arguments},
		Result: deskbot.ToolResult{Text: r.Text, IsError: r.IsError, Picture: r.Picture, Held: r.Held}}
	if name, quoted := strings.CutPrefix(sc.Call.Name, "\x00"); quoted {
		var raw string
		if err := json.Unmarshal(sc.Call.Arguments, &raw); err != nil {
			return c, err
		}
		c.Call.Name, c.Call.Arguments = name, json.RawMessage(raw)
	}
	if sc.Words != "" {
		id, clock, ok := strings.Cut(sc.Words, " ")
		if !ok {
			return c, fmt.Errorf("held call's words %q are not an id and a clock", sc.Words)
		}
		c.Result.Text = heldMessage(c.Call.Name, id, clock)
	}
	return c, nil
}

// encodeHistory is msgs as the history list keeps them.
func encodeHistory(msgs []deskbot.Message) ([]any, error) {
	vals := make([]any, len(msgs))
	for i, m := range msgs {
		data, err := encode(m)
		if err != nil {
			return nil, err
		}
		vals[i] = data
	}
	return vals, nil
}

// historyStart is the list index a read of the last limit messages of a
// desk's history starts at: all of it when limit <= 0.
func historyStart(limit int) int64 {
	if limit <= 0 {
		return 0
	}
	return -int64(limit)
}

// History returns the last limit messages (all kept when limit <= 0),
// oldest first.
func (s *Store) History(ctx context.Context, desk string, limit int) ([]deskbot.Message, error) {
	key := s.historyKey(desk)
	vals, err := s.rdb.LRange(ctx, key, historyStart(limit), -1).Result()
	if err != nil {
		return nil, s.wrap(err)
	}
	return decodeHistory(key, vals)
}
