package store

import (
	"context"
	"fmt"
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
	return deskStatus(desk, h), nil
}

// setDeskState is the write of a desk's state, on rdb or a pipeline.
func (s *Store) setDeskState(ctx context.Context, c redis.Cmdable, desk string, state deskbot.DeskState, at time.Time) *redis.IntCmd {
	return c.HSet(ctx, s.deskKey(desk), "state", string(state), "last_activity", strconv.FormatInt(at.UnixMilli(), 10))
}

// pauseScript flips a desk's pause switch and audits it: KEYS the desk's
// hash, the audit stream and its head; ARGV "1" to pause or "0" to resume,
// then audit_append's (Store.appendAuditArgv). A halted desk is
// not resumed here: only Resume lifts a halt, after an approver saw why.
var pauseScript = redis.NewScript(auditSrc + `
if ARGV[1] == '1' then
  redis.call('HSET', KEYS[1], 'paused', '1')
else
  if redis.call('HEXISTS', KEYS[1], 'halt') == 1 then return 0 end
  redis.call('HDEL', KEYS[1], 'paused')
end
audit_append(KEYS[2], KEYS[3], ARGV[2], unpack(ARGV, 3, 9))
return 1`)

// SetPaused flips the pause switch and audits it in one step. Resuming a
// halted desk is refused (ECONFLICT) and changes nothing.
func (s *Store) SetPaused(ctx context.Context, desk string, paused bool, audit deskbot.AuditEntry) error {
	flag := "0"
	if paused {
		flag = "1"
	}
	argv := s.appendAuditArgv([]any{flag}, auditFor(audit, "", desk))
	n, err := pauseScript.Run(ctx, s.rdb, []string{s.deskKey(desk), s.auditKey(), s.auditHeadKey()}, argv...).Int()
	if err != nil {
		return s.wrap(err)
	}
	if n == 0 {
		return deskbot.Errorf(deskbot.ECONFLICT, "%s was halted by a risk rule: /resume %s shows why and asks to confirm", desk, desk)
	}
	return nil
}

// A desk's turn, in as few round trips as its order allows: OpenTurn
// (inbox.go) takes a trigger and reads what its turn starts from (takeTurn
// a queued one, openTurn for one the desk waited for), RecordResult
// (below) writes what a call leaves, AnnounceDeskState records and
// announces a state, CloseTurn writes everything the turn ends with. Only
// the desk's own goroutines call them, one turn at a time.

// openScript reads what a turn starts from and, unless the desk is paused,
// marks it working: KEYS are the desk's hash, its history, the trigger's
// completed calls and the event stream; ARGV the first history index to
// read, the working state, the time (ms), its event and the stream's cap.
// It returns the desk's hash as it was, the history and the calls.
var openScript = redis.NewScript(luaOpen + `
local h = open(KEYS[1], KEYS[4], ARGV[2], ARGV[3], ARGV[4], ARGV[5])
return {h, redis.call('LRANGE', KEYS[2], ARGV[1], -1), redis.call('LRANGE', KEYS[3], 0, -1)}
`)

// luaOpen defines open, the part of opening a turn both openScript and
// takeScript (inbox.go) do: read the desk's hash and, unless its pause
// switch is on, save the state (working) at the time given and add its
// event to the event stream, capped; it returns the hash as read.
const luaOpen = `
local function open(desk, events, state, at, event, maxlen)
  local h = redis.call('HGETALL', desk)
  for i = 1, #h, 2 do
    if h[i] == 'paused' and h[i + 1] == '1' then return h end
  end
  redis.call('HSET', desk, 'state', state, 'last_activity', at)
  redis.call('XADD', events, 'MAXLEN', '~', maxlen, '*', 'data', event)
  return h
end
`

