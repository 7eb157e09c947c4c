package store

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/deskbot/deskbot/retry"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// inboxHub waits for every waiting desk's inbox at once: one XREADGROUP
// over all their streams (">" on each, COUNT 1), blocking on the inbox
// pool's one connection, and hands each desk the entry read for it. On a
// Cluster every inbox shares the deployment's slot (keys.go), so the read
// is one command there too.
//
// Why one read rather than a connection per waiting desk: an idle desk then
// costs a map entry and a goroutine asleep, not a connection (and Redis's
// client buffers for it), and no number of desks can use up a pool. Why
// not a notification the writers send: triggers are written by scripts
// (a transition's result), the bot, the schedules and other processes; the
// stream itself is the notification every one of them already sends.
//
// The read ">" takes entries nobody was handed yet, whenever they were
// queued, so a desk that starts waiting misses nothing that was queued
// before the read that includes it. A desk that starts waiting while the
// read in flight leaves its stream out wakes the read: an entry on the
// hub's own wake stream (wakeKey) ends the block, and the next read
// includes the desk. Wakes are coalesced: one in flight at a time.
//
// An entry the read takes for a desk that stopped waiting meanwhile is in
// hand, as if the desk had read it itself: the desk's next take or
// NextTrigger reads what is in hand first. fresh says a desk has nothing in
// hand but what the hub hands it, so its NextTrigger can wait without a
// round trip of its own (for freshFor at most: another process may take
// entries into hand too); taken counts what the hub took for the desk, so
// a look at the inbox that raced with the hub does not call it fresh.
//
// Concurrency: every field below mu is guarded by it; the read runs in the
// hub's one goroutine, started with the first wait and stopped by close.
// Desks wait in their own goroutines.
type inboxHub struct {
	s    *Store                // keys, errors, the inbox groups, the wake (work pool)
	rdb  redis.UniversalClient // the inbox pool: only the hub's read and its wake's ack
	wake string                // this hub's wake stream

	start  sync.Once
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	desks   map[string]*deskWait // by inbox key
	reading map[string]bool      // the inbox keys of the read in flight; nil when none is
	woken   bool                 // a wake was sent to the read in flight
	err     error                // why the last read failed; nil once one did not
	kick    chan struct{}        // cap 1: a desk waits and no read is in flight
	reads   uint64               // reads sent, for PoolStats' neighbours in /metrics
	wakes   uint64               // wakes sent
}

// deskWait is one desk's place at the hub.
type deskWait struct {
	got     chan redis.XMessage // cap 1: what the hub read while the desk waited
	waiting bool                // the desk waits now; the hub hands it the next entry
	fresh   bool                // nothing is in hand for the desk, as of freshAt
	freshAt time.Time
	taken   uint64 // entries the hub took for the desk
	// idle says the desk's last OpenTurn took none: its next waits on the
	// inbox at once, rather than first asking to take a queued trigger (a
	// round trip and a read of the history for nothing, every poll). Only
	// the desk's own goroutine opens its turns.
	idle atomic.Bool
}

// hubBlock is how long one read blocks when nothing comes: a read with
// nothing to hand is sent again after it, over every desk waiting then (one
// command a second for all idle desks). No longer than a desk's own poll
// was: Redis keeps a blocked read registered while its process is frozen
// (a paused leader), and it takes the entries queued meanwhile into hand,
// for the new leader to find only when it looks (freshFor).
const hubBlock = time.Second

// freshFor bounds how long a desk trusts that nothing is in hand for it
// without looking: another process (a leader that lost its lease a moment
// ago) may have taken an entry into hand and stopped before its turn. A
// desk looks again at least this often, a round trip, where it looked at
// every poll before.
const freshFor = 5 * time.Second

// wakeTTL keeps a wake stream that outlived its process (a crash) from
// staying forever; the hub's read recreates it when it lapsed.
const wakeTTL = time.Hour

