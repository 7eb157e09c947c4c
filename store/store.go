// Package store keeps deskbot's state in Redis: permission requests and their
// indexes, standing grants, the audit trail, the event stream, each desk's
// inbox, status, call memory and history, adapters' notes, and what was
// told once (TellOnce: a broker's order updates, queued to a desk's inbox
// and the event stream together). One *Store implements every storage
// interface of package deskbot, the brokers' order log included
// (deskbot.OrderStore, orderlog.go): no other package talks to Redis.
//
// Keys: every key is named in keys.go, all of a deployment's keys under one
// Redis Cluster hash tag (the prefix in braces), so that every script and
// MULTI touches one slot.
//
// Redis: a single server (URL), a primary watched by Sentinel, or a Cluster
// (client.go), through go-redis's universal client. A command that meets a
// short outage (a restart's LOADING, a refused connection, a failover) is
// retried for a few seconds before anyone is told (retry.go). A transition
// returns only once the replicas the primary has acknowledge it (WAIT,
// replicas.go), so a failover cannot lose a decision a person was told of.
// Connections come from four pools, one a kind of work (pools.go: the work,
// the chat, the lease, the inbox read), so that no kind can take another's;
// idle desks hold none, waiting on one read for all of them (inboxwait.go).
//
// Concurrency: a *Store is safe for concurrent use, and any number of Stores
// (goroutines, processes) may share one Redis and prefix. A request's state
// changes only through one Lua script (Transition), so exactly one of any
// number of racing callers wins, and what a transition carries (audit entry,
// event, trigger, grant) is written in the same atomic step or not at all;
// so is what TellOnce tells, with the key that makes it once.
// Creations and other multi-key writes use a script or MULTI/EXEC for the
// same reason; every one that writes an audit entry is a script, which
// extends the audit chain in the same step (audit.go).
// Lease and Chat are views that share everything with their Store but the
// pool, and are as safe; one goroutine of the Store's own reads for every
// waiting desk's inbox, from the first wait until Close.
//
// Delivery: events and triggers live in Redis Streams read through consumer
// groups, so they are delivered at least once; readers acknowledge after
// handling and get unacknowledged entries again after a crash.
//
// Time: every timestamp stored is milliseconds since the epoch, and "now"
// always comes from the caller, never from Redis, so expiry is testable.
package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/redis/go-redis/v9"
)

// Options configure Open. Zero values take the documented defaults.
//
// Which Redis: URL for one server; SentinelAddrs with MasterName for a
// primary that Sentinel watches; ClusterAddrs for a Cluster. At most one of
// the three; none of them means the embedded in-memory miniredis (the
// caller warns).
type Options struct {
	URL           string   // redis://, rediss:// or unix://
	SentinelAddrs []string // host:port of the sentinels
	MasterName    string   // the primary's name in Sentinel
	ClusterAddrs  []string // host:port of some of the Cluster's nodes
	// Username and Password log in to the data nodes of Sentinel and
	// Cluster, and to the URL's server when the URL carries none.
	// SentinelPassword logs in to the sentinels themselves. Never logged.
	Username, Password, SentinelPassword string

	// Prefix names the deployment: every key is "{prefix}:..." (the
	// trailing ":" of the prefix left out inside the braces); default
	// "deskbot:". It may not contain braces.
	Prefix       string
	Retention    time.Duration // how long a closed request stays readable; default 7*24h
	HistoryLimit int           // messages kept per desk; default 200
	EventsMaxLen int64         // approximate cap of the event stream; default 100000
	// AuditRetention is how long audit entries are kept (trimmed with
	// MINID ~, so a little longer); default DefaultAuditRetention.
	AuditRetention time.Duration
	// RetryFor is how long a command that met a short outage is retried
	// before its caller gets EUNAVAILABLE; default DefaultRetryFor.
	RetryFor time.Duration
	// WaitTimeout bounds one WAIT for the replicas after a transition;
	// default DefaultWaitTimeout.
	WaitTimeout time.Duration
	// Desks is how many desks this process runs: it sizes the work pool
	// (pools.go). 0 sizes it for a process that runs none.
	Desks int
}

