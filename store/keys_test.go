package store_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/store"
	"github.com/deskbot/deskbot/store/storetest"
)

// Every key of a deployment carries one Cluster hash tag, the prefix in
// braces: what a script or a MULTI touches must hash to one slot.
func TestKeysShareOneHashTag(t *testing.T) {
	s := storetest.MustOpenEmbedded(t)
	tag := "{" + strings.TrimSuffix(s.Prefix(), ":") + "}:"
	for _, k := range []string{s.Key("audit"), s.Key("req", "r1"), s.Key("inbox", "alpha"), s.Key("note", "tg:sent:1"), s.Key("broker", "book", "fno")} {
		if !strings.HasPrefix(k, tag) {
			t.Errorf("key %q lacks the tag %q", k, tag)
		}
	}
}

func TestPrefixWithBracesRefused(t *testing.T) {
	for _, p := range []string{"a{b}:", "{x}:", ":", "open}"} {
		_, err := store.Open(t.Context(), store.Options{Prefix: p})
		if deskbot.ErrorCode(err) != deskbot.EINVALID {
			t.Errorf("prefix %q: err = %v; want EINVALID", p, err)
		}
	}
}

// A deployment written before the hash tag keeps everything: its keys are
// renamed under the tag at Open, values, times to live and consumer groups
// with them, and a neighbouring deployment's keys are left alone.
func TestOldKeyNamesMigratedAtOpen(t *testing.T) {
	storetest.NeedsURL(t, "keys of the earlier version were never on a Cluster, which it could not run on")
	ctx := t.Context()
	s := storetest.MustOpen(t)
	now := time.Now()
	exp := now.Add(5 * time.Minute)
	for _, id := range []string{"open1", "decided1"} {
		r := newRequest(id, exp)
		if err := s.CreateRequest(ctx, r, deskbot.AuditEntry{Action: "hold", At: now}, deskbot.Event{Kind: deskbot.EventUserRequest, Desk: "alpha", Time: now}); err != nil {
			t.Fatal(err)
		}
	}
	mustTransition(t, s, "decided1", allow(now))
	if err := s.PutGrant(ctx, deskbot.Grant{Desk: "alpha", Tool: "place_order", GrantedBy: "Asha", GrantedAt: now}, deskbot.AuditEntry{Action: "grant", At: now}); err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"in hand", "queued"} {
		if err := s.Enqueue(ctx, deskbot.Trigger{Desk: "alpha", Kind: deskbot.TriggerMessage, Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	inHand, err := s.NextTrigger(ctx, "alpha", 0)
	if err != nil || inHand == nil {
		t.Fatalf("next trigger: %v, %v", inHand, err)
	}
	if _, err := s.ReadEvents(ctx, "telegram", "bot", 1, 0); err != nil { // one event delivered, not acknowledged
		t.Fatal(err)
	}
	if err := s.PutNote(ctx, "tg:sent:1", "x", time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendHistory(ctx, "alpha", deskbot.Message{Role: "user", Content: "hello"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Client().HSet(ctx, s.Key("broker", "book", "alpha"), "INFY", "1 1500 1500 0").Err(); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, s, inHand)

	// Back to the names of the earlier version, beside a neighbour whose
	// prefix starts with this one's.
	rdb := s.Client()
	tagged, err := rdb.Keys(ctx, s.Key()+"*").Result()
	if err != nil || len(tagged) < 10 {
		t.Fatalf("tagged keys: %v, %v", tagged, err)
	}
	neighbour := s.Prefix() + "staging:audit"
	var old []string
	t.Cleanup(func() { rdb.Del(context.Background(), append(old, neighbour)...) })
	for _, k := range tagged {
		if k == s.Key("audit", "head") { // the earlier version kept no chain
			rdb.Del(ctx, k)
			continue
		}
		o := s.Prefix() + strings.TrimPrefix(k, s.Key())
		old = append(old, o)
		if err := rdb.Rename(ctx, k, o).Err(); err != nil {
			t.Fatal(err)
		}
	}
	rdb.Set(ctx, neighbour, "another deployment's", 0)
	noteTTL := rdb.PTTL(ctx, s.Prefix()+"note:tg:sent:1").Val()

	s2 := storetest.MustReopen(t, s) // the new version starts
	if after := snapshot(t, s2, inHand); !reflect.DeepEqual(before, after) {
		t.Errorf("after the migration the deployment reads\n%v\nwant\n%v", after, before)
	}
	if n, _ := rdb.Exists(ctx, old...).Result(); n != 0 {
		t.Errorf("%d keys left under their old names", n)
	}
	if got := rdb.Get(ctx, neighbour).Val(); got != "another deployment's" {
		t.Errorf("the neighbouring deployment's key reads %q", got)
	}
	if ttl := rdb.PTTL(ctx, s2.Key("note", "tg:sent:1")).Val(); ttl <= 0 || ttl > noteTTL {
		t.Errorf("note's time to live after the migration = %v; want at most %v and kept", ttl, noteTTL)
	}
	// The migrated deployment goes on: the open request decides, the
	// trigger in hand acknowledges, the next one is read.
	mustTransition(t, s2, "open1", allow(now))
	if err := s2.AckTrigger(ctx, inHand); err != nil {
		t.Fatal(err)
	}
	if next, err := s2.NextTrigger(ctx, "alpha", 0); err != nil || next == nil || next.Text != "queued" {
		t.Errorf("next trigger after the migration: %+v, %v; want the queued one", next, err)
	}
	s3 := storetest.MustReopen(t, s2) // a second start finds nothing to move
	if n, _ := rdb.Exists(ctx, s3.Key("audit")).Result(); n != 1 {
		t.Errorf("a second start lost the audit trail")
	}
}

// snapshot is everything a person or a desk could read back of s.
func snapshot(t *testing.T, s *store.Store, inHand *deskbot.Trigger) string {
	t.Helper()
	ctx := t.Context()
	var b strings.Builder
	open, err := s.OpenRequests(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "open=%v\n", ids(open))
	for _, id := range []string{"open1", "decided1"} {
		r, err := s.Request(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s=%s/%s\n", id, r.State, r.Decision)
	}
	running, _ := s.RunningRequests(ctx)
	fmt.Fprintf(&b, "running=%v\n", ids(running))
	n, _ := s.OpenRequestCount(ctx, "alpha")
	fmt.Fprintf(&b, "openby=%d\n", n)
	audit, _ := s.AuditTrail(ctx, 0)
	for _, a := range audit {
		fmt.Fprintf(&b, "audit %s %s\n", a.Action, a.RequestID)
	}
	grants, _ := s.Grants(ctx, time.Now())
	fmt.Fprintf(&b, "grants=%d\n", len(grants))
	pending, _ := s.PendingTriggers(ctx, "alpha")
	fmt.Fprintf(&b, "triggers=%d\n", pending)
	if tr, err := s.NextTrigger(ctx, "alpha", 0); err != nil || tr == nil || tr.StreamID != inHand.StreamID {
		t.Errorf("trigger in hand: %+v, %v; want %s again", tr, err, inHand.StreamID)
	}
	p, u, _ := s.EventBacklog(ctx, "telegram")
	fmt.Fprintf(&b, "events pending=%d undelivered=%d\n", p, u)
	note, _ := s.Note(ctx, "tg:sent:1")
	fmt.Fprintf(&b, "note=%s\n", note)
	h, _ := s.History(ctx, "alpha", 0)
	fmt.Fprintf(&b, "history=%d\n", len(h))
	book, _ := s.Client().HGetAll(ctx, s.Key("broker", "book", "alpha")).Result()
	fmt.Fprintf(&b, "book=%v\n", book)
	return b.String()
}
