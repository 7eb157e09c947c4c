package store

import (
	"crypto/rand"
	"fmt"

	"github.com/alicebob/miniredis/v2"
)

// StartEmbedded starts the in-memory Redis the service runs on when
// REDIS_URL is empty (miniredis, with expiring keys and a random password),
// and returns its URL and a function that stops it. Open with an empty URL
// starts one for its Store; storetest starts the same one for tests without a
// real Redis, so they run on what the service runs on.
func StartEmbedded() (url string, stop func(), err error) {
	m := miniredis.NewMiniRedis()
	// By default miniredis TTLs stand still; the service needs notes, call
	// memory and closed requests to expire as on a real Redis.
	m.ClockTTL(true)
	// It listens on loopback, where a desk's sandbox with the network on can
	// reach it: a password nobody else knows keeps desks from writing their
	// own decisions.
	pw := rand.Text()
	m.RequireAuth(pw)
	if err := m.Start(); err != nil {
		return "", nil, fmt.Errorf("store: start embedded redis: %w", err)
	}
	return "redis://:" + pw + "@" + m.Addr(), m.Close, nil
}
