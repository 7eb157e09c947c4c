package store_test

import (
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/store"
)

func TestGrantsExpireByInjectedTime(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		audit := deskbot.AuditEntry{Action: "grant", By: "Asha (42)", At: base}
		put := func(desk, tool string, life time.Duration) {
			g := deskbot.Grant{Desk: desk, Tool: tool, GrantedBy: "Asha", GrantedAt: base}
			if life > 0 {
				g.ExpiresAt = base.Add(life)
			}
			if err := s.PutGrant(ctx, g, audit); err != nil {
				t.Fatal(err)
			}
		}
		put("alpha", "flatten_desk", time.Hour)
		put("alpha", "place_order", 0) // until revoked
		put("beta", "flatten_desk", 2*time.Hour)

		tests := []struct {
			desk, tool string
			now        time.Time
			wantOK     bool
		}{
			{"alpha", "flatten_desk", base, true},
			{"alpha", "flatten_desk", base.Add(time.Hour - time.Millisecond), true},
			{"alpha", "flatten_desk", base.Add(time.Hour), false},
			{"alpha", "place_order", base.Add(1000 * time.Hour), true},
			{"beta", "place_order", base, false},
		}
		for _, tc := range tests {
			g, err := s.Grant(ctx, tc.desk, tc.tool, tc.now)
			if ok := err == nil; ok != tc.wantOK || (!ok && deskbot.ErrorCode(err) != deskbot.ENOTFOUND) {
				t.Errorf("Grant(%s, %s, +%v) = %+v, %v; want found %v", tc.desk, tc.tool, tc.now.Sub(base), g, err, tc.wantOK)
			}
		}

		// Listing at +90m leaves out and prunes the lapsed grant: it is gone
		// even for an earlier now.
		gs, err := s.Grants(ctx, base.Add(90*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, g := range gs {
			got = append(got, g.Desk+"/"+g.Tool)
		}
		if want := []string{"alpha/place_order", "beta/flatten_desk"}; !eq(got, want) {
			t.Errorf("Grants = %v; want %v", got, want)
		}
		if _, err := s.Grant(ctx, "alpha", "flatten_desk", base); err == nil {
			t.Errorf("lapsed grant still readable after Grants pruned it")
		}

		revoke := deskbot.AuditEntry{Action: "revoke", Tool: "place_order", By: "Ravi (7)", At: base}
		if err := s.RevokeGrant(ctx, "alpha", "place_order", revoke); err != nil {
			t.Fatal(err)
		}
		if err := s.RevokeGrant(ctx, "alpha", "place_order", revoke); deskbot.ErrorCode(err) != deskbot.ENOTFOUND {
			t.Errorf("second revoke: %v; want ENOTFOUND", err)
		}
		if _, err := s.Grant(ctx, "alpha", "place_order", base); err == nil {
			t.Errorf("revoked grant still holds")
		}
		trail, _ := s.AuditTrail(ctx, 0)
		var actions []string
		for _, e := range trail {
			actions = append(actions, e.Action+":"+e.Desk)
		}
		want := []string{"grant:alpha", "grant:alpha", "grant:beta", "revoke:alpha"}
		if !eq(actions, want) {
			t.Errorf("audit = %v; want %v (a failed revoke is not audited)", actions, want)
		}
	})
}
