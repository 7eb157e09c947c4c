package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/redis/go-redis/v9"
)

// callMemoryTTL bounds how long a trigger's completed calls are kept: a turn
// that has not finished in a week will not be resumed.
const callMemoryTTL = 7 * 24 * time.Hour

// RememberCall appends c to the trigger's completed calls.
func (s *Store) RememberCall(ctx context.Context, triggerID string, c deskbot.CompletedCall) error {
	data, err := encode(c)
	if err != nil {
		return err
	}
	key := s.callsKey(triggerID)
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.RPush(ctx, key, data)
		p.PExpire(ctx, key, callMemoryTTL)
		return nil
	})
	return s.wrap(err)
}

// CompletedCalls returns the trigger's completed calls in the order made.
func (s *Store) CompletedCalls(ctx context.Context, triggerID string) ([]deskbot.CompletedCall, error) {
	return decodeList[deskbot.CompletedCall](ctx, s, s.callsKey(triggerID), 0)
}

// AppendHistory appends msgs and trims the desk's history to HistoryLimit.
func (s *Store) AppendHistory(ctx context.Context, desk string, msgs ...deskbot.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	vals := make([]any, len(msgs))
	for i, m := range msgs {
		data, err := encode(m)
		if err != nil {
			return err
		}
		vals[i] = data
	}
	key := s.historyKey(desk)
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.RPush(ctx, key, vals...)
		p.LTrim(ctx, key, int64(-s.opts.HistoryLimit), -1)
		return nil
	})
	return s.wrap(err)
}

// History returns the last limit messages (all kept when limit <= 0),
// oldest first.
func (s *Store) History(ctx context.Context, desk string, limit int) ([]deskbot.Message, error) {
	return decodeList[deskbot.Message](ctx, s, s.historyKey(desk), limit)
}

func decodeList[T any](ctx context.Context, s *Store, key string, last int) ([]T, error) {
	start := int64(0)
	if last > 0 {
		start = int64(-last)
	}
	vals, err := s.rdb.LRange(ctx, key, start, -1).Result()
	if err != nil {
		return nil, s.wrap(err)
	}
	out := make([]T, len(vals))
	for i, v := range vals {
		if err := json.Unmarshal([]byte(v), &out[i]); err != nil {
			return nil, fmt.Errorf("store: decode %s entry: %w", key, err)
		}
	}
	return out, nil
}
