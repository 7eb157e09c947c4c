package store_test

import (
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/store"
	"github.com/redis/go-redis/v9"
)

// mustWriteEveryKind writes an audit entry through every writer the trail
// has: Audit, a request's creation and transition, a grant and its revoke,
// a pause, a halt and its resume. It returns how many entries it wrote.
func mustWriteEveryKind(t *testing.T, s *store.Store) int {
	t.Helper()
	ctx := t.Context()
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	must("audit", s.Audit(ctx, deskbot.AuditEntry{Action: "why", Desk: "alpha", By: "Asha (42)", At: base, Detail: "looked at ₹5,000\x00\xff 2:ab"}))
	r := mustCreate(t, s, "chain-1", base.Add(time.Hour))
	tr := allow(base)
	tr.Audit = &deskbot.AuditEntry{Action: "allow_once", Desk: "alpha", Tool: r.Content.ToolName, By: "Asha (42)", At: base, Detail: "ok"}
	mustTransition(t, s, r.ID, tr)
	g := deskbot.Grant{Desk: "alpha", Tool: "place_order", GrantedBy: "Asha (42)", GrantedAt: base, ExpiresAt: base.Add(time.Hour)}
	must("grant", s.PutGrant(ctx, g, deskbot.AuditEntry{Action: "grant", By: "Asha (42)", At: base}))
	must("revoke", s.RevokeGrant(ctx, "alpha", "place_order", deskbot.AuditEntry{Action: "revoke", By: "Asha (42)", At: base}))
	must("pause", s.SetPaused(ctx, "alpha", true, deskbot.AuditEntry{Action: "pause", By: "Asha (42)", At: base}))
	h := deskbot.Halt{Rule: "DAILY_LOSS_LIMIT", Figures: "-₹5,000.00", At: base}
	if _, err := s.HaltDesk(ctx, "alpha", h, deskbot.AuditEntry{Action: "halt", By: "system", At: base}); err != nil {
		t.Fatal(err)
	}
	must("resume", s.Resume(ctx, "alpha", base, deskbot.AuditEntry{Action: "resume", By: "Asha (42)", At: base}))
	return 8
}

func mustVerify(t *testing.T, s *store.Store) deskbot.AuditCheck {
	t.Helper()
	chk, err := s.VerifyAudit(t.Context())
	if err != nil {
		t.Fatalf("VerifyAudit: %v", err)
	}
	return chk
}

// TestAuditChainSpansEveryWriter: whichever writer, Go or script, wrote an
// entry, it is a link of the one chain Go checks.
func TestAuditChainSpansEveryWriter(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		n := mustWriteEveryKind(t, s)
		chk := mustVerify(t, s)
		if chk.Broken != nil {
			t.Fatalf("a chain written by deskbot alone breaks at %s: %s", chk.Broken.ID, chk.Broken.Why)
		}
		if chk.Checked != n || chk.Unchained != 0 {
			t.Errorf("checked %d, unchained %d; want %d, 0", chk.Checked, chk.Unchained, n)
		}
	})
}

// rawEntry is a stream entry with its fields in order.
type rawEntry struct {
	id     string
	fields []string // name, value, ...
}

// mustRaw reads the audit stream with its fields in order.
func mustRaw(t *testing.T, s *store.Store) []rawEntry {
	t.Helper()
	res, err := s.Client().Do(t.Context(), "XRANGE", s.Key("audit"), "-", "+").Slice()
	if err != nil {
		t.Fatal(err)
	}
	var out []rawEntry
	for _, x := range res {
		pair := x.([]any)
		e := rawEntry{id: pair[0].(string)}
		for _, f := range pair[1].([]any) {
			e.fields = append(e.fields, f.(string))
		}
		out = append(out, e)
	}
	return out
}

// mustRewrite writes the audit stream again, by hand, as entries say.
func mustRewrite(t *testing.T, s *store.Store, entries []rawEntry) {
	t.Helper()
	ctx := t.Context()
	rdb := s.Client()
	if err := rdb.Del(ctx, s.Key("audit")).Err(); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		args := []any{"XADD", s.Key("audit"), e.id}
		for _, f := range e.fields {
			args = append(args, f)
		}
		if err := rdb.Do(ctx, args...).Err(); err != nil {
			t.Fatalf("XADD %s: %v", e.id, err)
		}
	}
}

// set is e with field name set to v.
func (e rawEntry) set(name, v string) rawEntry {
	f := append([]string(nil), e.fields...)
	for i := 0; i < len(f); i += 2 {
		if f[i] == name {
			f[i+1] = v
			return rawEntry{e.id, f}
		}
	}
	return rawEntry{e.id, append(f, name, v)}
}

func (e rawEntry) get(name string) string {
	for i := 0; i < len(e.fields); i += 2 {
		if e.fields[i] == name {
			return e.fields[i+1]
		}
	}
	return ""
}

