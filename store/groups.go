package store

import (
	"context"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Operations' view of the event stream's consumer groups: a group that
// starts at the end of the stream (a metrics consumer must not count the
// whole history again on its first start), and how far a group is behind.

// backlogCap bounds the work of one EventBacklog call: a scrape must stay
// cheap even when a consumer has been down for days.
const backlogCap = 10000

// CreateEventGroupAtEnd creates group on the event stream starting after
// the newest event, so it sees only events published from now on. An
// existing group is left as it is (it resumes where it stopped).
func (s *Store) CreateEventGroupAtEnd(ctx context.Context, group string) error {
	err := s.rdb.XGroupCreateMkStream(ctx, s.eventsKey(), group, "$").Err()
	if err != nil && strings.HasPrefix(err.Error(), "BUSYGROUP") {
		return nil
	}
	return s.wrap(err)
}

// EventBacklog reports how far group is behind on the event stream: pending
// events were delivered and not acknowledged, undelivered ones were never
// read. A group that does not exist yet has everything undelivered (it will
// start from the beginning). Counts of undelivered events stop at 10000.
func (s *Store) EventBacklog(ctx context.Context, group string) (pending, undelivered int64, err error) {
	key := s.eventsKey()
	groups, err := s.rdb.XInfoGroups(ctx, key).Result()
	if err != nil {
		if strings.Contains(err.Error(), "no such key") {
			return 0, 0, nil
		}
		return 0, 0, s.wrap(err)
	}
	from := "-"
	for _, g := range groups {
		if g.Name == group {
			pending, from = g.Pending, "("+g.LastDeliveredID
			break
		}
	}
	// Redis's own lag is unreliable after trimming and on older servers
	// (and miniredis reports the stream's length), so count what is left.
	msgs, err := s.rdb.XRangeN(ctx, key, from, "+", backlogCap).Result()
	if err != nil && err != redis.Nil {
		return 0, 0, s.wrap(err)
	}
	return pending, int64(len(msgs)), nil
}