// openTurn reads, in one round trip, what a desk's turn starts from: the
// desk's status (its pause switch), its last historyLimit messages of
// history (all when historyLimit <= 0) and the calls already completed for
// the trigger; and, unless the desk is paused, saves and announces it
// working at at, in the same step. The caller reads them after taking the
// trigger, so a pause set while the desk waited is seen. The status
// returned is the one read, before working.
func (s *Store) openTurn(ctx context.Context, desk, triggerID string, historyLimit int, at time.Time) (deskbot.DeskStatus, []deskbot.Message, []deskbot.CompletedCall, error) {
	ev, err := encodeEvent(deskStateEvent(desk, deskbot.DeskWorking, at))
	if err != nil {
		return deskbot.DeskStatus{}, nil, nil, err
	}
	res, err := openScript.Run(ctx, s.rdb, []string{s.deskKey(desk), s.historyKey(desk), s.callsKey(triggerID), s.eventsKey()},
		historyStart(historyLimit), string(deskbot.DeskWorking), at.UnixMilli(), ev, s.opts.EventsMaxLen).Slice()
	if err != nil {
		return deskbot.DeskStatus{}, nil, nil, s.wrap(err)
	}
	if len(res) != 3 {
		return deskbot.DeskStatus{}, nil, nil, fmt.Errorf("store: open turn: %d replies, want 3", len(res))
	}
	st := deskStatus(desk, replyHash(res[0]))
	msgs, err := decodeHistory(s.historyKey(desk), replyStrings(res[1]))
	if err != nil {
		return st, nil, nil, err
	}
	done, err := decodeCompletedCalls(s.callsKey(triggerID), replyStrings(res[2]))
	return st, msgs, done, err
}

// replyHash is a script's reply of HGETALL, as a map.
func replyHash(v any) map[string]string {
	fields := replyStrings(v)
	h := make(map[string]string, len(fields)/2)
	for i := 0; i+1 < len(fields); i += 2 {
		h[fields[i]] = fields[i+1]
	}
	return h
}

// replyStrings is a script's array reply of strings.
func replyStrings(v any) []string {
	vs, _ := v.([]any)
	out := make([]string, 0, len(vs))
	for _, x := range vs {
		if str, ok := x.(string); ok {
			out = append(out, str)
		}
	}
	return out
}

// AnnounceDeskState is SetDeskState and the publication of its desk_state
// event in one MULTI: the state is never saved without its event.
func (s *Store) AnnounceDeskState(ctx context.Context, desk string, state deskbot.DeskState, at time.Time) error {
	ev, err := encodeEvent(deskStateEvent(desk, state, at))
	if err != nil {
		return err
	}
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		s.setDeskState(ctx, p, desk, state, at)
		p.XAdd(ctx, s.streamAdd(s.eventsKey(), ev))
		return nil
	})
	return s.wrap(err)
}

// closeScript writes what a desk's turn ends with, in this order: its
// closing words (ARGV[10], an event; "" for none), its history messages
// (ARGV[13] of them from ARGV[14] on, the list trimmed to the last
// ARGV[9]), the state the desk rests in, announced: waiting when the turn
// held a call (ARGV[2] is "1") or any request of the desk is open (the
// count the transitions' scripts keep), else idle (ARGV[4] and ARGV[5] are
// the idle state and its event, ARGV[6] and ARGV[7] the waiting state and
// its event); and last the acknowledgement of the trigger (stream id
// ARGV[11], "" for none; ARGV[12] is the inbox's group). Beside the state
// it counts the tokens the turn's models spent (ARGV[14]) for the India day
// ARGV[15], starting the day's count afresh on a new day. History messages
// are ARGV[13] of them from ARGV[16] on. It returns the state.
var closeScript = redis.NewScript(`
if ARGV[10] ~= '' then
  redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[8], '*', 'data', ARGV[10])
end
local n = tonumber(ARGV[13])
if n > 0 then
  redis.call('RPUSH', KEYS[4], unpack(ARGV, 16, 15 + n))
  redis.call('LTRIM', KEYS[4], -tonumber(ARGV[9]), -1)
end
local open = tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0') or 0
local state, ev = ARGV[4], ARGV[5]
if ARGV[2] == '1' or open > 0 then state, ev = ARGV[6], ARGV[7] end
redis.call('HSET', KEYS[1], 'state', state, 'last_activity', ARGV[3])
local spent = tonumber(ARGV[14])
if spent > 0 then
  if redis.call('HGET', KEYS[1], 'tokens_day') == ARGV[15] then
    redis.call('HINCRBY', KEYS[1], 'tokens', spent)
  else
    redis.call('HSET', KEYS[1], 'tokens_day', ARGV[15], 'tokens', spent)
  end
end
redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[8], '*', 'data', ev)
if ARGV[11] ~= '' then
  redis.call('XACK', KEYS[5], ARGV[12], ARGV[11])
  redis.call('XDEL', KEYS[5], ARGV[11])
end
return state
`)

