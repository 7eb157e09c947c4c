package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// Each desk's inbox is a stream read by one consumer group with one fixed
// consumer name (keys.go). Acknowledged triggers are deleted, so the
// stream's length is what is queued or in hand.

// Enqueue queues t for its desk, giving it an id and creation time if it has
// none.
func (s *Store) Enqueue(ctx context.Context, t deskbot.Trigger) error {
	if t.Desk == "" {
		return deskbot.Errorf(deskbot.EINVALID, "A trigger needs a desk")
	}
	if t.ID == "" {
		t.ID = uuid.NewString()
	}
	if t.CreatedAt.IsZero() {
		t.CreatedAt = time.Now()
	}
	t.CreatedAt = t.CreatedAt.UTC()
	data, err := encode(t)
	if err != nil {
		return err
	}
	return s.wrap(s.rdb.XAdd(ctx, &redis.XAddArgs{Stream: s.inboxKey(t.Desk), Values: []any{"data", data}}).Err())
}

// NextTrigger returns the trigger in hand and not acknowledged, if any (a
// crash interrupted its turn), else the next queued one, waiting up to block.
// It returns nil when there is none.
//
// The wait holds no connection: the desk waits on the inbox hub
// (inboxwait.go), whose one read waits for every waiting desk at once. A
// desk the hub knows has nothing in hand (its last look found its inbox
// empty, and the hub took nothing for it since) starts waiting at once;
// else it first looks: the trigger in hand and the next queued one are
// asked for in one round trip, without waiting. When both come back, the
// one in hand is returned and the queued one stays in hand, to be returned
// (in order) after it. Anything else (a group still to create, a trimmed
// entry in hand) takes the general path, which does not wait either.
func (s *Store) NextTrigger(ctx context.Context, desk string, block time.Duration) (*deskbot.Trigger, error) {
	key := s.inboxKey(desk)
	h := s.sh.hub
	d := h.desk(key)
	for {
		taken, fresh := h.seen(d)
		if !fresh || block <= 0 {
			// With no wait, only a look finds what was queued: the hub
			// reads only for desks that wait.
			m, found, err := s.lookInbox(ctx, key)
			h.looked(key, taken, err == nil && !found)
			if err != nil || found {
				return m, err
			}
		}
		if block <= 0 {
			return nil, nil
		}
		waits, busy := h.await(ctx, key, d, taken)
		if busy {
			// Two callers waiting for one desk (one worker runs a desk,
			// so only tests do): the second waits as before the hub, on
			// a connection of its own.
			msgs, err := s.readGroup(ctx, key, inboxGroup, inboxConsumer, 1, block)
			if err != nil || len(msgs) == 0 {
				return nil, err
			}
			return decodeTrigger(msgs[0].ID, dataOf(msgs[0]))
		}
		if waits {
			break
		}
	}
	t := time.NewTimer(block)
	defer t.Stop()
	var m redis.XMessage
	select {
	case m = <-d.got:
	case <-t.C:
	case <-ctx.Done():
	}
	if m.ID == "" {
		var handed bool
		if m, handed = h.leave(d); !handed {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			return nil, h.failure()
		}
	}
	if dataOf(m) == "" {
		// Trimmed since it was queued: the general path passes over it.
		tr, _, err := s.lookInbox(ctx, key)
		return tr, err
	}
	return decodeTrigger(m.ID, dataOf(m))
}

// lookInbox is NextTrigger without the wait: the trigger in hand, else the
// next queued one, found reporting whether there was either.
func (s *Store) lookInbox(ctx context.Context, key string) (t *deskbot.Trigger, found bool, err error) {
	var msgs []redis.XMessage
	cmds, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, id := range []string{"0", ">"} {
			p.XReadGroup(ctx, &redis.XReadGroupArgs{Group: inboxGroup, Consumer: inboxConsumer, Streams: []string{key, id}, Count: 1, Block: -1})
		}
		return nil
	})
	if err == nil || err == redis.Nil {
		for _, c := range cmds {
			if res, _ := c.(*redis.XStreamSliceCmd).Result(); len(res) > 0 && len(res[0].Messages) > 0 {
				msgs = res[0].Messages
				break
			}
		}
	}
	if len(msgs) == 0 || dataOf(msgs[0]) == "" {
		if msgs, err = s.readGroup(ctx, key, inboxGroup, inboxConsumer, 1, 0); err != nil || len(msgs) == 0 {
			return nil, false, err
		}
	}
	t, err = decodeTrigger(msgs[0].ID, dataOf(msgs[0]))
	return t, true, err
}