// DefaultAuditRetention is how long the audit trail keeps an entry when
// AuditRetention is not set: five years (AUDIT_KEEP's default, 1825 days).
const DefaultAuditRetention = 1825 * 24 * time.Hour

// Store is the Redis implementation of deskbot's storage interfaces.
//
// A Store opened by Open sends its commands through the work pool; Lease and
// Chat are views of it that send theirs through pools of their own
// (pools.go), and everything else is shared.
type Store struct {
	rdb      redis.UniversalClient // the pool this view's commands use
	sh       *shared
	embedded bool
	url      string // kept only for Reopen; never logged or shown
	opts     Options
	base     string // every key starts with it: "{tag}:"
	fixed    fixedKeys
	view     bool // Lease's or Chat's: Close is the opener's
}

// shared is what a Store and its views have in common.
type shared struct {
	stopMini func()      // non-nil when this Store started the embedded server
	up       atomic.Bool // set once Open's ping answered: from then on, blips are retried
	replicas replicaCount
	pools    pools
	hub      *inboxHub
}

// Open connects and pings. An unreachable Redis is an EUNAVAILABLE error,
// given at once (a service that cannot reach Redis at its start says so);
// later blips are retried (retry.go).
func Open(ctx context.Context, o Options) (*Store, error) {
	return open(ctx, o, o.URL == "" && len(o.SentinelAddrs) == 0 && len(o.ClusterAddrs) == 0)
}

