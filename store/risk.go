package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/redis/go-redis/v9"
)

// What the risk rules keep. A halt lives in the desk's hash (field "halt",
// the JSON Halt), beside the pause switch it sets, so that every read of a
// desk's state sees it and the turn scripts, which honour "paused", need
// nothing new. The run of refusals is two more fields of that hash
// ("inarow", "inarow_id": the last event counted). The day's P&L samples
// are a sorted set per desk and India day (pnl:<desk>:<day>), kept a week
// for the report, and the day's best P&L two fields of the desk's hash
// ("best_day", "best").

var _ deskbot.RiskStore = (*Store)(nil)

// pnlKeep is how long a day's P&L samples are kept: the week's report
// reads the last five trading days.
const pnlKeep = 10 * 24 * time.Hour

// haltScript halts a desk unless it is halted already: KEYS the desk's hash
// the audit stream and its head; ARGV the halt's JSON, then audit_append's
// (Store.appendAuditArgv). First caller wins, so two instances
// (or a repeat after a crash) halt a desk once.
var haltScript = redis.NewScript(auditSrc + `
if redis.call('HEXISTS', KEYS[1], 'halt') == 1 then return 0 end
redis.call('HSET', KEYS[1], 'halt', ARGV[1], 'paused', '1')
audit_append(KEYS[2], KEYS[3], ARGV[2], unpack(ARGV, 3, 9))
return 1`)

// HaltDesk pauses the desk and records h with its audit entry, unless the
// desk is halted already.
func (s *Store) HaltDesk(ctx context.Context, desk string, h deskbot.Halt, audit deskbot.AuditEntry) (bool, error) {
	h.At = h.At.UTC()
	data, err := json.Marshal(h)
	if err != nil {
		return false, err
	}
	argv := s.appendAuditArgv([]any{string(data)}, auditFor(audit, "", desk))
	n, err := haltScript.Run(ctx, s.rdb, []string{s.deskKey(desk), s.auditKey(), s.auditHeadKey()}, argv...).Int()
	return n == 1, s.wrap(err)
}

// finishScript marks a halt done, if the desk is still halted.
var finishScript = redis.NewScript(`
local v = redis.call('HGET', KEYS[1], 'halt')
if not v then return 0 end
local h = cjson.decode(v)
h.done = true
h.did = ARGV[1]
redis.call('HSET', KEYS[1], 'halt', cjson.encode(h))
return 1`)

// FinishHalt marks the desk's halt done, with what it did.
func (s *Store) FinishHalt(ctx context.Context, desk, did string) error {
	return s.wrap(finishScript.Run(ctx, s.rdb, []string{s.deskKey(desk)}, did).Err())
}

// resumeScript lifts a desk's halt and pause and ends its run of refusals
// (the team looked at it); a lifted halt of the resume's own India day
// leaves where the day's rules restart from (deskbot.Restart), the day's
// best P&L starting again at the halt's. A halt of an earlier day leaves
// none: its figures were that day's, and carried into a new day they
// would let the desk lose, or spend, that much more than its rules allow.
// Only the halt the caller read is lifted: if the field is not that
// record any more, nothing changes (0).
// KEYS the desk's hash, the audit stream and its head; ARGV the India day
// of the resume, the day's start and the next day's in UTC as
// "2006-01-02T15:04:05" (a halt's "at" is UTC RFC 3339, so it compares as
// a string), the halt's record as read, then audit_append's
// (Store.appendAuditArgv: the audit stream's MINID, the entry's values).
var resumeScript = redis.NewScript(auditSrc + `
local v = redis.call('HGET', KEYS[1], 'halt')
if v ~= ARGV[4] then return 0 end
redis.call('HDEL', KEYS[1], 'halt', 'paused', 'inarow')
do
  local ok, h = pcall(cjson.decode, v)
  if not ok or type(h) ~= 'table' then h = {} end
  local at = type(h.at) == 'string' and h.at or ''
  if at >= ARGV[2] and at < ARGV[3] then
    local pnl, tokens = tonumber(h.pnl) or 0, tonumber(h.tokens) or 0
    redis.call('HSET', KEYS[1], 'restart', cjson.encode({day = ARGV[1], pnl = pnl, tokens = tokens}),
      'best_day', ARGV[1], 'best', string.format('%.17g', pnl))
  else
    redis.call('HDEL', KEYS[1], 'restart', 'best_day', 'best')
  end
end
audit_append(KEYS[2], KEYS[3], ARGV[5], unpack(ARGV, 6, 12))
return 1`)

// Resume lifts the desk's halt taken at halt, and its pause, with the
// audit entry, in one step.
func (s *Store) Resume(ctx context.Context, desk string, halt time.Time, audit deskbot.AuditEntry) error {
	local := audit.At.In(deskbot.IST)
	start := time.Date(local.Year(), local.Month(), local.Day(), 0, 0, 0, 0, deskbot.IST).UTC()
	const utc = "2006-01-02T15:04:05"
	// The record is read, then lifted only if it is still what was read;
	// the halt being marked done meanwhile is the same halt, read again.
	for range 3 {
		raw, err := s.rdb.HGet(ctx, s.deskKey(desk), "halt").Result()
		if errors.Is(err, redis.Nil) {
			return deskbot.Errorf(deskbot.ECONFLICT, "%s is not halted", desk)
		}
		if err != nil {
			return s.wrap(err)
		}
		if h := decodeHalt(raw); !h.At.Equal(halt) {
			return deskbot.Errorf(deskbot.ECONFLICT, "%s is halted by another halt, taken at %s", desk, h.At.In(deskbot.IST).Format("15:04:05 IST"))
		}
		argv := s.appendAuditArgv([]any{deskbot.OrderDay(audit.At), start.Format(utc), start.Add(24 * time.Hour).Format(utc), raw}, auditFor(audit, "", desk))
		n, err := resumeScript.Run(ctx, s.rdb, []string{s.deskKey(desk), s.auditKey(), s.auditHeadKey()}, argv...).Int()
		if err != nil || n == 1 {
			return s.wrap(err)
		}
	}
	return deskbot.Errorf(deskbot.ECONFLICT, "%s's halt kept changing; nothing was resumed", desk)
}