// takeFix is what lets takeScript run after it failed with err, nil when
// nothing does. Nothing ran when Redis does not have the script (yet, or
// since a restart or a failover): it is loaded. Nor when the inbox has no
// group yet: it is made.
func (s *Store) takeFix(ctx context.Context, err error, inbox string) func() error {
	switch {
	case redis.HasErrorPrefix(err, "NOSCRIPT"):
		return func() error { return s.wrap(takeScript.Load(ctx, s.rdb).Err()) }
	case err != nil && strings.Contains(err.Error(), "NOGROUP"):
		// Found in the message, not only at its start: the embedded Redis
		// wraps a script's errors in its own words.
		return func() error { return s.makeGroup(ctx, inbox, inboxGroup) }
	}
	return nil
}

// decodeTrigger is the trigger of inbox entry id, whose data is data.
func decodeTrigger(id, data string) (*deskbot.Trigger, error) {
	var t deskbot.Trigger
	if err := json.Unmarshal([]byte(data), &t); err != nil {
		return nil, fmt.Errorf("store: decode trigger %s: %w", id, err)
	}
	t.StreamID = id
	return &t, nil
}

// takeScript takes the desk's trigger in hand, else the next queued one,
// without waiting, and opens its turn as openScript does (luaOpen): it
// reads the desk's hash and the calls completed for the trigger (the key
// named by ARGV[7] and the trigger's id) and, unless the desk is paused,
// saves and announces it working. It returns false when nothing is queued or in
// hand, {stream id} alone when the entry is one the general path must deal
// with (trimmed, or data that is not a trigger), else {stream id, data,
// hash, completed calls, the trigger id it read}. A group not yet made is
// an error (NOGROUP: takeTurn makes it and asks again).
var takeScript = redis.NewScript(luaOpen + `
local function first(id)
  local r = redis.call('XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', 1, 'STREAMS', KEYS[1], id)
  return r and r[1][2][1]
end
local e = first('0') or first('>')
if not e then return false end
local f = e[2]
if not f or f[1] ~= 'data' then return {e[1]} end
local ok, t = pcall(cjson.decode, f[2])
if not ok or type(t) ~= 'table' or type(t.id) ~= 'string' then return {e[1]} end
local h = open(KEYS[2], KEYS[3], ARGV[4], ARGV[3], ARGV[5], ARGV[6])
return {e[1], f[2], h, redis.call('LRANGE', ARGV[7] .. t.id, 0, -1), t.id}
`)

// OpenTurn is the one way a desk's turn starts: it takes the desk's
// trigger in hand, else the next queued one, waiting up to block when
// there is neither, and reads what its turn starts from: the desk's status
// (its pause switch, read once the trigger is in hand, so a pause that came
// while the desk waited wins), its last historyLimit messages and the
// calls already completed for the trigger; unless the desk is paused it
// saves and announces it working at now(). A paused desk keeps the
// trigger in hand (the inbox hands it back first). OpenedTurn.Trigger is
// nil when none came. An error is the store's: whether a trigger was taken
// is unknown, and the next ask finds it in hand.
//
// A desk that works through a queue starts each turn after one round trip
// (takeTurn); a desk whose last ask took none waits on the inbox at once,
// without asking to take a queued trigger every poll (a round trip and a
// read of its history for nothing); a trigger it waited for is opened in a
// second round trip (openTurn).
func (s *Store) OpenTurn(ctx context.Context, desk string, block time.Duration, historyLimit int, now deskbot.Now) (deskbot.OpenedTurn, error) {
	d := s.sh.hub.desk(s.inboxKey(desk))
	if !d.idle.Load() {
		tr, st, hist, done, err := s.takeTurn(ctx, desk, historyLimit, now())
		if err != nil || tr != nil {
			return deskbot.OpenedTurn{Trigger: tr, Status: st, History: hist, Completed: done}, err
		}
	}
	tr, err := s.NextTrigger(ctx, desk, block)
	if err != nil {
		return deskbot.OpenedTurn{}, err
	}
	if d.idle.Store(tr == nil); tr == nil {
		return deskbot.OpenedTurn{}, nil
	}
	st, hist, done, err := s.openTurn(ctx, desk, tr.ID, historyLimit, now())
	if err != nil {
		return deskbot.OpenedTurn{}, err
	}
	return deskbot.OpenedTurn{Trigger: tr, Status: st, History: hist, Completed: done}, nil
}

