package store

import (
	"context"
	"crypto/rand"
	"fmt"
	"math/big"
	"strconv"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/redis/go-redis/v9"
)

// The leader lease: one key whose value is the holder's fencing token and
// whose TTL is the lease. A write that only the leader may make carries the
// token and is refused by its script when the lease holds another
// (allow.lua, change.lua, deny.lua, interrupt.lua, PutNoteFenced).
//
// A token names one term and no other, even when Redis forgets: it is the
// term's number (a counter taken with the lease in one script, so numbers
// only grow while Redis keeps its writes) followed by termIDDigits random
// digits the taking process drew. Redis can lose the last leadership write
// (a restart without persistence, appendfsync everysec, a failover to a
// replica that lacked it) and then hand the same number again; the random
// digits still differ, so the old leader's renewal and fenced writes are
// refused and two processes never lead with one token. The pair lives in
// one int64 because every fenced write already compares the lease's value
// with the token as a string, and the parts that carry it (Leadership,
// Transition.Fence, a running call's owner) hold an int64.
//
// Beside the lease, leader:holder names who took it (the holder's proof
// of identity, leader.DirLock) with the same TTL. A process that proves it
// is that holder's successor, the only live process that can carry the
// same identity, takes the lease at once with a new term instead of
// waiting out its dead predecessor's lease.
//
// These are a few lines of our own rather than github.com/bsm/redislock:
// redislock takes, renews and releases a lock with a random value, but the
// fencing token (an INCR in the same atomic step as the take) and the fenced
// writes would have to be written beside it anyway, and the value it stores
// would not be the token the writes compare against.

// termIDDigits is how many random decimal digits end a token: 10^10 terms'
// worth of identity, leaving the term number room for 922,337,202 terms
// before the token leaves an int64 (maxTermNumber).
const termIDDigits = 10

// maxTermNumber is the largest term number whose token still fits an int64.
const maxTermNumber = 922337202

var (
	// KEYS 1 lease, 2 counter, 3 holder; ARGV 1 TTL ms, 2 the term's random
	// digits, 3 the taker's identity ('' none), 4 maxTermNumber. Returns
	// {token, 1 when taken from a holder of the same identity}, or {''}
	// when another holds the lease. The token is built as a string: Lua's
	// numbers are doubles and would round it.
	acquireScript = redis.NewScript(`
local held = redis.call('GET', KEYS[1])
local over = 0
if held then
  if ARGV[3] == '' then return {''} end
  local h = redis.call('HMGET', KEYS[3], 'token', 'holder')
  if h[1] ~= held or h[2] ~= ARGV[3] then return {''} end
  over = 1
end
local n = redis.call('INCR', KEYS[2])
if n > tonumber(ARGV[4]) then return redis.error_reply('the leader term counter is exhausted') end
local token = string.format('%d', n) .. ARGV[2]
redis.call('SET', KEYS[1], token, 'PX', ARGV[1])
redis.call('DEL', KEYS[3])
if ARGV[3] ~= '' then
  redis.call('HSET', KEYS[3], 'token', token, 'holder', ARGV[3])
  redis.call('PEXPIRE', KEYS[3], ARGV[1])
end
return {token, over}`)
	// KEYS 1 lease, 2 holder; ARGV 1 token, 2 TTL ms. 1 when renewed.
	renewScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return redis.call('PEXPIRE', KEYS[1], ARGV[2])`)
	// KEYS 1 lease, 2 holder; ARGV 1 token. 1 when released.
	releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[2])
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
	token, _, err := s.TakeLease(ctx, ttl, "")
	return token, err
}

// TakeLease takes the leader lease for ttl, with a new term's token, if
// nobody holds it or if it is held under holder: holder is an identity only
// one live process can have at a time (leader.DirLock), so a lease held
// under it was left by this process's dead predecessor. It records holder
// with the lease ("" records nobody and takes only a free lease). It
// reports the token, 0 when another holds the lease, and whether the lease
// was taken over from holder's predecessor.
func (s *Store) TakeLease(ctx context.Context, ttl time.Duration, holder string) (token int64, tookOver bool, err error) {
	if ttl < time.Millisecond {
		return 0, false, deskbot.Errorf(deskbot.EINVALID, "A lease lasts at least a millisecond")
	}
	id, err := termID()
	if err != nil {
		return 0, false, err
	}
	keys := []string{s.leaderKey(), s.leaderTermKey(), s.leaderHolderKey()}
	res, err := acquireScript.Run(ctx, s.rdb, keys, ttl.Milliseconds(), id, holder, maxTermNumber).Slice()
	if err != nil {
		return 0, false, s.wrap(err)
	}
	if v, _ := res[0].(string); v == "" {
		return 0, false, nil
	}
	token, err = strconv.ParseInt(fmt.Sprint(res[0]), 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("store: the lease's token %v: %w", res[0], err)
	}
	over, _ := res[1].(int64)
	return token, over == 1, nil
}

// termID is termIDDigits random digits, zero-padded: the part of a token
// that a Redis which forgot its last writes cannot repeat.
func termID() (string, error) {
	n, err := rand.Int(rand.Reader, big.NewInt(10_000_000_000))
	if err != nil {
		return "", fmt.Errorf("store: a term's random digits: %w", err)
	}
	return fmt.Sprintf("%0*d", termIDDigits, n), nil
}

// RenewLease extends the lease to ttl from now if token still holds it,
// and reports whether it did.
func (s *Store) RenewLease(ctx context.Context, token int64, ttl time.Duration) (bool, error) {
	n, err := renewScript.Run(ctx, s.rdb, []string{s.leaderKey(), s.leaderHolderKey()}, token, ttl.Milliseconds()).Int64()
	return n == 1, s.wrap(err)
}

// ReleaseLease gives the lease up if token holds it, so a standby can take
// it at once; a lease another token holds is left alone.
func (s *Store) ReleaseLease(ctx context.Context, token int64) error {
	return s.wrap(releaseScript.Run(ctx, s.rdb, []string{s.leaderKey(), s.leaderHolderKey()}, token).Err())
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
