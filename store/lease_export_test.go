package store

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// LoseLeaseWrites puts the lease's keys back as they stood before the last
// take, with the term counter at before: what Redis serves after it lost
// that take (a restart without persistence, the last second of an
// append-only file, a replica that lacked it).
func (s *Store) LoseLeaseWrites(ctx context.Context, before int64) error {
	p := s.rdb.TxPipeline()
	p.Del(ctx, s.leaderKey(), s.leaderHolderKey())
	if before == 0 {
		p.Del(ctx, s.leaderTermKey())
	} else {
		p.Set(ctx, s.leaderTermKey(), before, 0)
	}
	_, err := p.Exec(ctx)
	return err
}

// LeaseTerms is the term counter as Redis holds it.
func (s *Store) LeaseTerms(ctx context.Context) (int64, error) {
	n, err := s.rdb.Get(ctx, s.leaderTermKey()).Int64()
	if err == redis.Nil {
		return 0, nil
	}
	return n, err
}