// CloseTurn writes what a desk's turn ends with (deskbot.TurnEnd), in one
// script (one round trip, EVALSHA) and in this order: its closing words
// (an event), its history messages (the history trimmed to HistoryLimit),
// the state the desk rests in, announced, with the day's tokens counted;
// and last the acknowledgement of the trigger (read from the inbox): the
// one way a trigger is acknowledged (XACK and XDEL). It returns that
// state. Once Redis has the script it runs it whole, and replicates
// and persists its writes as one transaction, so a crash never leaves the
// words without the history, the state saved before either, or the trigger
// acknowledged before all of them.
func (s *Store) CloseTurn(ctx context.Context, desk string, end deskbot.TurnEnd) (deskbot.DeskState, error) {
	words, history, heldNow, at, ack := end.Words, end.History, end.HeldNow, end.At, end.Ack
	if ack != nil && ack.StreamID == "" {
		return "", deskbot.Errorf(deskbot.EINVALID, "Only a trigger read from the inbox can be acknowledged")
	}
	var wordsJSON string
	if words != nil {
		var err error
		if wordsJSON, err = encodeEvent(*words); err != nil {
			return "", err
		}
	}
	hist, err := encodeHistory(history)
	if err != nil {
		return "", err
	}
	idle, err := encodeEvent(deskStateEvent(desk, deskbot.DeskIdle, at))
	if err != nil {
		return "", err
	}
	waiting, err := encodeEvent(deskStateEvent(desk, deskbot.DeskWaiting, at))
	if err != nil {
		return "", err
	}
	held := "0"
	if heldNow {
		held = "1"
	}
	ackID := ""
	if ack != nil {
		ackID = ack.StreamID
	}
	args := append([]any{desk, held, at.UnixMilli(), string(deskbot.DeskIdle), idle, string(deskbot.DeskWaiting), waiting,
		s.opts.EventsMaxLen, s.opts.HistoryLimit, wordsJSON, ackID, inboxGroup, len(hist),
		max(end.Tokens, 0), at.In(deskbot.IST).Format(time.DateOnly)}, hist...)
	state, err := closeScript.Run(ctx, s.rdb, []string{s.deskKey(desk), s.openByDeskKey(), s.eventsKey(), s.historyKey(desk), s.inboxKey(desk)}, args...).Text()
	if err != nil {
		return "", s.wrap(err)
	}
	return deskbot.DeskState(state), nil
}

func deskStateEvent(desk string, state deskbot.DeskState, at time.Time) deskbot.Event {
	return deskbot.Event{Kind: deskbot.EventDeskState, Desk: desk, Time: at, Text: string(state)}
}

func deskStatus(desk string, h map[string]string) deskbot.DeskStatus {
	st := deskbot.DeskStatus{Desk: desk, State: deskbot.DeskState(h["state"]), Paused: h["paused"] == "1"}
	if st.State == "" {
		st.State = deskbot.DeskIdle
	}
	st.LastActivity = msField(h["last_activity"])
	st.TokensDay = h["tokens_day"]
	st.Tokens, _ = strconv.ParseInt(h["tokens"], 10, 64)
	st.Halt = decodeHalt(h["halt"])
	st.Restart = decodeRestart(h["restart"])
	return st
}

// RecordResult publishes a call's event (nil: none), remembers c (nil:
// nothing to remember) among the trigger's completed calls, as RememberCall
// does, and publishes result, the call's result event, in one MULTI and in
// that order: a desk's executor does all three after a call.
func (s *Store) RecordResult(ctx context.Context, triggerID string, call *deskbot.Event, c *deskbot.CompletedCall, result deskbot.Event) error {
	var callData, done string
	var err error
	if call != nil {
		if callData, err = encodeEvent(*call); err != nil {
			return err
		}
	}
	if c != nil {
		if done, err = encodeCompleted(*c); err != nil {
			return err
		}
	}
	data, err := encodeEvent(result)
	if err != nil {
		return err
	}
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		if call != nil {
			p.XAdd(ctx, s.streamAdd(s.eventsKey(), callData))
		}
		if c != nil {
			s.pushCompleted(ctx, p, triggerID, done)
		}
		p.XAdd(ctx, s.streamAdd(s.eventsKey(), data))
		return nil
	})
	return s.wrap(err)
}
