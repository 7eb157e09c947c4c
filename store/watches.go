package store

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// Watches: each desk's in a hash of its own (watches:<desk>, id to the
// JSON Watch), and the desks that have any in a set (watchdesks), so the
// evaluator reads every watch in two round trips. Adding counts and
// writes in one script (a desk's cap cannot be passed by two racing
// calls); firing deletes the watch and queues its trigger in one script
// (a watch fires once, whichever evaluator gets there, and is never lost
// between the two).

var _ deskbot.WatchStore = (*Store)(nil)

// addWatchScript keeps a watch unless its desk has ARGV[3] already; a
// watch kept already (its id) is kept as it is, whatever the count.
// KEYS: the desk's watches, the desks with watches. ARGV: id, JSON, max,
// desk. Returns 1 when kept, 0 when the desk is full.
var addWatchScript = redis.NewScript(`
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then
  return 1
end
if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[3]) then
  return 0
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('SADD', KEYS[2], ARGV[4])
return 1`)

// dropWatchScript deletes a watch and, when that was its desk's last,
// the desk from the set; with a trigger (ARGV[3]) it queues it in the
// desk's inbox in the same step. KEYS: the desk's watches, the desks with
// watches, the desk's inbox. ARGV: id, desk, trigger JSON or "". Returns
// the watch's JSON, false when there was none.
var dropWatchScript = redis.NewScript(`
local w = redis.call('HGET', KEYS[1], ARGV[1])
if not w then
  return false
end
redis.call('HDEL', KEYS[1], ARGV[1])
if redis.call('HLEN', KEYS[1]) == 0 then
  redis.call('SREM', KEYS[2], ARGV[2])
end
if ARGV[3] ~= '' then
  redis.call('XADD', KEYS[3], '*', 'data', ARGV[3])
end
return w`)

// AddWatch keeps w unless its desk has max watches already (ECONFLICT);
// a watch kept already under w.ID is left as it was.
func (s *Store) AddWatch(ctx context.Context, w deskbot.Watch, max int) error {
	if w.ID == "" || deskbot.ValidDeskName(w.Desk) != nil {
		return deskbot.Errorf(deskbot.EINVALID, "A watch needs an id and a desk")
	}
	data, err := encode(w)
	if err != nil {
		return err
	}
	n, err := addWatchScript.Run(ctx, s.rdb, []string{s.watchesKey(w.Desk), s.watchDesksKey()}, w.ID, data, max, w.Desk).Int()
	if err != nil {
		return s.wrap(err)
	}
	if n == 0 {
		return deskbot.Errorf(deskbot.ECONFLICT, "Desk %s has %d watches already, the most it may have (MAX_WATCHES): cancel one with cancel_watch first", w.Desk, max)
	}
	return nil
}

// CancelWatch deletes desk's watch id (ENOTFOUND when it has none).
func (s *Store) CancelWatch(ctx context.Context, desk, id string) (deskbot.Watch, error) {
	w, ok, err := s.dropWatch(ctx, desk, id, "")
	if err == nil && !ok {
		err = deskbot.Errorf(deskbot.ENOTFOUND, "Desk %s has no watch %s (it fired, was cancelled, or never was)", desk, id)
	}
	return w, err
}

// FireWatch deletes w and queues t in its desk's inbox, atomically.
func (s *Store) FireWatch(ctx context.Context, w deskbot.Watch, t deskbot.Trigger) (bool, error) {
	t.Desk = w.Desk
	if t.ID == "" {
		t.ID = uuid.NewString()
	}
	if t.CreatedAt.IsZero() {
		t.CreatedAt = time.Now()
	}
	t.CreatedAt = t.CreatedAt.UTC()
	data, err := encode(t)
	if err != nil {
		return false, err
	}
	_, ok, err := s.dropWatch(ctx, w.Desk, w.ID, data)
	return ok, err
}

func (s *Store) dropWatch(ctx context.Context, desk, id, trigger string) (deskbot.Watch, bool, error) {
	var w deskbot.Watch
	v, err := dropWatchScript.Run(ctx, s.rdb, []string{s.watchesKey(desk), s.watchDesksKey(), s.inboxKey(desk)}, id, desk, trigger).Text()
	if err == redis.Nil {
		return w, false, nil
	} else if err != nil {
		return w, false, s.wrap(err)
	}
	if err := json.Unmarshal([]byte(v), &w); err != nil {
		return w, false, fmt.Errorf("store: decode watch %s: %w", id, err)
	}
	return w, true, nil
}

// Watches is desk's watches, oldest first.
func (s *Store) Watches(ctx context.Context, desk string) ([]deskbot.Watch, error) {
	m, err := s.rdb.HGetAll(ctx, s.watchesKey(desk)).Result()
	if err != nil {
		return nil, s.wrap(err)
	}
	return decodeWatches(m)
}

// AllWatches is every desk's watches, by desk, oldest first.
func (s *Store) AllWatches(ctx context.Context) ([]deskbot.Watch, error) {
	desks, err := s.rdb.SMembers(ctx, s.watchDesksKey()).Result()
	if err != nil {
		return nil, s.wrap(err)
	}
	cmds := make([]*redis.MapStringStringCmd, len(desks))
	if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, d := range desks {
			cmds[i] = p.HGetAll(ctx, s.watchesKey(d))
		}
		return nil
	}); err != nil {
		return nil, s.wrap(err)
	}
	var all []deskbot.Watch
	for _, c := range cmds {
		ws, err := decodeWatches(c.Val())
		if err != nil {
			return nil, err
		}
		all = append(all, ws...)
	}
	slices.SortStableFunc(all, func(a, b deskbot.Watch) int { return cmp.Compare(a.Desk, b.Desk) })
	return all, nil
}

func decodeWatches(m map[string]string) ([]deskbot.Watch, error) {
	ws := make([]deskbot.Watch, 0, len(m))
	for id, v := range m {
		var w deskbot.Watch
		if err := json.Unmarshal([]byte(v), &w); err != nil {
			return nil, fmt.Errorf("store: decode watch %s: %w", id, err)
		}
		ws = append(ws, w)
	}
	slices.SortFunc(ws, func(a, b deskbot.Watch) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return ws, nil
}