func newInboxHub(s *Store, rdb redis.UniversalClient) *inboxHub {
	ctx, cancel := context.WithCancel(context.Background())
	return &inboxHub{s: s, rdb: rdb, wake: s.wakeKey(uuid.NewString()), ctx: ctx, cancel: cancel,
		done: make(chan struct{}), desks: map[string]*deskWait{}, kick: make(chan struct{}, 1)}
}

// stop ends the read and deletes the wake stream, before closePools closes
// the pools: a wake ends the read in flight at once, so its goroutine is
// done with the pools before they close. A Redis that does not answer
// leaves the read to end with the pool, after at most a second's wait here.
func (h *inboxHub) stop() {
	h.cancel()
	started := true
	h.start.Do(func() { started = false })
	if !started {
		close(h.done)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	h.s.rdb.XAdd(ctx, &redis.XAddArgs{Stream: h.wake, Values: []any{"w", "stop"}})
	select {
	case <-h.done:
	case <-ctx.Done():
	}
	del, cancelDel := context.WithTimeout(context.Background(), time.Second)
	defer cancelDel()
	h.s.rdb.Del(del, h.wake)
}

// desk is key's place, made on first use.
func (h *inboxHub) desk(key string) *deskWait {
	h.mu.Lock()
	defer h.mu.Unlock()
	d := h.desks[key]
	if d == nil {
		d = &deskWait{got: make(chan redis.XMessage, 1)}
		h.desks[key] = d
	}
	return d
}

// seen is what the desk's next look at its inbox is compared against: the
// count of entries the hub took for it, and whether it is fresh.
func (h *inboxHub) seen(d *deskWait) (taken uint64, fresh bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return d.taken, d.fresh && time.Since(d.freshAt) < freshFor
}

// looked records a look at the desk's inbox that found nothing in hand
// (fresh: also nothing queued) or something (handed out, or an error:
// not fresh), unless the hub took something for the desk since taken.
func (h *inboxHub) looked(key string, taken uint64, fresh bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	d := h.desks[key]
	if d == nil {
		if !fresh {
			return
		}
		d = &deskWait{got: make(chan redis.XMessage, 1)}
		h.desks[key] = d
	}
	if d.fresh = fresh && d.taken == taken; d.fresh {
		d.freshAt = time.Now()
	}
}

// await makes the desk wait (waits), unless the hub took something for it
// since taken (neither: the caller looks at its inbox again) or another
// call waits for the same desk already (busy). It wakes the read in flight
// if that leaves the desk's stream out.
func (h *inboxHub) await(ctx context.Context, key string, d *deskWait, taken uint64) (waits, busy bool) {
	h.start.Do(func() { go h.run() })
	h.mu.Lock()
	if d.waiting {
		h.mu.Unlock()
		return false, true
	}
	if d.taken != taken {
		h.mu.Unlock()
		return false, false
	}
	d.waiting = true
	var wake bool
	switch {
	case h.reading == nil:
		select {
		case h.kick <- struct{}{}:
		default:
		}
	case !h.reading[key] && !h.woken:
		h.woken, wake = true, true
		h.wakes++
	}
	h.mu.Unlock()
	if wake {
		// A lost wake leaves the desk to the next read, at most hubBlock
		// away: nothing to retry here.
		ctx = context.WithoutCancel(ctx)
		h.s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.XAdd(ctx, &redis.XAddArgs{Stream: h.wake, MaxLen: 16, Approx: true, Values: []any{"w", "1"}})
			p.PExpire(ctx, h.wake, wakeTTL)
			return nil
		})
	}
	return true, false
}

// leave ends the desk's wait: the entry the hub handed it, if it did.
func (h *inboxHub) leave(d *deskWait) (redis.XMessage, bool) {
	h.mu.Lock()
	if d.waiting {
		d.waiting = false
		h.mu.Unlock()
		return redis.XMessage{}, false
	}
	h.mu.Unlock()
	return <-d.got, true // handed: the hub sent it before it cleared waiting
}

