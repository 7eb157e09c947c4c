package store_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/store"
	"github.com/deskbot/deskbot/store/storetest"
	"github.com/redis/go-redis/v9"
)

// base is "now" for tests. Request keys expire at an absolute wall-clock time
// (expiry + retention), so test times stay near the real clock.
var base = time.Now().UTC().Truncate(time.Second)

// backends runs f on the test binary's Redis (see storetest) and on the
// embedded miniredis: the Lua and the stream commands must behave the same on
// both.
func backends(t *testing.T, f func(t *testing.T, s *store.Store)) {
	t.Helper()
	t.Run("redis", func(t *testing.T) { f(t, storetest.MustOpen(t)) })
	t.Run("embedded", func(t *testing.T) { f(t, storetest.MustOpenEmbedded(t)) })
}

// newRequest is an open request for desk "alpha" expiring at exp.
func newRequest(id string, exp time.Time) *deskbot.Request {
	return &deskbot.Request{
		ID: id, Desk: "alpha", Kind: deskbot.KindPermission,
		Content: deskbot.PermissionContent{
			ToolName: "flatten_desk", CallID: "call-" + id,
			Arguments: []byte(`{"desk": "alpha",  "qty": 12345678901234567890.123456789, "note": "<b>&"}`),
		},
		CreatedAt: base, ExpiresAt: exp,
	}
}

func mustCreate(t testing.TB, s *store.Store, id string, exp time.Time) *deskbot.Request {
	t.Helper()
	r := newRequest(id, exp)
	audit := deskbot.AuditEntry{Action: "hold", Tool: "flatten_desk", By: "system", At: base}
	ev := deskbot.Event{Kind: deskbot.EventUserRequest, Desk: r.Desk, Time: base}
	if err := s.CreateRequest(t.Context(), r, audit, ev); err != nil {
		t.Fatalf("CreateRequest(%s): %v", id, err)
	}
	return r
}

func mustTransition(t testing.TB, s *store.Store, id string, tr deskbot.Transition) *deskbot.Request {
	t.Helper()
	r, out, err := s.Transition(t.Context(), id, tr)
	if err != nil || out != deskbot.Applied {
		t.Fatalf("Transition(%s, %s) = %v, %v; want Applied", id, tr.Kind, out, err)
	}
	return r
}

// allow is the decision that moves an open request to running.
func allow(now time.Time) deskbot.Transition {
	return deskbot.Transition{
		Kind: deskbot.TransitionAllow, Now: now, UnlessHalted: "alpha",
		Set: deskbot.RequestPatch{Decision: deskbot.AllowOnce, DecidedBy: deskbot.Person{ID: 42, Name: "Asha"}, DecidedAt: now},
	}
}

func ids(rs []*deskbot.Request) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}

func eq[T comparable](a, b []T) bool {
	return fmt.Sprint(a) == fmt.Sprint(b) && len(a) == len(b)
}

func redisZ(at time.Time, id string) redis.Z {
	return redis.Z{Score: float64(at.UnixMilli()), Member: id}
}

func msTrunc(t time.Time) time.Time { return time.UnixMilli(t.UnixMilli()).UTC() }
