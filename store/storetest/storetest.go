// Package storetest opens stores for tests, on the one Redis the test binary
// uses. It finds Redis in this order, once per test binary, on first use:
//
//  1. TEST_REDIS_URL, else REDIS_URL, else redis://127.0.0.1:6379, if it
//     answers;
//  2. else a throwaway redis-server from PATH, on a random loopback port with
//     a random password, which the kernel stops when the test binary exits;
//  3. else the embedded miniredis the service itself runs on without
//     REDIS_URL, shared by the binary's tests through its URL.
//
// TEST_REDIS_CLUSTER_ADDRS (with TEST_REDIS_PASSWORD) names a Redis Cluster
// instead, and then nothing else is tried: the whole suite runs on the
// Cluster (.ci/run starts a throwaway one for the store, gate, bot, broker
// and service packages). Topologies of a test's own (a replicated primary,
// Sentinel, a Cluster) come from topology.go.
//
// The first test to open a store logs which one was used (visible with -v).
// With DESKBOT_REQUIRE_REDIS=1 (as in CI) only the configured Redis will do:
// nothing falls back, and every skip for want of Redis is a failure.
//
// Redis may be shared by every test running on the machine at once, so each
// Store gets its own random key prefix and its keys are deleted when the test
// ends; nothing here ever flushes a database.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/deskbot/deskbot/store"
	"github.com/redis/go-redis/v9"
)

// URL is the Redis the tests use (see the package comment). It may carry a
// password: pass it on, never log it. It is "" on a Cluster: see Env, or
// NeedsURL.
func URL() string { return current().url }

// Env is the service's environment naming the Redis the tests use:
// REDIS_URL, or REDIS_CLUSTER_ADDRS and REDIS_PASSWORD on a Cluster. Values
// may be secrets: pass them on, never log them.
func Env() map[string]string {
	b := current()
	if b.kind == ClusterConfigured {
		return map[string]string{"REDIS_CLUSTER_ADDRS": strings.Join(b.clusterAddrs, ","), "REDIS_PASSWORD": b.password}
	}
	return map[string]string{"REDIS_URL": b.url}
}

// NeedsURL skips t when the tests run on a Cluster, saying why the test
// needs a single server's URL (a proxy in front of it, say).
func NeedsURL(t testing.TB, why string) {
	t.Helper()
	if use(t); Which() == ClusterConfigured {
		t.Skipf("runs on a single Redis only: %s", why)
	}
}

// Which is the kind of Redis the test binary uses.
func Which() Kind { return current().kind }

var sayOnce sync.Once

// use returns the URL of the chosen Redis, saying once per test binary which
// one it is, and skips (or, when Redis is required, fails) t without one.
func use(t testing.TB) string {
	t.Helper()
	b := current()
	sayOnce.Do(func() {
		if b.kind == Unavailable {
			t.Logf("storetest: no Redis: %s", b.why)
		} else {
			t.Logf("storetest: using the %s Redis: %s", b.kind, b.why)
		}
	})
	if b.kind == Unavailable {
		if required() || os.Getenv("TEST_REDIS_CLUSTER_ADDRS") != "" {
			t.Fatalf("redis required (DESKBOT_REQUIRE_REDIS=1) but unavailable: %v", b.err)
		}
		t.Skipf("no Redis, skipping: %v", b.err)
	}
	return b.url
}

// NeedsRealRedis skips t when the test binary runs on the embedded
// miniredis, saying which feature of a real Redis the test needs; with
// DESKBOT_REQUIRE_REDIS=1 it fails instead.
func NeedsRealRedis(t testing.TB, feature string) {
	t.Helper()
	if use(t); Which() != Embedded {
		return
	}
	if required() {
		t.Fatalf("needs a real Redis (%s), but runs on the embedded one", feature)
	}
	t.Skipf("needs a real Redis: the embedded miniredis lacks %s", feature)
}

// MustOpen opens a Store with a unique prefix, deleting its keys and closing
// it when the test ends.
func MustOpen(t testing.TB) *store.Store {
	t.Helper()
	return MustOpenOptions(t, store.Options{})
}

// MustOpenOptions is MustOpen with options (URL and Prefix are overridden).
func MustOpenOptions(t testing.TB, o store.Options) *store.Store {
	t.Helper()
	o.URL, o.Prefix = use(t), RandomPrefix()
	if b := current(); b.kind == ClusterConfigured {
		o.ClusterAddrs, o.Password = b.clusterAddrs, b.password
	}
	s, err := store.Open(context.Background(), o)
	if err != nil {
		t.Fatalf("open store on the %s Redis: %v", Which(), err)
	}
	t.Cleanup(func() {
		deleteKeys(t, s)
		s.Close()
	})
	return s
}

// MustOpenEmbedded opens a Store on its own in-memory miniredis, closed when
// the test ends.
func MustOpenEmbedded(t testing.TB) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), store.Options{Prefix: RandomPrefix()})
	if err != nil {
		t.Fatalf("open embedded store: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// MustReopen opens a second, independent Store on the same Redis and prefix
// as s: another process, or the same one after a restart. It is closed when
// the test ends; the keys are cleaned up by whoever opened s.
func MustReopen(t testing.TB, s *store.Store) *store.Store {
	t.Helper()
	s2, err := s.Reopen(context.Background())
	if err != nil {
		t.Fatalf("reopen store: %v", err)
	}
	t.Cleanup(func() { s2.Close() })
	return s2
}

// RandomPrefix is a fresh key prefix, unique to one test.
func RandomPrefix() string {
	b := make([]byte, 8)
	rand.Read(b)
	return "deskbot-test:" + hex.EncodeToString(b) + ":"
}

// deleteKeys removes every key under s's prefix (its hash tag, so on a
// Cluster they are all on one node; every primary is scanned all the same).
// The test's context is already cancelled when cleanups run, hence
// Background.
func deleteKeys(t testing.TB, s *store.Store) {
	t.Helper()
	ctx := context.Background()
	each := func(ctx context.Context, rdb *redis.Client) error { return deleteMatching(ctx, rdb, s.Key()+"*") }
	var err error
	switch c := s.Client().(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, each)
	case *redis.Client:
		err = each(ctx, c)
	}
	if err != nil {
		t.Errorf("clean up keys under %s: %v", s.Prefix(), err)
	}
}

func deleteMatching(ctx context.Context, rdb *redis.Client, pattern string) error {
	iter := rdb.Scan(ctx, 0, pattern, 1000).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
		if len(keys) == 1000 {
			if err := rdb.Unlink(ctx, keys...).Err(); err != nil {
				return err
			}
			keys = keys[:0]
		}
	}
	if err := iter.Err(); err != nil {
		return err
	}
	if len(keys) > 0 {
		return rdb.Unlink(ctx, keys...).Err()
	}
	return nil
}
