package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// Each desk's inbox is a stream read by one consumer group with one fixed
// consumer name (keys.go). Acknowledged triggers are deleted, so the
// stream's length is what is queued or in hand.

// Enqueue queues t for its desk, giving it an id and creation time if it has
// none.
func (s *Store) Enqueue(ctx context.Context, t deskbot.Trigger) error {
	if t.Desk == "" {
		return deskbot.Errorf(deskbot.EINVALID, "A trigger needs a desk")
	}
	if t.ID == "" {
		t.ID = uuid.NewString()
	}
	if t.CreatedAt.IsZero() {
		t.CreatedAt = time.Now()
	}
	t.CreatedAt = t.CreatedAt.UTC()
	data, err := encode(t)
	if err != nil {
		return err
	}
	return s.wrap(s.rdb.XAdd(ctx, &redis.XAddArgs{Stream: s.inboxKey(t.Desk), Values: []any{"data", data}}).Err())
}

// NextTrigger returns the trigger in hand and not acknowledged, if any (a
// crash interrupted its turn), else the next queued one, waiting up to block.
// It returns nil when there is none.
//
// The trigger in hand and the next queued one are asked for in one round
// trip, without waiting: a desk with work queued starts its turn after one
// round trip, not two. When both come back, the one in hand is returned and
// the queued one stays in hand, to be returned (in order) after it. Anything
// else (an empty inbox, a group still to create, a trimmed entry in hand)
// takes the general path, which waits.
func (s *Store) NextTrigger(ctx context.Context, desk string, block time.Duration) (*deskbot.Trigger, error) {
	key := s.inboxKey(desk)
	var msgs []redis.XMessage
	cmds, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, id := range []string{"0", ">"} {
			p.XReadGroup(ctx, &redis.XReadGroupArgs{Group: inboxGroup, Consumer: inboxConsumer, Streams: []string{key, id}, Count: 1, Block: -1})
		}
		return nil
	})
	if err == nil || err == redis.Nil {
		for _, c := range cmds {
			if res, _ := c.(*redis.XStreamSliceCmd).Result(); len(res) > 0 && len(res[0].Messages) > 0 {
				msgs = res[0].Messages
				break
			}
		}
	}
	if len(msgs) == 0 || dataOf(msgs[0]) == "" {
		if msgs, err = s.readGroup(ctx, key, inboxGroup, inboxConsumer, 1, block); err != nil || len(msgs) == 0 {
			return nil, err
		}
	}
	var t deskbot.Trigger
	if err := json.Unmarshal([]byte(dataOf(msgs[0])), &t); err != nil {
		return nil, fmt.Errorf("store: decode trigger %s: %w", msgs[0].ID, err)
	}
	t.StreamID = msgs[0].ID
	return &t, nil
}

// AckTrigger marks t handled and deletes it, in one MULTI.
func (s *Store) AckTrigger(ctx context.Context, t *deskbot.Trigger) error {
	if t == nil || t.StreamID == "" {
		return deskbot.Errorf(deskbot.EINVALID, "Only a trigger read from the inbox can be acknowledged")
	}
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		s.ackTrigger(ctx, p, t)
		return nil
	})
	return s.wrap(err)
}

// ackTrigger queues the acknowledgement of t (read from the inbox) on p.
func (s *Store) ackTrigger(ctx context.Context, p redis.Pipeliner, t *deskbot.Trigger) {
	key := s.inboxKey(t.Desk)
	p.XAck(ctx, key, inboxGroup, t.StreamID)
	p.XDel(ctx, key, t.StreamID)
}

// PendingTriggers counts the desk's triggers queued or in hand.
func (s *Store) PendingTriggers(ctx context.Context, desk string) (int64, error) {
	n, err := s.rdb.XLen(ctx, s.inboxKey(desk)).Result()
	return n, s.wrap(err)
}
