package store

import (
	"context"
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/redis/go-redis/v9"
)

// The event stream is a Redis stream whose entries hold one field, "data",
// with the JSON of the event. An audit entry is eight plain fields, always
// all of them and in one order (auditNames, then "p"), so that the stream
// stores their names once per block of entries, not once per entry, and the
// detail (often a call's arguments, themselves JSON) is not quoted inside
// another JSON. Entries written before this encoding (one "data" JSON
// field) still read. Both are trimmed on every append, approximately
// (whole blocks at a time, O(1) per append): the event stream to about
// EventsMaxLen entries (MAXLEN ~), the audit trail to its AuditRetention
// (MINID ~ of the id that time ago, by this process's clock, the one Redis
// stamps its ids with).
//
// The audit trail is a chain, one per deployment (prefix): each entry's
// "p" is the hash of the entry before it, and the key audit:head holds the
// last entry's hash. Every writer, this file's Audit as much as the
// transition, grant, pause, halt and resume scripts, appends through one
// Lua function (audit.lua's audit_append) in the same script as what it
// records, so the chain is one line whatever instance writes, and the head
// shares the stream's hash tag (keys.go): one Cluster slot. An entry's hash
// is SHA-1 of its previous hash and its seven fields, each prefixed by its
// length (auditHash, audit_link in Lua): SHA-1, because it is the hash
// Redis's Lua has, and what the chain must resist is a second preimage (a
// changed entry with the hash the next one carries), which SHA-1 still
// does; its known attacks are collisions, which need both texts chosen by
// the attacker before either is written. The chain shows an entry changed,
// removed or slipped in by hand (VerifyAudit); it cannot show a whole
// chain rewritten by someone with write access to Redis, who can compute
// every hash again. What does is a copy kept elsewhere: an export, or the
// head's hash of a day noted outside Redis, which the chain must still
// reach.

//go:embed audit.lua
var auditSrc string

// auditScript appends one audit entry: KEYS the stream and its head; ARGV
// the stream's MINID and the entry's values (appendAuditArgv).
var auditScript = redis.NewScript(auditSrc + `
audit_append(KEYS[1], KEYS[2], ARGV[1], unpack(ARGV, 2, 8))
return 1`)

// Audit appends e to the audit trail.
func (s *Store) Audit(ctx context.Context, e deskbot.AuditEntry) error {
	return s.wrap(auditScript.Run(ctx, s.rdb, []string{s.auditKey(), s.auditHeadKey()}, s.appendAuditArgv(make([]any, 0, 8), e)...).Err())
}

// appendAuditArgv adds audit_append's ARGV to args: the stream's MINID,
// then e's values in auditNames' order.
func (s *Store) appendAuditArgv(args []any, e deskbot.AuditEntry) []any {
	var at any = ""
	if !e.At.IsZero() {
		at = e.At.UnixMilli() // go-redis writes it as the digits FormatInt would
	}
	return append(args, s.auditMinID(), e.Action, e.Desk, e.Tool, e.RequestID, e.By, at, e.Detail)
}

// auditNames are an audit entry's stream fields, in order: action, desk,
// tool, request id, by, at (ms since the epoch), detail.
var auditNames = [...]string{"a", "d", "t", "r", "b", "m", "x"}

func decodeAudit(m redis.XMessage) (deskbot.AuditEntry, error) {
	var e deskbot.AuditEntry
	if data, ok := m.Values["data"].(string); ok { // the earlier encoding
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			return e, fmt.Errorf("store: decode audit entry %s: %w", m.ID, err)
		}
		return e, nil
	}
	v := func(name string) string { s, _ := m.Values[name].(string); return s }
	e = deskbot.AuditEntry{Action: v("a"), Desk: v("d"), Tool: v("t"), RequestID: v("r"), By: v("b"), At: msField(v("m")), Detail: v("x")}
	return e, nil
}

