package store

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// A transition is what a person is told of ("Allowed by Asha"), and Redis
// replicates asynchronously: a primary that dies right after answering can
// take the transition with it when Sentinel (or the Cluster) promotes a
// replica that had not received it. So where the primary has replicas, a
// transition returns only once they have it: WAIT on the connection that
// ran the script, for as many replicas as the primary reports online (INFO
// replication, re-read every replicaRefresh and whenever a WAIT falls
// short, so a replica that left is not waited for). Where there are none
// (a single server, the embedded one) nothing is waited for and nothing is
// paid.

// DefaultWaitTimeout bounds one WAIT when Options.WaitTimeout is not set.
// A replica on a healthy network acknowledges in well under a millisecond;
// one that has not within a second is lagging or gone, and the count is
// read again before waiting more.
const DefaultWaitTimeout = time.Second

// replicaRefresh is how long a count of replicas is trusted.
const replicaRefresh = 5 * time.Second

type replicaCount struct {
	mu sync.Mutex
	n  int
	at time.Time
}

// primary is the client of the server that holds the deployment's keys
// (on a Cluster, the node serving the hash tag's slot).
func (s *Store) primary(ctx context.Context) (*redis.Client, error) {
	switch c := s.rdb.(type) {
	case *redis.ClusterClient:
		return c.MasterForKey(ctx, s.base)
	case *redis.Client:
		return c, nil
	}
	return nil, fmt.Errorf("store: unexpected client %T", s.rdb)
}

// knownReplicas is how many replicas the primary reports online, from the
// last count unless it is stale or fresh is asked for. A count that cannot
// be read keeps the last one.
func (s *Store) knownReplicas(ctx context.Context, p *redis.Client, fresh bool) int {
	if s.embedded {
		return 0
	}
	rc := &s.sh.replicas
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if !fresh && !rc.at.IsZero() && time.Since(rc.at) < replicaRefresh {
		return rc.n
	}
	info, err := p.Info(ctx, "replication").Result()
	if err != nil {
		return rc.n
	}
	rc.n, rc.at = onlineReplicas(info), time.Now()
	return rc.n
}

// onlineReplicas counts the "slaveN:...,state=online,..." lines of INFO
// replication: a replica still loading its first copy cannot acknowledge.
func onlineReplicas(info string) int {
	n := 0
	for _, line := range strings.Split(info, "\n") {
		if strings.HasPrefix(line, "slave") && strings.Contains(line, "state=online") {
			n++
		}
	}
	return n
}

// Replicas is how many replicas a transition waits for now: the primary's
// online replicas, read afresh.
func (s *Store) Replicas(ctx context.Context) (int, error) {
	p, err := s.primary(ctx)
	if err != nil {
		return 0, s.wrap(err)
	}
	return s.knownReplicas(ctx, p, true), nil
}

// runDecisive runs a script that decides something a person will be told
// of, and returns once the primary's replicas have it (see above). It is
// retried as any command is (retry.go); a script that ran is never sent
// again. If the replicas do not acknowledge within RetryFor, the caller
// gets EUNAVAILABLE: the transition is on the primary, not known to be
// anywhere else.
func (s *Store) runDecisive(ctx context.Context, script *redis.Script, keys []string, args ...any) ([]any, error) {
	p, err := s.primary(ctx)
	if err != nil {
		return nil, s.wrap(err)
	}
	n := s.knownReplicas(ctx, p, false)
	if n == 0 {
		res, err := script.Run(ctx, s.rdb, keys, args...).Slice()
		return res, s.wrap(err)
	}
	var res []any
	err = s.retry(ctx, func(ctx context.Context) (bool, error) {
		conn := p.Conn() // WAIT counts the writes of its own connection
		defer conn.Close()
		var err error
		if res, err = script.Run(ctx, conn, keys, args...).Slice(); err != nil {
			return transient(err), err
		}
		return false, s.awaitReplicas(ctx, conn, p, n)
	})
	return res, s.wrap(err)
}

// awaitReplicas waits until n replicas (fewer, if fewer are left) have
// every write conn made.
func (s *Store) awaitReplicas(ctx context.Context, conn *redis.Conn, p *redis.Client, n int) error {
	deadline := time.Now().Add(s.opts.RetryFor)
	for {
		got, err := conn.Wait(ctx, n, s.opts.WaitTimeout).Result()
		if err == nil && int(got) >= n {
			return nil
		}
		if n = s.knownReplicas(ctx, p, true); err == nil && int(got) >= n {
			return nil
		}
		if err != nil || ctx.Err() != nil || time.Now().After(deadline) {
			return fmt.Errorf("%w (the change is on the primary; %d of %d replicas acknowledged it: %v)", errUnavailable, got, n, err)
		}
	}
}
