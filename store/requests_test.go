package store_test

import (
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/store"
	"github.com/deskbot/deskbot/store/storetest"
)

func TestCreateAndReadRequest(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		want := mustCreate(t, s, "r1", base.Add(5*time.Minute+123456*time.Nanosecond))
		got, err := s.Request(t.Context(), "r1")
		if err != nil {
			t.Fatal(err)
		}
		if string(got.Content.Arguments) != string(want.Content.Arguments) {
			t.Errorf("arguments = %s; want byte-for-byte %s", got.Content.Arguments, want.Content.Arguments)
		}
		if got.State != deskbot.StateOpen || got.Desk != "alpha" || got.Kind != deskbot.KindPermission ||
			got.Content.ToolName != "flatten_desk" || got.Content.CallID != "call-r1" {
			t.Errorf("request = %+v", got)
		}
		// Times come back as stored: UTC, whole ms, equal to what r was updated to.
		if !got.ExpiresAt.Equal(want.ExpiresAt) || got.ExpiresAt.Location() != time.UTC || want.ExpiresAt.Nanosecond()%1e6 != 0 {
			t.Errorf("expires_at = %v (stored as %v)", got.ExpiresAt, want.ExpiresAt)
		}
		if _, err := s.Request(t.Context(), "nope"); deskbot.ErrorCode(err) != deskbot.ENOTFOUND {
			t.Errorf("unknown request: %v; want ENOTFOUND", err)
		}
	})
}

// A request stays readable for the retention window after its expiry and
// then vanishes by itself.
func TestRequestKeyTTL(t *testing.T) {
	s := storetest.MustOpenOptions(t, store.Options{Retention: time.Hour})
	exp := time.Now().Add(5 * time.Minute)
	mustCreate(t, s, "r1", exp)
	mustTransition(t, s, "r1", allow(time.Now()))
	ttl, err := s.Client().PTTL(t.Context(), s.Key("req", "r1")).Result()
	if err != nil {
		t.Fatal(err)
	}
	want := time.Until(exp.Add(time.Hour))
	if ttl <= 0 || ttl > want+time.Second || ttl < want-5*time.Second {
		t.Errorf("PTTL = %v; want about %v (expiry + retention), kept by the transition", ttl, want)
	}
}

func TestDueRequests(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		for _, c := range []struct {
			id  string
			min int
		}{{"c", 3}, {"a", 1}, {"e", 5}, {"b", 2}, {"d", 4}} {
			mustCreate(t, s, c.id, base.Add(time.Duration(c.min)*time.Minute))
		}
		mustTransition(t, s, "b", allow(base)) // decided: no longer due
		tests := []struct {
			now   time.Time
			limit int
			want  []string
		}{
			{base, 10, nil},
			{base.Add(time.Minute - time.Millisecond), 10, nil},
			{base.Add(time.Minute), 10, []string{"a"}},
			{base.Add(4 * time.Minute), 10, []string{"a", "c", "d"}},
			{base.Add(4 * time.Minute), 2, []string{"a", "c"}},
			{base.Add(time.Hour), 0, []string{"a", "c", "d", "e"}},
		}
		for _, tc := range tests {
			got, err := s.DueRequests(t.Context(), tc.now, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			if !eq(got, tc.want) {
				t.Errorf("DueRequests(+%v, %d) = %v; want %v", tc.now.Sub(base), tc.limit, got, tc.want)
			}
		}
		open, _ := s.OpenRequests(t.Context())
		if want := []string{"a", "c", "d", "e"}; !eq(ids(open), want) {
			t.Errorf("OpenRequests = %v; want %v (soonest expiry first)", ids(open), want)
		}
	})
}

// Every step of a request's life is on the audit trail with who and when.
func TestAuditTrailOfARequest(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		mustCreate(t, s, "r1", base.Add(time.Minute))
		tr := allow(base.Add(time.Second))
		tr.Audit = &deskbot.AuditEntry{Action: "allow_once", Desk: "alpha", By: "Asha (42)", At: base.Add(time.Second)}
		mustTransition(t, s, "r1", tr)
		mustTransition(t, s, "r1", deskbot.Transition{
			Kind: deskbot.TransitionResult, Now: base.Add(2 * time.Second), Set: deskbot.RequestPatch{Result: &deskbot.ToolResult{Text: "ok"}},
			Audit: &deskbot.AuditEntry{Action: "ran", Desk: "alpha", By: "system", At: base.Add(2 * time.Second)},
		})
		type step struct {
			action, by string
			at         time.Duration
		}
		want := []step{{"hold", "system", 0}, {"allow_once", "Asha (42)", time.Second}, {"ran", "system", 2 * time.Second}}
		trail, err := s.AuditTrail(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		var got []step
		for _, e := range trail {
			if e.RequestID != "r1" {
				t.Errorf("entry %+v is not about r1", e)
			}
			got = append(got, step{e.Action, e.By, e.At.Sub(base)})
		}
		if !eq(got, want) {
			t.Errorf("trail = %v; want %v", got, want)
		}
		last, _ := s.AuditTrail(ctx, 2)
		if len(last) != 2 || last[0].Action != "allow_once" || last[1].Action != "ran" {
			t.Errorf("AuditTrail(2) = %+v; want the last two, oldest first", last)
		}
	})
}

// A request that vanished while still indexed (its retention ran out during
// an outage) is dropped from the indexes instead of being handed to the
// sweep forever.
func TestVanishedRequestsLeaveTheIndexes(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		exp := base.Add(time.Minute)
		for _, id := range []string{"gone", "kept", "gone2"} {
			mustCreate(t, s, id, exp)
		}
		mustTransition(t, s, "gone2", deskbot.Transition{
			Kind: deskbot.TransitionDeny, Now: base,
			Set: deskbot.RequestPatch{DenyDueAt: exp},
		})
		s.Client().Del(ctx, s.Key("req", "gone"), s.Key("req", "gone2"))

		if got, _ := s.DueRequests(ctx, exp, 10); !eq(got, []string{"kept"}) {
			t.Errorf("DueRequests = %v; want [kept]", got)
		}
		if got, _ := s.DenialsDue(ctx, exp, 10); len(got) != 0 {
			t.Errorf("DenialsDue = %v; want none", got)
		}
		if n := s.Client().ZCard(ctx, s.Key("open")).Val(); n != 1 {
			t.Errorf("open index holds %d ids; want 1", n)
		}
	})
}