func open(ctx context.Context, o Options, embedded bool) (*Store, error) {
	if o.Prefix == "" {
		o.Prefix = "deskbot:"
	}
	if o.Retention <= 0 {
		o.Retention = 7 * 24 * time.Hour
	}
	if o.HistoryLimit <= 0 {
		o.HistoryLimit = 200
	}
	if o.EventsMaxLen <= 0 {
		o.EventsMaxLen = 100000
	}
	if o.AuditRetention <= 0 {
		o.AuditRetention = DefaultAuditRetention
	}
	if o.RetryFor <= 0 {
		o.RetryFor = DefaultRetryFor
	}
	if o.WaitTimeout <= 0 {
		o.WaitTimeout = DefaultWaitTimeout
	}
	base, err := keyBase(o.Prefix)
	if err != nil {
		return nil, err
	}
	s := &Store{opts: o, url: o.URL, embedded: embedded, base: base, sh: &shared{}}
	s.fixed = newFixedKeys(s)
	if embedded && s.url == "" {
		url, stop, err := StartEmbedded()
		if err != nil {
			return nil, err
		}
		s.sh.stopMini, s.url = stop, url
	}
	if err := s.openPools(); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.Ping(ctx); err != nil {
		s.Close()
		return nil, err
	}
	s.sh.up.Store(true)
	if !embedded {
		// Keys named before the hash tag move under it, and open requests
		// written by an earlier version are rewritten in the current
		// encoding, before anything transitions them.
		if _, err := s.migrateKeyNames(ctx); err != nil {
			s.Close()
			return nil, err
		}
		if _, err := s.MigrateRequests(ctx); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// Reopen returns a second, independent client on the same Redis and prefix:
// another process, or this one after a restart. Closing it leaves an
// embedded server running; the Store that started it owns it.
func (s *Store) Reopen(ctx context.Context) (*Store, error) {
	o := s.opts
	o.URL = s.url
	return open(ctx, o, s.embedded)
}

// Close stops the inbox reader, closes every pool and, in embedded mode,
// the in-memory server. A view's Close does nothing: the Store it was
// taken from owns the pools.
func (s *Store) Close() error {
	if s.view {
		return nil
	}
	err := s.closePools()
	s.closeMini()
	return err
}

func (s *Store) closeMini() {
	if s.sh.stopMini != nil {
		s.sh.stopMini()
	}
}

// Ping checks that Redis answers.
func (s *Store) Ping(ctx context.Context) error {
	return s.wrap(s.rdb.Ping(ctx).Err())
}

// Client is the underlying client: a single server's, Sentinel's or a
// Cluster's, with the store's retry of short outages. Only tests use it
// outside this package (to look at what is stored, or to break it).
func (s *Store) Client() redis.UniversalClient { return s.rdb }

// Prefix is the prefix the Store was opened with (REDIS_PREFIX).
func (s *Store) Prefix() string { return s.opts.Prefix }

// Key is the deployment's hash tag followed by parts joined by ":"
// (keys.go says why every key shares the tag), built in one allocation:
// every request key of a hold and a decision is named through it.
func (s *Store) Key(parts ...string) string {
	n := len(s.base) + max(len(parts)-1, 0)
	for _, p := range parts {
		n += len(p)
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(s.base)
	for i, p := range parts {
		if i > 0 {
			b.WriteByte(':')
		}
		b.WriteString(p)
	}
	return b.String()
}

// Embedded reports whether the Store runs on an in-memory server that
// forgets everything when the process ends.
func (s *Store) Embedded() bool { return s.embedded }

// Persistence reports whether Redis writes an append-only file and whether
// it takes RDB snapshots, so the service can warn when a restart of Redis
// would lose held requests. Embedded mode has neither.
func (s *Store) Persistence(ctx context.Context) (aof bool, rdb bool, err error) {
	if s.Embedded() {
		return false, false, nil
	}
	a, err := s.rdb.ConfigGet(ctx, "appendonly").Result()
	if err != nil {
		return false, false, s.wrap(err)
	}
	r, err := s.rdb.ConfigGet(ctx, "save").Result()
	if err != nil {
		return false, false, s.wrap(err)
	}
	return a["appendonly"] == "yes", strings.TrimSpace(r["save"]) != "", nil
}

var errUnavailable = deskbot.Errorf(deskbot.EUNAVAILABLE, "Redis is unavailable")

// wrap turns failures to reach Redis into EUNAVAILABLE, keeping the cause for
// logs (a dial error names host and port, never the password). Replies from
// Redis itself are internal errors: the server is up and said no.
func (s *Store) wrap(err error) error {
	if err == nil {
		return nil
	}
	var de *deskbot.Error
	if errors.As(err, &de) || errors.Is(err, context.Canceled) {
		return err
	}
	var re redis.Error
	if errors.As(err, &re) && !errors.Is(err, redis.ErrPoolTimeout) {
		msg := re.Error()
		if strings.HasPrefix(msg, "LOADING") || strings.HasPrefix(msg, "MASTERDOWN") {
			return fmt.Errorf("%w (%s)", errUnavailable, msg)
		}
		return fmt.Errorf("store: %w", err)
	}
	return fmt.Errorf("%w (%v)", errUnavailable, err)
}

// RequiresAuth reports whether Redis refuses clients without credentials.
// A desk whose sandbox has the network on can reach a Redis on the host's
// loopback; only a password keeps it from writing its own decisions.
func (s *Store) RequiresAuth(ctx context.Context) (bool, error) {
	if s.embedded {
		return true, nil
	}
	anon, err := newClient(s.opts, s.url, true, budget{name: "anon", size: 1, idle: 1, timeout: time.Second})
	if err != nil {
		return false, err
	}
	defer anon.Close()
	err = anon.Ping(ctx).Err()
	if err == nil {
		return false, nil
	}
	if msg := err.Error(); strings.Contains(msg, "NOAUTH") || strings.Contains(msg, "WRONGPASS") || strings.Contains(msg, "auth") {
		return true, nil
	}
	return false, s.wrap(err)
}
