package store

import (
	"errors"
	"runtime"
	"time"

	"github.com/redis/go-redis/v9"
)

// The store's connections come from four pools, each a go-redis client of
// its own on the same Redis, so that no kind of work can take another's
// connections:
//
//	work   the desks' turns, the gate, the sweep, the paper broker, the
//	       metrics and the page: everything a Store from Open sends
//	chat   the bot's commands and the outbox (Store.Chat)
//	lease  the leader lease (Store.Lease): a renewal never waits for a
//	       connection behind anything else
//	inbox  the one blocking read that waits for every idle desk's inbox
//	       at once (inboxHub, inboxwait.go)
//
// An idle desk holds no connection: it waits on the inbox hub, which holds
// one for all of them. Before, each idle desk held one of the work pool's
// connections for as long as its XREADGROUP blocked, and past the pool's
// size every other command waited for one until the pool's timeout.
//
// Sizes follow what the process runs (budgets). A pool opens connections
// only as commands need them, so a large size costs nothing until a burst
// uses it, and idle connections beyond the pool's idle count are closed as
// they come back.

// budget is one pool's share of connections.
type budget struct {
	name    string
	size    int           // PoolSize: connections at most
	idle    int           // MaxIdleConns: kept open once returned
	timeout time.Duration // PoolTimeout: how long a command waits for a connection
}

// poolWait is how long a command waits for a free connection before it
// fails as EUNAVAILABLE: go-redis's default (its read timeout and a
// second). With the budgets below a command waits for one only when more
// of its own kind run at once than the pool has connections.
const poolWait = 4 * time.Second

// budgets sizes the pools for a process that runs desks desks, on
// GOMAXPROCS processors.
//
// Work: go-redis's default (10 a processor) for the gate, the sweep and the
// rest, and two a desk: a desk's turn sends one command at a time, and at
// most one more (a write the executor overlaps with the model's next
// request). With every desk in a turn at once no desk waits for a
// connection behind another: Redis, which runs one command at a time
// anyway, queues them instead. Kept idle: the default, so that a burst's
// extra connections are closed once it is over.
//
// Chat: the outbox holds one blocking read of the event stream and sends
// one command beside it; the bot runs a chat's messages one at a time and
// taps side by side. Eight is all of that at once with room over.
//
// Lease: one renewal at a time, and one for a redial.
//
// Inbox: the hub's one read, and one for a redial.
func budgets(desks int) (work, chat, lease, inbox budget) {
	procs := runtime.GOMAXPROCS(0)
	work = budget{name: "work", size: 10*procs + 2*max(desks, 0), idle: 10 * procs, timeout: poolWait}
	chat = budget{name: "chat", size: 8, idle: 4, timeout: poolWait}
	lease = budget{name: "lease", size: 2, idle: 2, timeout: poolWait}
	inbox = budget{name: "inbox", size: 2, idle: 2, timeout: poolWait}
	return work, chat, lease, inbox
}

// pools are a Store's clients, one per budget.
type pools struct {
	work, chat, lease, inbox redis.UniversalClient
	budgets                  [4]budget // in the order above
}

// openPools builds the four clients, the retry of short outages on each
// but the inbox's (the hub retries its read itself), and the inbox hub.
func (s *Store) openPools() error {
	w, c, l, i := budgets(s.opts.Desks)
	p := &s.sh.pools
	p.budgets = [4]budget{w, c, l, i}
	for _, x := range []struct {
		to *redis.UniversalClient
		b  budget
	}{{&p.work, w}, {&p.chat, c}, {&p.lease, l}, {&p.inbox, i}} {
		cl, err := newClient(s.opts, s.url, false, x.b)
		if err != nil {
			return err
		}
		if x.b.name != "inbox" {
			cl.AddHook(blipHook{s})
		}
		*x.to = cl
	}
	s.rdb = p.work
	s.sh.hub = newInboxHub(s, p.inbox)
	return nil
}

// closePools stops the hub and closes every client opened.
func (s *Store) closePools() error {
	if h := s.sh.hub; h != nil {
		h.stop()
	}
	p := &s.sh.pools
	var errs []error
	for _, c := range []redis.UniversalClient{p.work, p.chat, p.lease, p.inbox} {
		if c != nil {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}

// Lease is a view of the Store whose commands use the lease's pool: what
// the leader lease is taken, renewed and released through (the rest of the
// Store works the same through it). Closing it does nothing.
func (s *Store) Lease() *Store { return s.viewOn(s.sh.pools.lease) }

// Chat is a view of the Store whose commands use the chat's pool: what the
// bot and the outbox run on, so that no number of busy desks keeps the chat
// waiting for a connection. Closing it does nothing.
func (s *Store) Chat() *Store { return s.viewOn(s.sh.pools.chat) }

func (s *Store) viewOn(c redis.UniversalClient) *Store {
	v := *s
	v.rdb, v.view = c, true
	return &v
}

// PoolStat is one pool's budget and go-redis's counts for it.
type PoolStat struct {
	Pool  string // work, chat, lease or inbox
	Size  int    // connections at most
	Stats redis.PoolStats
}

// PoolStats reads every pool's counts (go-redis keeps them in memory; no
// round trip).
func (s *Store) PoolStats() []PoolStat {
	p := &s.sh.pools
	out := make([]PoolStat, 0, 4)
	for i, c := range []redis.UniversalClient{p.work, p.chat, p.lease, p.inbox} {
		if c == nil {
			continue
		}
		out = append(out, PoolStat{Pool: p.budgets[i].name, Size: p.budgets[i].size, Stats: *c.PoolStats()})
	}
	return out
}