// inARowScript counts an event into a desk's run of refusals: KEYS the
// desk's hash; ARGV the event's stream id split in its two numbers, and
// "1" for a refusal. Stream ids only grow, so an id at or below the last
// one counted is a repeat.
var inARowScript = redis.NewScript(`
local last = redis.call('HGET', KEYS[1], 'inarow_id')
if last then
  local ms, seq = string.match(last, '^(%d+)-(%d+)$')
  local a, b = tonumber(ARGV[1]), tonumber(ARGV[2])
  ms, seq = tonumber(ms), tonumber(seq)
  if a < ms or (a == ms and b <= seq) then
    return tonumber(redis.call('HGET', KEYS[1], 'inarow') or '0')
  end
end
redis.call('HSET', KEYS[1], 'inarow_id', ARGV[1] .. '-' .. ARGV[2])
if ARGV[3] == '1' then
  return redis.call('HINCRBY', KEYS[1], 'inarow', 1)
end
redis.call('HDEL', KEYS[1], 'inarow')
return 0`)

// CountInARow counts the event into the desk's run of refusals, or ends
// the run, and returns its length.
func (s *Store) CountInARow(ctx context.Context, desk, eventID string, refused bool) (int, error) {
	ms, seq, ok := strings.Cut(eventID, "-")
	if _, err := strconv.ParseUint(ms, 10, 64); err != nil || !ok {
		return 0, deskbot.Errorf(deskbot.EINVALID, "event id %q is not a stream id", eventID)
	}
	if _, err := strconv.ParseUint(seq, 10, 64); err != nil {
		return 0, deskbot.Errorf(deskbot.EINVALID, "event id %q is not a stream id", eventID)
	}
	flag := "0"
	if refused {
		flag = "1"
	}
	n, err := inARowScript.Run(ctx, s.rdb, []string{s.deskKey(desk)}, ms, seq, flag).Int()
	return n, s.wrap(err)
}

// pnlScript adds a P&L sample and returns the day's best: KEYS the desk's
// hash and the day's samples; ARGV the day, the time (ms), the P&L and
// how long to keep the samples (ms).
var pnlScript = redis.NewScript(`
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[2] .. ' ' .. ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
local pnl = tonumber(ARGV[3])
local best = pnl
if redis.call('HGET', KEYS[1], 'best_day') == ARGV[1] then
  best = math.max(best, tonumber(redis.call('HGET', KEYS[1], 'best')))
end
redis.call('HSET', KEYS[1], 'best_day', ARGV[1], 'best', string.format('%.17g', best))
return string.format('%.17g', best)`)

// AddPnLSample records the desk's P&L sample and returns the day's best.
func (s *Store) AddPnLSample(ctx context.Context, desk string, smp deskbot.PnLSample) (float64, error) {
	day := deskbot.OrderDay(smp.At)
	ms := strconv.FormatInt(smp.At.UnixMilli(), 10)
	v, err := pnlScript.Run(ctx, s.rdb, []string{s.deskKey(desk), s.pnlKey(desk, day)},
		day, ms, strconv.FormatFloat(smp.PnL, 'g', 17, 64), pnlKeep.Milliseconds()).Text()
	if err != nil {
		return 0, s.wrap(err)
	}
	return strconv.ParseFloat(v, 64)
}

// PnLSamples returns the desk's samples of the India day, oldest first.
func (s *Store) PnLSamples(ctx context.Context, desk, day string) ([]deskbot.PnLSample, error) {
	ms, err := s.rdb.ZRange(ctx, s.pnlKey(desk, day), 0, -1).Result()
	if err != nil {
		return nil, s.wrap(err)
	}
	out := make([]deskbot.PnLSample, 0, len(ms))
	for _, m := range ms {
		at, pnl, _ := strings.Cut(m, " ")
		t, err1 := strconv.ParseInt(at, 10, 64)
		p, err2 := strconv.ParseFloat(pnl, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("store: P&L sample %q of %s is not \"ms pnl\"", m, desk)
		}
		out = append(out, deskbot.PnLSample{At: time.UnixMilli(t), PnL: p})
	}
	return out, nil
}

// decodeRestart reads the desk hash's restart field ("" = none).
func decodeRestart(v string) *deskbot.Restart {
	var r deskbot.Restart
	if v == "" || json.Unmarshal([]byte(v), &r) != nil {
		return nil
	}
	return &r
}

// decodeHalt reads the desk hash's halt field ("" = none).
func decodeHalt(v string) *deskbot.Halt {
	if v == "" {
		return nil
	}
	var h deskbot.Halt
	if err := json.Unmarshal([]byte(v), &h); err != nil {
		// A halt that cannot be read is still a halt: never lift one by
		// misreading it. It is marked done, since nobody can know what is
		// left of it to do, and redoing it would tell the group again at
		// every check; and its time is the epoch's, not the zero time,
		// whose negative milliseconds no resume button can carry, so an
		// approver can still lift it.
		return &deskbot.Halt{Rule: "unknown", Figures: "the halt's record could not be read", At: time.UnixMilli(0), Done: true}
	}
	return &h
}
