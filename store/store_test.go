package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/store"
	"github.com/deskbot/deskbot/store/storetest"
)

func TestRedisDownIsUnavailable(t *testing.T) {
	const secret = "s3cret-pw"
	t.Run("at open", func(t *testing.T) {
		_, err := store.Open(t.Context(), store.Options{URL: "redis://:" + secret + "@" + deskbottest.RefusedAddr(t)})
		checkUnavailable(t, err, secret)
	})
	t.Run("bad url", func(t *testing.T) {
		_, err := store.Open(t.Context(), store.Options{URL: "http://:" + secret + "@host"})
		if deskbot.ErrorCode(err) != deskbot.EINVALID || strings.Contains(err.Error(), secret) {
			t.Errorf("err = %v; want EINVALID without the password", err)
		}
	})
	t.Run("after open", func(t *testing.T) {
		owner := storetest.MustOpenEmbedded(t)
		s := storetest.MustReopen(t, owner)
		owner.Close() // the server goes away
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		err := s.CreateRequest(ctx, newRequest("r1", base.Add(time.Minute)), deskbot.AuditEntry{}, deskbot.Event{})
		checkUnavailable(t, err, secret)
		_, _, err = s.Transition(ctx, "r1", allow(base))
		checkUnavailable(t, err, secret)
	})
}

func checkUnavailable(t *testing.T, err error, secret string) {
	t.Helper()
	if got := deskbot.ErrorCode(err); got != deskbot.EUNAVAILABLE {
		t.Errorf("code = %q (%v); want %q", got, err, deskbot.EUNAVAILABLE)
	}
	if got := deskbot.ErrorMessage(err); got != "Redis is unavailable" {
		t.Errorf("message = %q; want Redis is unavailable", got)
	}
	if err != nil && strings.Contains(err.Error(), secret) {
		t.Errorf("error text reveals the password: %v", err)
	}
}

func TestPersistence(t *testing.T) {
	aof, rdb, err := storetest.MustOpenEmbedded(t).Persistence(t.Context())
	if aof || rdb || err != nil {
		t.Errorf("embedded = %v, %v, %v; want no persistence", aof, rdb, err)
	}
	storetest.NeedsRealRedis(t, "CONFIG GET, which reads the persistence settings")
	if _, _, err := storetest.MustOpen(t).Persistence(t.Context()); err != nil {
		t.Errorf("real Redis: %v", err)
	}
}
