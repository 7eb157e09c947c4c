package store

// The writes below are the store's test fixtures: the service writes a
// desk's state, its history and its calls' memory only with a turn's other
// writes (AnnounceDeskState, CloseTurn, RecordResult), so these one-by-one
// forms exist for tests that set a scene, and only in tests.

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/deskbot/deskbot"
)

// SetDeskState records what the desk is doing and when it last did something.
func (s *Store) SetDeskState(ctx context.Context, desk string, state deskbot.DeskState, at time.Time) error {
	return s.wrap(s.setDeskState(ctx, s.rdb, desk, state, at).Err())
}

// RememberCall appends c to the trigger's completed calls.
func (s *Store) RememberCall(ctx context.Context, triggerID string, c deskbot.CompletedCall) error {
	data, err := encodeCompleted(c)
	if err != nil {
		return err
	}
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		s.pushCompleted(ctx, p, triggerID, data)
		return nil
	})
	return s.wrap(err)
}

// AppendHistory appends msgs and trims the desk's history to HistoryLimit.
func (s *Store) AppendHistory(ctx context.Context, desk string, msgs ...deskbot.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	vals, err := encodeHistory(msgs)
	if err != nil {
		return err
	}
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		s.pushHistory(ctx, p, desk, vals)
		return nil
	})
	return s.wrap(err)
}

// pushHistory queues on p the append of vals (encodeHistory) to the desk's
// history, trimmed to HistoryLimit.
func (s *Store) pushHistory(ctx context.Context, p redis.Pipeliner, desk string, vals []any) {
	key := s.historyKey(desk)
	p.RPush(ctx, key, vals...)
	p.LTrim(ctx, key, int64(-s.opts.HistoryLimit), -1)
}