// TestAuditVerifyNamesTheEntryChangedByHand plays someone with Redis in
// hand, and the hostile desk whose text is in the trail: every change
// breaks the chain at the entry changed (or, for one removed, at the entry
// before the gap).
func TestAuditVerifyNamesTheEntryChangedByHand(t *testing.T) {
	type change func(es []rawEntry) []rawEntry
	tests := []struct {
		name   string
		change change
		broken int // index in the entries as written
	}{
		{"a detail changed", func(es []rawEntry) []rawEntry { es[3] = es[3].set("x", "nothing to see"); return es }, 3},
		{"who decided changed", func(es []rawEntry) []rawEntry { es[1] = es[1].set("b", "Ravi (43)"); return es }, 1},
		{"the time changed", func(es []rawEntry) []rawEntry { es[5] = es[5].set("m", "1"); return es }, 5},
		{"the last entry changed", func(es []rawEntry) []rawEntry { es[7] = es[7].set("a", "pause"); return es }, 7},
		{"an entry removed", func(es []rawEntry) []rawEntry { return append(es[:4:4], es[5:]...) }, 3},
		{"the last entry removed", func(es []rawEntry) []rawEntry { return es[:7] }, 6},
		{"an entry's previous hash changed", func(es []rawEntry) []rawEntry {
			es[4] = es[4].set("p", strings.Repeat("0", 40))
			return es
		}, 4},
		// A desk's text moved from one field into the next keeps the
		// fields' concatenation but not their lengths.
		{"text shifted between fields", func(es []rawEntry) []rawEntry {
			e := es[0]
			es[0] = e.set("b", e.get("b")+e.get("m")[:3]).set("m", e.get("m")[3:])
			return es
		}, 0},
		{"an entry added by hand", func(es []rawEntry) []rawEntry {
			return append(es, rawEntry{"*", []string{"a", "allow_once", "d", "alpha", "t", "", "r", "", "b", "Asha (42)", "m", "0", "x", ""}})
		}, 8},
		{"an entry added by hand with a made-up link", func(es []rawEntry) []rawEntry {
			return append(es, rawEntry{"*", []string{"a", "allow_once", "d", "alpha", "t", "", "r", "", "b", "Asha (42)", "m", "0", "x", "", "p", es[7].get("p")}})
		}, 8},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			backends(t, func(t *testing.T, s *store.Store) {
				mustWriteEveryKind(t, s)
				written := mustRaw(t, s)
				if len(written) != 8 {
					t.Fatalf("%d entries written; want 8", len(written))
				}
				mustRewrite(t, s, tc.change(append([]rawEntry(nil), written...)))
				chk := mustVerify(t, s)
				if chk.Broken == nil {
					t.Fatalf("verify passes after %s", tc.name)
				}
				rewritten := mustRaw(t, s)
				if tc.broken >= len(written) { // an entry added
					written = append(written, rewritten[len(rewritten)-1])
				}
				got, want := chk.Broken.ID, written[tc.broken].id
				if got != want {
					t.Errorf("verify names %s (%s); want %s", got, chk.Broken.Why, want)
				}
			})
		})
	}
}

// TestAuditTrimKeepsTheChainVerifiable: entries trimmed away (AUDIT_KEEP)
// leave the first kept one's previous hash taken as given; entries from
// before the chain count as unchained.
func TestAuditTrimKeepsTheChainVerifiable(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		rdb := s.Client()
		// An entry of the encoding before the chain, then the chain.
		if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: s.Key("audit"), Values: []any{"a", "pause", "d", "alpha", "t", "", "r", "", "b", "Asha (42)", "m", "1", "x", ""}}).Err(); err != nil {
			t.Fatal(err)
		}
		mustWriteEveryKind(t, s)
		if chk := mustVerify(t, s); chk.Broken != nil || chk.Unchained != 1 || chk.Checked != 8 {
			t.Fatalf("before the trim: %+v", chk)
		}
		written := mustRaw(t, s)
		if err := rdb.XTrimMinID(ctx, s.Key("audit"), written[4].id).Err(); err != nil {
			t.Fatal(err)
		}
		chk := mustVerify(t, s)
		if chk.Broken != nil || chk.Checked != 5 || chk.First != written[4].id {
			t.Errorf("after the trim: %+v; want 5 checked from %s, unbroken", chk, written[4].id)
		}
		// And the chain goes on from its head.
		if err := s.Audit(ctx, deskbot.AuditEntry{Action: "why", Desk: "alpha", By: "Asha (42)", At: base}); err != nil {
			t.Fatal(err)
		}
		if chk := mustVerify(t, s); chk.Broken != nil || chk.Checked != 6 {
			t.Errorf("after one more entry: %+v", chk)
		}
	})
}

// TestAuditDayIsTheIndiaDay: a day's entries are those of its India date,
// whatever the stream ids around midnight.
func TestAuditDayIsTheIndiaDay(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		now := time.Now().In(deskbot.IST)
		midnight := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, deskbot.IST)
		for i, at := range []time.Time{midnight.Add(-time.Minute), midnight, midnight.Add(time.Minute)} {
			if err := s.Audit(ctx, deskbot.AuditEntry{Action: "why", Desk: "alpha", RequestID: string(rune('a' + i)), By: "Asha (42)", At: at}); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.AuditDay(ctx, midnight.Format(time.DateOnly))
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, e := range got {
			ids = append(ids, e.RequestID)
		}
		if strings.Join(ids, ",") != "b,c" {
			t.Errorf("the day's entries are %v; want b,c", ids)
		}
		if _, err := s.AuditDay(ctx, "04/12/2026"); deskbot.ErrorCode(err) != deskbot.EINVALID {
			t.Errorf("a day not written YYYY-MM-DD: %v; want EINVALID", err)
		}
	})
}