// takeTurn is NextTrigger without waiting and openTurn in one round trip:
// it takes the trigger in hand, else the next queued one, and reads what
// its turn starts from, as openTurn does (and, unless the desk is paused,
// saves and announces it working at at). The history is read in the same
// round trip, beside the script rather than through it (Lua would copy
// every message twice). It returns a nil trigger when it took none: the
// inbox is empty, or holds something only NextTrigger deals with (a
// trimmed entry, data that is not a trigger); OpenTurn then waits on
// NextTrigger and calls openTurn.
func (s *Store) takeTurn(ctx context.Context, desk string, historyLimit int, at time.Time) (*deskbot.Trigger, deskbot.DeskStatus, []deskbot.Message, []deskbot.CompletedCall, error) {
	ev, err := encodeEvent(deskStateEvent(desk, deskbot.DeskWorking, at))
	if err != nil {
		return nil, deskbot.DeskStatus{}, nil, nil, err
	}
	keys := []string{s.inboxKey(desk), s.deskKey(desk), s.eventsKey()}
	args := []any{inboxGroup, inboxConsumer, at.UnixMilli(), string(deskbot.DeskWorking), ev, s.opts.EventsMaxLen, s.callsKey("")}
	var took *redis.Cmd
	var hist *redis.StringSliceCmd
	// What the hub took for the desk before the take: an empty inbox makes
	// the desk's next wait start without a look (NextTrigger), unless the
	// hub took something since.
	taken, _ := s.sh.hub.seen(s.sh.hub.desk(keys[0]))
	for try := 0; ; try++ {
		s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			took = takeScript.EvalSha(ctx, p, keys, args...)
			hist = p.LRange(ctx, s.historyKey(desk), historyStart(historyLimit), -1)
			return nil
		})
		fix := s.takeFix(ctx, took.Err(), keys[0])
		if fix == nil || try == 2 {
			break
		}
		if err := fix(); err != nil {
			return nil, deskbot.DeskStatus{}, nil, nil, err
		}
	}
	s.sh.hub.looked(keys[0], taken, took.Err() == redis.Nil)
	switch err := took.Err(); {
	case err == redis.Nil:
		return nil, deskbot.DeskStatus{}, nil, nil, nil // nothing queued or in hand
	case err != nil:
		return nil, deskbot.DeskStatus{}, nil, nil, s.wrap(err)
	}
	if err := hist.Err(); err != nil {
		return nil, deskbot.DeskStatus{}, nil, nil, s.wrap(err)
	}
	res, _ := took.Val().([]any)
	if len(res) != 5 {
		return nil, deskbot.DeskStatus{}, nil, nil, nil // an entry for the general path
	}
	id, _ := res[0].(string)
	data, _ := res[1].(string)
	t, err := decodeTrigger(id, data)
	if err != nil {
		return nil, deskbot.DeskStatus{}, nil, nil, err
	}
	st := deskStatus(desk, replyHash(res[2]))
	msgs, err := decodeHistory(s.historyKey(desk), hist.Val())
	if err != nil {
		return t, st, nil, nil, err
	}
	if used, _ := res[4].(string); used != t.ID {
		// Lua and Go read the id apart (the store never writes such a
		// trigger): the calls are read again under the id the turn uses.
		done, err := s.CompletedCalls(ctx, t.ID)
		return t, st, msgs, done, err
	}
	done, err := decodeCompletedCalls(s.callsKey(t.ID), replyStrings(res[3]))
	return t, st, msgs, done, err
}

// AckTrigger marks t handled and deletes it, in one MULTI. It is for
// drains outside a desk's turn (test fixtures): a desk acknowledges its
// trigger only by closing its turn (CloseTurn).
func (s *Store) AckTrigger(ctx context.Context, t *deskbot.Trigger) error {
	if t == nil || t.StreamID == "" {
		return deskbot.Errorf(deskbot.EINVALID, "Only a trigger read from the inbox can be acknowledged")
	}
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		s.ackTrigger(ctx, p, t)
		return nil
	})
	return s.wrap(err)
}

// ackTrigger queues the acknowledgement of t (read from the inbox) on p.
func (s *Store) ackTrigger(ctx context.Context, p redis.Pipeliner, t *deskbot.Trigger) {
	key := s.inboxKey(t.Desk)
	p.XAck(ctx, key, inboxGroup, t.StreamID)
	p.XDel(ctx, key, t.StreamID)
}

// PendingTriggers counts the desk's triggers queued or in hand.
func (s *Store) PendingTriggers(ctx context.Context, desk string) (int64, error) {
	n, err := s.rdb.XLen(ctx, s.inboxKey(desk)).Result()
	return n, s.wrap(err)
}
