package store

import (
	"context"
	"time"

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
