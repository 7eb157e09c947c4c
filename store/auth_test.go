package store_test

import (
	"testing"

	"github.com/deskbot/deskbot/store/storetest"
	"github.com/redis/go-redis/v9"
)

// A desk's sandbox with the network on can reach Redis on loopback; the
// embedded Redis must refuse a client that lacks its password.
func TestEmbeddedRedisRefusesClientsWithoutPassword(t *testing.T) {
	s := storetest.MustOpenEmbedded(t)
	got, err := s.RequiresAuth(t.Context())
	if err != nil || !got {
		t.Fatalf("RequiresAuth = %v, %v; want true", got, err)
	}
	addr := s.Client().(*redis.Client).Options().Addr
	anon := redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true})
	defer anon.Close()
	if err := anon.Set(t.Context(), s.Key("forged"), "allow", 0).Err(); err == nil {
		t.Fatal("a client without the password wrote to the embedded Redis")
	}
}
