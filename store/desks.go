package store

import (
	"context"
	"strconv"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/redis/go-redis/v9"
)

// Each desk has a hash: state, paused ("1" or absent) and last_activity (ms).
// The pause switch lives here so that it survives restarts.

// DeskStatus returns the desk's stored state; a desk never seen is idle.
func (s *Store) DeskStatus(ctx context.Context, desk string) (deskbot.DeskStatus, error) {
	h, err := s.rdb.HGetAll(ctx, s.deskKey(desk)).Result()
	if err != nil {
		return deskbot.DeskStatus{}, s.wrap(err)
	}
	st := deskbot.DeskStatus{Desk: desk, State: deskbot.DeskState(h["state"]), Paused: h["paused"] == "1"}
	if st.State == "" {
		st.State = deskbot.DeskIdle
	}
	st.LastActivity = msField(h["last_activity"])
	return st, nil
}

// SetDeskState records what the desk is doing and when it last did something.
func (s *Store) SetDeskState(ctx context.Context, desk string, state deskbot.DeskState, at time.Time) error {
	return s.wrap(s.rdb.HSet(ctx, s.deskKey(desk),
		"state", string(state), "last_activity", strconv.FormatInt(at.UnixMilli(), 10)).Err())
}

// SetPaused flips the pause switch and audits it in the same MULTI.
func (s *Store) SetPaused(ctx context.Context, desk string, paused bool, audit deskbot.AuditEntry) error {
	data := auditValues(auditFor(audit, "", desk))
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		if paused {
			p.HSet(ctx, s.deskKey(desk), "paused", "1")
		} else {
			p.HDel(ctx, s.deskKey(desk), "paused")
		}
		p.XAdd(ctx, s.auditAdd(data))
		return nil
	})
	return s.wrap(err)
}
