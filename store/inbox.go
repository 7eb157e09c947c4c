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
func (s *Store) NextTrigger(ctx context.Context, desk string, block time.Duration) (*deskbot.Trigger, error) {
	msgs, err := s.readGroup(ctx, s.inboxKey(desk), inboxGroup, inboxConsumer, 1, block)
	if err != nil || len(msgs) == 0 {
		return nil, err
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
	key := s.inboxKey(t.Desk)
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.XAck(ctx, key, inboxGroup, t.StreamID)
		p.XDel(ctx, key, t.StreamID)
		return nil
	})
	return s.wrap(err)
}

// PendingTriggers counts the desk's triggers queued or in hand.
func (s *Store) PendingTriggers(ctx context.Context, desk string) (int64, error) {
	n, err := s.rdb.XLen(ctx, s.inboxKey(desk)).Result()
	return n, s.wrap(err)
}
