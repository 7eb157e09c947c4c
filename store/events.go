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

func encodeEvent(e deskbot.Event) (string, error) {
	e.ID, e.Request = "", nil // both are filled in on read
	e.Time = e.Time.UTC()
	return encode(e)
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
	for _, m := range msgs {
		var e deskbot.Event
		if err := json.Unmarshal([]byte(dataOf(m)), &e); err != nil {
			return nil, fmt.Errorf("store: decode event %s: %w", m.ID, err)
		}
		e.ID = m.ID
		out = append(out, e)
	}
	return out, s.hydrate(ctx, out)
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
	for _, m := range msgs {
		var e deskbot.Event
		if d := dataOf(m); d != "" {
			if err := json.Unmarshal([]byte(d), &e); err != nil {
				return nil, fmt.Errorf("store: decode event %s: %w", m.ID, err)
			}
		}
		e.ID = m.ID
		out = append(out, e)
	}
	return out, s.hydrate(ctx, out)
}

// hydrate fills Event.Request in one pipelined round trip for the batch.
func (s *Store) hydrate(ctx context.Context, evs []deskbot.Event) error {
	var ids []string
	var at []int
	for i, e := range evs {
		if e.RequestID != "" {
			ids, at = append(ids, e.RequestID), append(at, i)
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
		evs[at[i]].Request = r
	}
	return nil
}

// AckEvent acknowledges an event for the group.
func (s *Store) AckEvent(ctx context.Context, group, id string) error {
	return s.wrap(s.rdb.XAck(ctx, s.eventsKey(), group, id).Err())
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
			err := s.rdb.XGroupCreateMkStream(ctx, stream, group, "0").Err()
			if err != nil && !strings.HasPrefix(err.Error(), "BUSYGROUP") {
				return nil, s.wrap(err)
			}
		default:
			return nil, s.wrap(err)
		}
	}
}
