package store

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/redis/go-redis/v9"
)

// dayCountTTL keeps a day's count past the day in any zone, then lets it go.
const dayCountTTL = 48 * time.Hour

// countScript adds one to a day's count unless it is at the maximum: the
// check and the increment are one step, so orders put forward at once by
// one desk can never pass the maximum together.
var countScript = redis.NewScript(`
local n = tonumber(redis.call('GET', KEYS[1]) or '0')
if n >= tonumber(ARGV[1]) then return {n, 0} end
n = redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {n, 1}`)

// CountOrder counts one more order of desk on day unless max are counted
// already (deskbot.OrderCounter).
func (s *Store) CountOrder(ctx context.Context, desk, day string, max int) (int, bool, error) {
	res, err := countScript.Run(ctx, s.rdb, []string{s.ordersKey(desk, day)}, max, dayCountTTL.Milliseconds()).Int64Slice()
	if err != nil {
		return 0, false, s.wrap(err)
	}
	return int(res[0]), res[1] == 1, nil
}

// addScript adds to a day's running total of notional in one step, so
// orders put forward at once are all counted; the total is kept as Redis
// writes it (INCRBYFLOAT), exact enough for rupees.
var addScript = redis.NewScript(`
local n = redis.call('INCRBYFLOAT', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return n`)

// AddDayNotional adds amount to desk's notional total for day
// (deskbot.OrderCounter).
func (s *Store) AddDayNotional(ctx context.Context, desk, day string, amount float64) (float64, error) {
	res, err := addScript.Run(ctx, s.rdb, []string{s.notionalKey(desk, day)}, strconv.FormatFloat(amount, 'f', -1, 64), dayCountTTL.Milliseconds()).Text()
	if err != nil {
		return 0, s.wrap(err)
	}
	return strconv.ParseFloat(res, 64)
}

// DayNotional is desk's notional total for day, 0 if none
// (deskbot.DayNotional).
func (s *Store) DayNotional(ctx context.Context, desk, day string) (float64, error) {
	res, err := s.rdb.Get(ctx, s.notionalKey(desk, day)).Result()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, s.wrap(err)
	}
	return strconv.ParseFloat(res, 64)
}

var _ deskbot.AccountOrders = (*Store)(nil)

// accountCountScript counts an order tag as one of the account's orders of
// a day, as a member of the day's set: a tag already there is allowed
// again and counted once (a Place asked again, a resend after a lost
// answer), and the check and the adding are one step, so instances
// sending at once can never pass the maximum together.
var accountCountScript = redis.NewScript(`
if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 1 then return {redis.call('SCARD', KEYS[1]), 1} end
local n = redis.call('SCARD', KEYS[1])
if n >= tonumber(ARGV[2]) then return {n, 0} end
redis.call('SADD', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return {n + 1, 1}`)

// CountAccountOrder counts the order tagged tag among the account's orders
// of day unless max are counted already (deskbot.AccountOrders).
func (s *Store) CountAccountOrder(ctx context.Context, day, tag string, max int) (int, bool, error) {
	if tag == "" {
		return 0, false, deskbot.Errorf(deskbot.EINVALID, "an order counted for the account needs its tag")
	}
	res, err := accountCountScript.Run(ctx, s.rdb, []string{s.accountOrdersKey(day)}, tag, max, dayCountTTL.Milliseconds()).Int64Slice()
	if err != nil {
		return 0, false, s.wrap(err)
	}
	return int(res[0]), res[1] == 1, nil
}
