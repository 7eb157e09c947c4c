package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/redis/go-redis/v9"
)

// The event stream is a Redis stream whose entries hold one field, "data",
// with the JSON of the event. An audit entry is seven plain fields, always
// all of them and in one order (auditNames), so that the stream stores their
// names once per block of entries, not once per entry, and the detail (often
// a call's arguments, themselves JSON) is not quoted inside another JSON.
// Entries written before this encoding (one "data" JSON field) still read. Both are trimmed on
// every append, approximately (whole blocks at a time, O(1) per append):
// the event stream to about EventsMaxLen entries (MAXLEN ~), the audit trail
// to its AuditRetention (MINID ~ of the id that time ago, by this process's
// clock, the one Redis stamps its ids with).

// Audit appends e to the audit trail.
func (s *Store) Audit(ctx context.Context, e deskbot.AuditEntry) error {
	return s.wrap(s.rdb.XAdd(ctx, s.auditAdd(auditValues(e))).Err())
}

// auditNames are an audit entry's stream fields, in order: action, desk,
// tool, request id, by, at (ms since the epoch), detail.
var auditNames = [...]string{"a", "d", "t", "r", "b", "m", "x"}

// auditValues is e's values in the order of auditNames.
func auditValues(e deskbot.AuditEntry) []string {
	at := ""
	if !e.At.IsZero() {
		at = strconv.FormatInt(e.At.UnixMilli(), 10)
	}
	return []string{e.Action, e.Desk, e.Tool, e.RequestID, e.By, at, e.Detail}
}

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

// auditAdd is an XADD of one audit entry, trimming entries older than the
// audit retention.
func (s *Store) auditAdd(values []string) *redis.XAddArgs {
	fv := make([]any, 0, 2*len(auditNames))
	for i, n := range auditNames {
		fv = append(fv, n, values[i])
	}
	return &redis.XAddArgs{Stream: s.auditKey(), MinID: s.auditMinID(), Approx: true, Values: fv}
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