// AuditTrail returns the last limit entries (all when limit <= 0), oldest
// first.
func (s *Store) AuditTrail(ctx context.Context, limit int) ([]deskbot.AuditEntry, error) {
	var msgs []redis.XMessage
	var err error
	if limit <= 0 {
		msgs, err = s.rdb.XRange(ctx, s.auditKey(), "-", "+").Result()
	} else {
		msgs, err = s.rdb.XRevRangeN(ctx, s.auditKey(), "+", "-", int64(limit)).Result()
		slices.Reverse(msgs)
	}
	if err != nil {
		return nil, s.wrap(err)
	}
	out := make([]deskbot.AuditEntry, 0, len(msgs))
	for _, m := range msgs {
		e, err := decodeAudit(m)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// streamAdd is an XADD of one JSON entry, trimmed to about EventsMaxLen.
func (s *Store) streamAdd(key, data string) *redis.XAddArgs {
	return &redis.XAddArgs{Stream: key, MaxLen: s.opts.EventsMaxLen, Approx: true, Values: []any{"data", data}}
}

// auditMinID is the stream id of the oldest audit entry to keep.
func (s *Store) auditMinID() string {
	return strconv.FormatInt(time.Now().Add(-s.opts.AuditRetention).UnixMilli(), 10) + "-0"
}

func dataOf(m redis.XMessage) string {
	v, _ := m.Values["data"].(string)
	return v
}

// auditFor fills the request and desk an entry is about when the caller left
// them out.
func auditFor(e deskbot.AuditEntry, requestID, desk string) deskbot.AuditEntry {
	if e.RequestID == "" {
		e.RequestID = requestID
	}
	if e.Desk == "" {
		e.Desk = desk
	}
	e.At = e.At.UTC()
	return e
}

func encode(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("store: encode %T: %w", v, err)
	}
	return string(b), nil
}

var _ deskbot.AuditLedger = (*Store)(nil)

// auditHash is an entry's hash as audit_link (audit.lua) computes it: SHA-1
// of prev and values, each written as its length in bytes, ":" and itself.
func auditHash(prev string, values []string) string {
	n := len(prev) + 21
	for _, v := range values {
		n += len(v) + 21
	}
	b := make([]byte, 0, n)
	b = strconv.AppendInt(b, int64(len(prev)), 10)
	b = append(append(b, ':'), prev...)
	for _, v := range values {
		b = strconv.AppendInt(b, int64(len(v)), 10)
		b = append(append(b, ':'), v...)
	}
	sum := sha1.Sum(b)
	return hex.EncodeToString(sum[:])
}

// auditPage is how many entries VerifyAudit reads a round trip.
const auditPage = 1000

// VerifyAudit checks the audit chain (deskbot.AuditLedger), reading the
// stream a page at a time: each chained entry's "p" must be the hash of
// the entry before it, and the last entry's hash the head. Entries without
// "p" are counted as unchained while no chained entry came before them;
// after one, an entry without it was not written by the chain. Entries
// added while it reads are checked too: it ends on the stream's last entry
// and the head read together.
func (s *Store) VerifyAudit(ctx context.Context) (deskbot.AuditCheck, error) {
	var chk deskbot.AuditCheck
	var last redis.XMessage // the last chained entry read
	var lastHash string     // its hash
	from := "-"
	for {
		msgs, err := s.rdb.XRangeN(ctx, s.auditKey(), from, "+", auditPage).Result()
		if err != nil {
			return chk, s.wrap(err)
		}
		for _, m := range msgs {
			from = "(" + m.ID
			p, chained := m.Values["p"].(string)
			if !chained {
				if chk.Checked == 0 {
					chk.Unchained++
					continue
				}
				return chk, brokenAt(&chk, m, "it carries no previous hash: it was not written through the chain (by hand, or by a deskbot from before the chain, after the chain began)")
			}
			if chk.Checked > 0 && p != lastHash {
				return chk, s.brokenLink(ctx, &chk, last, lastHash, m)
			}
			if chk.Checked == 0 {
				chk.First = m.ID
			}
			chk.Checked++
			chk.Last = m.ID
			last, lastHash = m, auditHash(p, auditFieldValues(m))
		}
		if len(msgs) == auditPage {
			continue
		}
		// The end as it stands now: the last entry and the head, read in
		// one step, so that an entry appended meanwhile is read first.
		var tail *redis.XMessageSliceCmd
		var head *redis.StringCmd
		if _, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			tail = p.XRevRangeN(ctx, s.auditKey(), "+", "-", 1)
			head = p.Get(ctx, s.auditHeadKey())
			return nil
		}); err != nil && !errors.Is(err, redis.Nil) {
			return chk, s.wrap(err)
		}
		if t := tail.Val(); len(t) == 1 && "("+t[0].ID != from {
			continue
		}
		if chk.Checked > 0 && head.Val() != lastHash {
			return chk, brokenAt(&chk, last, fmt.Sprintf("its hash %s is not the chain's head %s: the last entry was changed, or entries after it were removed", lastHash, head.Val()))
		}
		return chk, nil
	}
}

