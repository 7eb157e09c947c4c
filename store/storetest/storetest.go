// Package storetest opens stores for tests: on the real Redis at REDIS_URL
// (default redis://127.0.0.1:6379) or on an embedded miniredis.
//
// Redis is shared by every test running on the machine at once, so each
// Store gets its own random key prefix and its keys are deleted when the test
// ends; nothing here ever flushes a database. Without a reachable Redis a
// test is skipped, unless DESKBOT_REQUIRE_REDIS=1 (as in CI), which makes it
// fail instead.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/deskbot/deskbot/store"
)

// URL is the Redis the tests use.
func URL() string {
	if u := os.Getenv("REDIS_URL"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379"
}

// MustOpen opens a Store on the real Redis with a unique prefix, deleting its
// keys and closing it when the test ends.
func MustOpen(t testing.TB) *store.Store {
	t.Helper()
	return MustOpenOptions(t, store.Options{})
}

// MustOpenOptions is MustOpen with options (URL and Prefix are overridden).
func MustOpenOptions(t testing.TB, o store.Options) *store.Store {
	t.Helper()
	o.URL, o.Prefix = URL(), RandomPrefix()
	s, err := store.Open(context.Background(), o)
	if err != nil {
		if os.Getenv("DESKBOT_REQUIRE_REDIS") == "1" {
			t.Fatalf("redis required (DESKBOT_REQUIRE_REDIS=1) but unreachable: %v", err)
		}
		t.Skipf("redis unreachable, skipping (set DESKBOT_REQUIRE_REDIS=1 to fail instead): %v", err)
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

// deleteKeys removes every key under s's prefix. The test's context is
// already cancelled when cleanups run, hence Background.
func deleteKeys(t testing.TB, s *store.Store) {
	t.Helper()
	ctx := context.Background()
	rdb := s.Client()
	iter := rdb.Scan(ctx, 0, s.Prefix()+"*", 1000).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
		if len(keys) == 1000 {
			rdb.Unlink(ctx, keys...)
			keys = keys[:0]
		}
	}
	if err := iter.Err(); err != nil {
		t.Errorf("clean up keys under %s: %v", s.Prefix(), err)
		return
	}
	if len(keys) > 0 {
		if err := rdb.Unlink(ctx, keys...).Err(); err != nil {
			t.Errorf("clean up keys under %s: %v", s.Prefix(), err)
		}
	}
}
