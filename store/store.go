// Package store keeps deskbot's state in Redis: permission requests and their
// indexes, standing grants, the audit trail, the event stream, each desk's
// inbox, status, call memory and history, and adapters' notes. One *Store
// implements every storage interface of package deskbot.
//
// Keys: every key is named in keys.go. The paper broker shares the Redis
// and the prefix through Client, under a namespace of its own.
//
// Concurrency: a *Store is safe for concurrent use, and any number of Stores
// (goroutines, processes) may share one Redis and prefix. A request's state
// changes only through one Lua script (Transition), so exactly one of any
// number of racing callers wins, and what a transition carries (audit entry,
// event, trigger, grant) is written in the same atomic step or not at all.
// Creations and other multi-key writes use MULTI/EXEC for the same reason.
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
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/deskbot/deskbot"
	"github.com/redis/go-redis/v9"
)

// Options configure Open. Zero values take the documented defaults.
type Options struct {
	URL          string        // redis://...; "" means embedded in-memory miniredis (caller warns)
	Prefix       string        // every key starts with it; default "deskbot:"
	Retention    time.Duration // how long a closed request stays readable; default 7*24h
	HistoryLimit int           // messages kept per desk; default 200
	EventsMaxLen int64         // approximate cap of the event stream; default 100000
	// AuditRetention is how long audit entries are kept (trimmed with
	// MINID ~, so a little longer); default DefaultAuditRetention.
	AuditRetention time.Duration
}

// DefaultAuditRetention is how long the audit trail keeps an entry when
// AuditRetention is not set: 90 days.
const DefaultAuditRetention = 90 * 24 * time.Hour

// Store is the Redis implementation of deskbot's storage interfaces.
type Store struct {
	rdb      *redis.Client
	mini     *miniredis.Miniredis // non-nil when this Store started the embedded server
	embedded bool
	url      string // kept only for Reopen; never logged or shown
	opts     Options
}

// Open connects and pings. An unreachable Redis is an EUNAVAILABLE error.
func Open(ctx context.Context, o Options) (*Store, error) {
	return open(ctx, o, o.URL == "")
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
	s := &Store{opts: o, url: o.URL, embedded: embedded}
	if s.url == "" {
		m, url, err := startEmbedded()
		if err != nil {
			return nil, err
		}
		s.mini, s.url = m, url
	}
	ro, err := redis.ParseURL(s.url)
	if err != nil {
		s.closeMini()
		// The parse error may quote the URL, password and all.
		return nil, deskbot.Errorf(deskbot.EINVALID, "REDIS_URL is not a valid redis:// URL")
	}
	ro.DisableIdentity = true // CLIENT SETINFO is one more round trip per connection, and 7.0 rejects it
	// A hold or a button press waits on these: with Redis down, say so within
	// about half a second rather than after go-redis's default ~2s of redials.
	if ro.DialerRetries == 0 {
		ro.DialerRetries, ro.DialerRetryTimeout = 1, 50*time.Millisecond
	}
	s.rdb = redis.NewClient(ro)
	if err := s.Ping(ctx); err != nil {
		s.Close()
		return nil, err
	}
	if !embedded {
		// Open requests written by an earlier version are rewritten in the
		// current encoding before anything transitions them.
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

// Close closes the client and, in embedded mode, the in-memory server.
func (s *Store) Close() error {
	err := s.rdb.Close()
	s.closeMini()
	return err
}

func (s *Store) closeMini() {
	if s.mini != nil {
		s.mini.Close()
	}
}

// Ping checks that Redis answers.
func (s *Store) Ping(ctx context.Context) error {
	return s.wrap(s.rdb.Ping(ctx).Err())
}

// Client is the underlying client. Its one user outside this package is the
// paper broker (package broker), which keeps its books in the same Redis
// under its own "broker:" keys and changes them with its own scripts,
// through a narrow interface it declares; it never touches the store's
// keys (keys.go), and this package never touches its.
func (s *Store) Client() *redis.Client { return s.rdb }

// Prefix is the prefix every key starts with.
func (s *Store) Prefix() string { return s.opts.Prefix }

// Key is the prefix followed by parts joined by ":".
func (s *Store) Key(parts ...string) string { return s.opts.Prefix + strings.Join(parts, ":") }

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
	ro, err := redis.ParseURL(s.url)
	if err != nil {
		return false, deskbot.Errorf(deskbot.EINVALID, "REDIS_URL is not a valid redis:// URL")
	}
	ro.Username, ro.Password = "", ""
	ro.DisableIdentity = true
	anon := redis.NewClient(ro)
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
