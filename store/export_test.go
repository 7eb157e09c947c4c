package store

// The writes below are the store's test fixtures: the service writes a
// desk's state, its history and its calls' memory only with a turn's other
// writes (AnnounceDeskState, CloseTurn, RecordResult), so these one-by-one
// forms exist for tests that set a scene, and only in tests.

import (
	"context"
	"sync/atomic"
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

// TakeTurn is OpenTurn's take of a trigger in hand or queued, without
// waiting, and the reads of its turn, in one round trip (takeTurn).
func (s *Store) TakeTurn(ctx context.Context, desk string, historyLimit int, at time.Time) (*deskbot.Trigger, deskbot.DeskStatus, []deskbot.Message, []deskbot.CompletedCall, error) {
	return s.takeTurn(ctx, desk, historyLimit, at)
}

// OpenTurnFor is OpenTurn's reads for a trigger the desk waited for
// (openTurn).
func (s *Store) OpenTurnFor(ctx context.Context, desk, triggerID string, historyLimit int, at time.Time) (deskbot.DeskStatus, []deskbot.Message, []deskbot.CompletedCall, error) {
	return s.openTurn(ctx, desk, triggerID, historyLimit, at)
}

// CountTakes counts from now on the round trips that ask to take a queued
// trigger (takeTurn's script).
func CountTakes(s *Store) *atomic.Int64 {
	n := new(atomic.Int64)
	s.rdb.AddHook(takeCounter{n})
	return n
}

type takeCounter struct{ n *atomic.Int64 }

func (takeCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c takeCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.count(cmd)
		return next(ctx, cmd)
	}
}

func (c takeCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			c.count(cmd)
		}
		return next(ctx, cmds)
	}
}

func (c takeCounter) count(cmd redis.Cmder) {
	if args := cmd.Args(); len(args) > 1 && args[1] == takeScript.Hash() {
		c.n.Add(1)
	}
}

// TransitionCall is what Transition sends Redis for t on request id: its
// kind's script (the file), KEYS and ARGV; or the error that refuses t.
func (s *Store) TransitionCall(id string, t deskbot.Transition) (file string, keys []string, argv []any, err error) {
	k, err := kindOf(&t)
	if err != nil {
		return "", nil, nil, err
	}
	enc, err := s.encodeTransition(id, &t)
	if err != nil {
		return "", nil, nil, err
	}
	return k.file, k.keys(s, id, &t, &enc), k.argv(s, id, &t, &enc), nil
}

// CreateRequestCall is what CreateRequest sends Redis for r: hold.lua's
// KEYS and ARGV.
func (s *Store) CreateRequestCall(r *deskbot.Request, audit deskbot.AuditEntry, ev deskbot.Event) (keys []string, argv []any, err error) {
	return s.createCall(r, audit, ev)
}