// brokenLink names the entry that breaks the link from last (whose hash is
// lastHash) to next: last, unless next's own link onward is broken too,
// which is what a changed previous hash in next does.
func (s *Store) brokenLink(ctx context.Context, chk *deskbot.AuditCheck, last redis.XMessage, lastHash string, next redis.XMessage) error {
	p, _ := next.Values["p"].(string)
	h := auditHash(p, auditFieldValues(next))
	after, err := s.rdb.XRangeN(ctx, s.auditKey(), "("+next.ID, "+", 1).Result()
	if err != nil {
		return s.wrap(err)
	}
	onward := false
	if len(after) == 1 {
		ap, _ := after[0].Values["p"].(string)
		onward = ap == h
	} else {
		head, err := s.rdb.Get(ctx, s.auditHeadKey()).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return s.wrap(err)
		}
		onward = head == h
	}
	if !onward {
		return brokenAt(chk, next, fmt.Sprintf("its previous hash %s is not the hash %s of the entry before it, %s, and its own hash does not match what follows it: it was changed", p, lastHash, last.ID))
	}
	return brokenAt(chk, last, fmt.Sprintf("its hash %s is not the previous hash %s that the next entry, %s, carries: it was changed, or entries after it were removed", lastHash, p, next.ID))
}

// brokenAt records m as the first entry that does not match, and why.
func brokenAt(chk *deskbot.AuditCheck, m redis.XMessage, why string) error {
	e, _ := decodeAudit(m)
	chk.Broken = &deskbot.AuditBreak{ID: m.ID, Entry: e, Why: why}
	return nil
}

// auditFieldValues is m's values in the order of auditNames, as written.
func auditFieldValues(m redis.XMessage) []string {
	out := make([]string, len(auditNames))
	for i, n := range auditNames {
		out[i], _ = m.Values[n].(string)
	}
	return out
}

// AuditDay reads the entries of an India day (deskbot.AuditLedger): the
// stream's ids an hour either side of the day (ids are Redis's clock, the
// entries' times the writer's), then the entries whose time is that day.
func (s *Store) AuditDay(ctx context.Context, day string) ([]deskbot.AuditEntry, error) {
	start, err := time.ParseInLocation(time.DateOnly, day, deskbot.IST)
	if err != nil {
		return nil, deskbot.Errorf(deskbot.EINVALID, "A day is written YYYY-MM-DD, such as 2026-12-04; %q is not one", day)
	}
	end := start.AddDate(0, 0, 1)
	from := strconv.FormatInt(start.Add(-time.Hour).UnixMilli(), 10)
	to := strconv.FormatInt(end.Add(time.Hour).UnixMilli(), 10)
	var out []deskbot.AuditEntry
	for {
		msgs, err := s.rdb.XRangeN(ctx, s.auditKey(), from, to, auditPage).Result()
		if err != nil {
			return nil, s.wrap(err)
		}
		for _, m := range msgs {
			from = "(" + m.ID
			e, err := decodeAudit(m)
			if err != nil {
				return nil, err
			}
			at := e.At
			if at.IsZero() {
				at = idTime(m.ID)
			}
			if !at.Before(start) && at.Before(end) {
				out = append(out, e)
			}
		}
		if len(msgs) < auditPage {
			return out, nil
		}
	}
}

// idTime is the time in a stream id ("1733300000000-0").
func idTime(id string) time.Time {
	ms, _, _ := strings.Cut(id, "-")
	return msField(ms)
}
