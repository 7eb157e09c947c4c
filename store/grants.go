package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/redis/go-redis/v9"
)

// Grants live in one hash, field "desk\x1ftool" (a separator no desk or tool
// name contains) to the JSON Grant. Expiry is judged on read against the
// caller's now: a lapsed grant is as good as none.

func grantKey(desk, tool string) string { return desk + "\x1f" + tool }

// pruneScript deletes a lapsed grant only if it is still the one that was
// read, so a grant given again meanwhile is never removed.
var pruneScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then
  return redis.call('HDEL', KEYS[1], ARGV[1])
end
return 0`)

// revokeScript deletes a grant and audits it only if it existed.
// KEYS the grants, the audit stream and its head; ARGV the grant's field,
// then audit_append's (Store.appendAuditArgv).
var revokeScript = redis.NewScript(auditSrc + `
if redis.call('HDEL', KEYS[1], ARGV[1]) == 0 then
  return 0
end
audit_append(KEYS[2], KEYS[3], ARGV[2], unpack(ARGV, 3, 9))
return 1`)

// putGrantScript records a grant with its audit entry: KEYS the grants,
// the audit stream and its head; ARGV the grant's field and JSON, then
// audit_append's (Store.appendAuditArgv).
var putGrantScript = redis.NewScript(auditSrc + `
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
audit_append(KEYS[2], KEYS[3], ARGV[3], unpack(ARGV, 4, 10))
return 1`)

// Grant returns the active grant for (desk, tool), ENOTFOUND if none.
func (s *Store) Grant(ctx context.Context, desk, tool string, now time.Time) (*deskbot.Grant, error) {
	v, err := s.rdb.HGet(ctx, s.grantsKey(), grantKey(desk, tool)).Result()
	if err == redis.Nil {
		return nil, noGrant(desk, tool)
	} else if err != nil {
		return nil, s.wrap(err)
	}
	var g deskbot.Grant
	if err := json.Unmarshal([]byte(v), &g); err != nil {
		return nil, fmt.Errorf("store: decode grant: %w", err)
	}
	if !g.Active(now) {
		return nil, noGrant(desk, tool)
	}
	return &g, nil
}

func noGrant(desk, tool string) error {
	return deskbot.Errorf(deskbot.ENOTFOUND, "Desk %s has no standing grant for %s", desk, tool)
}

// Grants returns the active grants ordered by desk and tool, and removes the
// lapsed ones it finds.
func (s *Store) Grants(ctx context.Context, now time.Time) ([]deskbot.Grant, error) {
	all, err := s.rdb.HGetAll(ctx, s.grantsKey()).Result()
	if err != nil {
		return nil, s.wrap(err)
	}
	var out []deskbot.Grant
	for field, v := range all {
		var g deskbot.Grant
		if err := json.Unmarshal([]byte(v), &g); err != nil {
			return nil, fmt.Errorf("store: decode grant: %w", err)
		}
		if g.Active(now) {
			out = append(out, g)
			continue
		}
		if err := pruneScript.Run(ctx, s.rdb, []string{s.grantsKey()}, field, v).Err(); err != nil {
			return nil, s.wrap(err)
		}
	}
	slices.SortFunc(out, func(a, b deskbot.Grant) int {
		return strings.Compare(grantKey(a.Desk, a.Tool), grantKey(b.Desk, b.Tool))
	})
	return out, nil
}

// PutGrant records g (replacing any grant for the same desk and tool) with
// its audit entry in one script.
func (s *Store) PutGrant(ctx context.Context, g deskbot.Grant, audit deskbot.AuditEntry) error {
	if g.Desk == "" || g.Tool == "" {
		return deskbot.Errorf(deskbot.EINVALID, "A grant needs a desk and a tool")
	}
	g.GrantedAt, g.ExpiresAt = g.GrantedAt.UTC(), g.ExpiresAt.UTC()
	gJSON, err := encode(g)
	if err != nil {
		return err
	}
	args := s.appendAuditArgv([]any{grantKey(g.Desk, g.Tool), gJSON}, auditFor(audit, g.RequestID, g.Desk))
	return s.wrap(putGrantScript.Run(ctx, s.rdb, []string{s.grantsKey(), s.auditKey(), s.auditHeadKey()}, args...).Err())
}

// RevokeGrant removes the grant and audits it, atomically; ENOTFOUND (and
// nothing audited) if there was none.
func (s *Store) RevokeGrant(ctx context.Context, desk, tool string, audit deskbot.AuditEntry) error {
	args := s.appendAuditArgv([]any{grantKey(desk, tool)}, auditFor(audit, "", desk))
	n, err := revokeScript.Run(ctx, s.rdb, []string{s.grantsKey(), s.auditKey(), s.auditHeadKey()}, args...).Int()
	if err != nil {
		return s.wrap(err)
	}
	if n == 0 {
		return noGrant(desk, tool)
	}
	return nil
}