// failure is why the last read failed, nil if it did not.
func (h *inboxHub) failure() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// run reads for the waiting desks until close.
func (h *inboxHub) run() {
	defer close(h.done)
	backoff := retry.Backoff{Min: 50 * time.Millisecond, Max: time.Second}
	for h.ctx.Err() == nil {
		keys := h.next()
		if keys == nil {
			continue
		}
		streams := make([]string, 0, 2*len(keys)+2)
		streams = append(streams, keys...)
		streams = append(streams, h.wake)
		for range len(keys) + 1 {
			streams = append(streams, ">")
		}
		res, err := h.rdb.XReadGroup(h.ctx, &redis.XReadGroupArgs{Group: inboxGroup, Consumer: inboxConsumer, Streams: streams, Count: 1, Block: hubBlock}).Result()
		if err == redis.Nil {
			err = nil
		}
		if err != nil && strings.Contains(err.Error(), "NOGROUP") {
			// An inbox deleted since its group was made, or the wake
			// stream lapsed: made again, and read at once.
			err = h.makeGroups(append(keys, h.wake))
		}
		h.hand(res, err)
		if err != nil {
			if h.ctx.Err() == nil {
				retry.Sleep(h.ctx, backoff.Next())
			}
			continue
		}
		backoff.Reset()
	}
}

// next is the inbox keys of the desks waiting now, recorded as the read in
// flight; it waits for one to wait if none does (nil: woken or closed, ask
// again).
func (h *inboxHub) next() []string {
	h.mu.Lock()
	var keys []string
	for k, d := range h.desks {
		if d.waiting {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		h.mu.Unlock()
		select {
		case <-h.kick:
		case <-h.ctx.Done():
		}
		return nil
	}
	h.reading = make(map[string]bool, len(keys))
	for _, k := range keys {
		h.reading[k] = true
	}
	h.woken = false
	h.reads++
	select {
	case <-h.kick: // any kick so far is for this read
	default:
	}
	h.mu.Unlock()
	return keys
}

// hand gives each desk the entry read for it, and acknowledges the wakes.
func (h *inboxHub) hand(res []redis.XStream, err error) {
	var wakes []string
	h.mu.Lock()
	h.reading, h.err = nil, nil
	if err != nil && h.ctx.Err() == nil {
		h.err = h.s.wrap(err)
	}
	for _, st := range res {
		if st.Stream == h.wake {
			for _, m := range st.Messages {
				wakes = append(wakes, m.ID)
			}
			continue
		}
		d := h.desks[st.Stream]
		if d == nil {
			continue // every stream read is a desk's; a reply naming another is not ours
		}
		for _, m := range st.Messages {
			d.taken++
			d.fresh = false
			if d.waiting {
				d.waiting = false
				d.got <- m
			}
		}
	}
	h.mu.Unlock()
	if len(wakes) > 0 {
		h.rdb.Pipelined(h.ctx, func(p redis.Pipeliner) error {
			p.XAck(h.ctx, h.wake, inboxGroup, wakes...)
			p.XDel(h.ctx, h.wake, wakes...)
			return nil
		})
	}
}

// makeGroups makes the inbox group on each stream that has none.
func (h *inboxHub) makeGroups(keys []string) error {
	cmds, _ := h.rdb.Pipelined(h.ctx, func(p redis.Pipeliner) error {
		for _, k := range keys {
			p.XGroupCreateMkStream(h.ctx, k, inboxGroup, "0")
		}
		p.PExpire(h.ctx, h.wake, wakeTTL)
		return nil
	})
	for _, c := range cmds {
		if err := c.Err(); err != nil && !strings.HasPrefix(err.Error(), "BUSYGROUP") {
			return err
		}
	}
	return nil
}

// HubStats is what the inbox hub did: desks waiting on it now, reads sent,
// wakes sent (a desk started waiting outside the read in flight).
type HubStats struct {
	Waiting      int
	Reads, Wakes uint64
}

// InboxHubStats reads the hub's counts (in memory; no round trip).
func (s *Store) InboxHubStats() HubStats {
	h := s.sh.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	st := HubStats{Reads: h.reads, Wakes: h.wakes}
	for _, d := range h.desks {
		if d.waiting {
			st.Waiting++
		}
	}
	return st
}
