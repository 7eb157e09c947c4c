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

// The audit trail and the event stream are Redis streams whose entries hold
// one field, "data", with the JSON of the entry (a stream stores a field
// name once per block of entries, not once per entry). Both are trimmed on
// every append, approximately (whole blocks at a time, O(1) per append):
// the event stream to about EventsMaxLen entries (MAXLEN ~), the audit trail
// to its AuditRetention (MINID ~ of the id that time ago, by this process's
// clock, the one Redis stamps its ids with).

// Audit appends e to the audit trail.
func (s *Store) Audit(ctx context.Context, e deskbot.AuditEntry) error {
	data, err := encode(e)
	if err != nil {
		return err
	}
	return s.wrap(s.rdb.XAdd(ctx, s.auditAdd(data)).Err())
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
		var e deskbot.AuditEntry
		if err := json.Unmarshal([]byte(dataOf(m)), &e); err != nil {
			return nil, fmt.Errorf("store: decode audit entry %s: %w", m.ID, err)
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
func (s *Store) auditAdd(data string) *redis.XAddArgs {
	return &redis.XAddArgs{Stream: s.auditKey(), MinID: s.auditMinID(), Approx: true, Values: []any{"data", data}}
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

func encode2(a, b any) (string, string, error) {
	x, err := encode(a)
	if err != nil {
		return "", "", err
	}
	y, err := encode(b)
	return x, y, err
}
