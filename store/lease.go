package store

import (
	"context"
	"strconv"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/redis/go-redis/v9"
)

// The leader lease: one key whose value is the holder's fencing token and
// whose TTL is the lease. Taking it hands out the next token of a counter in
// the same script, so tokens only grow and no two holders ever share one; a
// write that only the leader may make carries the token and is refused by
// its script when the lease holds another (transition.lua, PutNoteFenced).
//
// These are a few lines of our own rather than github.com/bsm/redislock:
// redislock takes, renews and releases a lock with a random value, but the
// fencing token (an INCR in the same atomic step as the take) and the fenced
// writes would have to be written beside it anyway, and the value it stores
// would not be the token the writes compare against.

var (
	// KEYS 1 lease, 2 counter; ARGV 1 TTL ms. Returns the new token, or 0
	// when the lease is held.
	acquireScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local token = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], token, 'PX', ARGV[1])
return token`)
	// KEYS 1 lease; ARGV 1 token, 2 TTL ms. 1 when renewed.
	renewScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
return redis.call('PEXPIRE', KEYS[1], ARGV[2])`)
	// KEYS 1 lease; ARGV 1 token. 1 when released.
	releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
return redis.call('DEL', KEYS[1])`)
	// KEYS 1 lease, 2 note; ARGV 1 token, 2 value, 3 TTL ms (0: none). 1
	// when written.
	fencedNoteScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[3] == '0' then redis.call('SET', KEYS[2], ARGV[2]) else redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3]) end
return 1`)
)

// AcquireLease takes the leader lease for ttl if nobody holds it, and
// returns its fencing token; 0 when another process holds it.
func (s *Store) AcquireLease(ctx context.Context, ttl time.Duration) (int64, error) {
	if ttl < time.Millisecond {
		return 0, deskbot.Errorf(deskbot.EINVALID, "A lease lasts at least a millisecond")
	}
	token, err := acquireScript.Run(ctx, s.rdb, []string{s.leaderKey(), s.leaderTermKey()}, ttl.Milliseconds()).Int64()
	return token, s.wrap(err)
}

// RenewLease extends the lease to ttl from now if token still holds it,
// and reports whether it did.
func (s *Store) RenewLease(ctx context.Context, token int64, ttl time.Duration) (bool, error) {
	n, err := renewScript.Run(ctx, s.rdb, []string{s.leaderKey()}, token, ttl.Milliseconds()).Int64()
	return n == 1, s.wrap(err)
}

// ReleaseLease gives the lease up if token holds it, so a standby can take
// it at once; a lease another token holds is left alone.
func (s *Store) ReleaseLease(ctx context.Context, token int64) error {
	return s.wrap(releaseScript.Run(ctx, s.rdb, []string{s.leaderKey()}, token).Err())
}

// LeaseHolder returns the token that holds the lease now, 0 when nobody
// does.
func (s *Store) LeaseHolder(ctx context.Context) (int64, error) {
	v, err := s.rdb.Get(ctx, s.leaderKey()).Result()
	if err == redis.Nil {
		return 0, nil
	}
	if err != nil {
		return 0, s.wrap(err)
	}
	token, _ := strconv.ParseInt(v, 10, 64)
	return token, nil
}

// PutNoteFenced sets note key to value (ttl 0: no expiry) only while token
// holds the leader lease, and reports whether it did: a note only the
// leader may write, such as the Telegram update offset.
func (s *Store) PutNoteFenced(ctx context.Context, key, value string, ttl time.Duration, token int64) (bool, error) {
	n, err := fencedNoteScript.Run(ctx, s.rdb, []string{s.leaderKey(), s.noteKey(key)}, token, value, ttl.Milliseconds()).Int64()
	return n == 1, s.wrap(err)
}
