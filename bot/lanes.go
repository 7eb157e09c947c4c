package bot

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/deskbot/deskbot"
)

// Lane is a message's priority for the chat's sending budget. Lower lanes
// go first: an approver must see a held call within seconds however much
// the desks say.
type Lane int

const (
	// LaneRequest: a held call (or a digest of them) waiting for a person.
	LaneRequest Lane = iota
	// LaneClose: the edits and notices that close a request, and warnings.
	// Right after the held calls: the outbox shows held calls and closes
	// requests one after the other, so anything served before a close
	// would hold back every held call queued behind it.
	LaneClose
	// LaneRemind: a reminder of a request about to lapse. After what shows
	// and closes requests: a request nobody has seen yet goes before a
	// second prompt for one already shown. Before replies and chatter, with
	// chatter's share of the group's minute (Sender.budget).
	LaneRemind
	// LaneReply: the bot's answers to people's commands (the default).
	LaneReply
	// LaneChatter: what desks say.
	LaneChatter
)

type laneKey struct{}

// WithLane returns ctx carrying the lane the Sender schedules its calls in.
func WithLane(ctx context.Context, l Lane) context.Context {
	return context.WithValue(ctx, laneKey{}, l)
}

// laneOf is the lane ctx carries; replies when none.
func laneOf(ctx context.Context) Lane {
	if l, ok := ctx.Value(laneKey{}).(Lane); ok {
		return l
	}
	return LaneReply
}

type checkKey struct{}

// withCheck returns ctx carrying a check the Sender runs right before each
// attempt, once its slot is due and before it books it (Sender.acquire):
// an error stops the call unsent. The outbox checks there that a request
// is still open, so a request that lapsed while its message waited is
// never offered.
func withCheck(ctx context.Context, check func(context.Context) error) context.Context {
	return context.WithValue(ctx, checkKey{}, check)
}

func checkOf(ctx context.Context) func(context.Context) error {
	c, _ := ctx.Value(checkKey{}).(func(context.Context) error)
	return c
}

// lanes are the events the outbox holds unacknowledged, in the order it
// serves them: held calls, then what closes them (and warnings), and desk
// chatter per desk, the desks taking turns. They are only a schedule over
// the stream's pending entries: a crash loses nothing, the entries come
// back and the lanes are rebuilt from them.
type lanes struct {
	mu       sync.Mutex
	seen     map[string]bool
	requests []deskbot.Event
	// shown is closed (and replaced) when a held call leaves its lane.
	shown  chan struct{}
	closes []deskbot.Event
	desks  map[string][]deskbot.Event
	turn   []string // desks with chatter, in turn order
	next   int
	wake   chan struct{}
	order  map[string]int // the order events were added in
	added  int
}

func newLanes() *lanes {
	return &lanes{seen: map[string]bool{}, order: map[string]int{}, desks: map[string][]deskbot.Event{}, wake: make(chan struct{}), shown: make(chan struct{})}
}

// add puts each event at the end of its lane, once however often it is
// read; a batch goes in at once, so a worker sees it whole.
func (q *lanes) add(evs ...deskbot.Event) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, ev := range evs {
		if q.seen[ev.ID] {
			continue
		}
		q.seen[ev.ID] = true
		q.added++
		q.order[ev.ID] = q.added
		switch ev.Kind {
		case deskbot.EventUserRequest:
			q.requests = append(q.requests, ev)
		case deskbot.EventDeskMessage:
			if ev.RequestID != "" {
				// A desk's answer to Why? is part of deciding its request:
				// it goes with the approvals, not behind the chatter.
				q.closes = append(q.closes, ev)
				break
			}
			if len(q.desks[ev.Desk]) == 0 {
				q.turn = append(q.turn, ev.Desk)
			}
			q.desks[ev.Desk] = append(q.desks[ev.Desk], ev)
		default:
			q.closes = append(q.closes, ev)
		}
	}
	close(q.wake)
	q.wake = make(chan struct{})
}

// waiter is closed when an event is next added.
func (q *lanes) waiter() <-chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.wake
}

// drop takes a delivered event off its lane.
func (q *lanes) drop(id string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.seen[id] {
		return
	}
	delete(q.seen, id)
	delete(q.order, id)
	without := func(evs []deskbot.Event) []deskbot.Event {
		return slices.DeleteFunc(evs, func(e deskbot.Event) bool { return e.ID == id })
	}
	n := len(q.requests)
	q.requests, q.closes = without(q.requests), without(q.closes)
	if len(q.requests) < n {
		close(q.shown)
		q.shown = make(chan struct{})
	}
	for d, evs := range q.desks {
		if q.desks[d] = without(evs); len(q.desks[d]) == 0 {
			delete(q.desks, d)
			if i := slices.Index(q.turn, d); i >= 0 {
				q.turn = slices.Delete(q.turn, i, i+1)
				if q.next > i {
					q.next--
				}
			}
		}
	}
}

// heldWaiting reports whether held calls wait in their lane to be shown,
// and returns a channel closed when the next one leaves it.
func (q *lanes) heldWaiting() (bool, <-chan struct{}) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.requests) > 0, q.shown
}

// heldCalls and closing return copies of those lanes.
func (q *lanes) heldCalls() []deskbot.Event {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.requests)
}

func (q *lanes) closing() []deskbot.Event {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.closes)
}

// nextDesk returns the waiting words of the desk whose turn it is to
// speak (a copy), and moves the turn on. Only a run said back to back (no
// other event between them) is returned together, so a merge never
// reorders what the chat sees.
func (q *lanes) nextDesk() []deskbot.Event {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.turn) == 0 {
		return nil
	}
	q.next %= len(q.turn)
	d := q.turn[q.next]
	q.next++
	evs := q.desks[d]
	n := 1
	for n < len(evs) && q.order[evs[n].ID] == q.order[evs[n-1].ID]+1 {
		n++
	}
	return slices.Clone(evs[:n])
}

// backlog is how many of desk's messages wait to be sent.
func (q *lanes) backlog(desk string) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.desks[desk])
}

// ChatBacklog is how many of desk's messages wait in the outbox's chatter
// lane (deskbot.ChatBacklog).
func (b *Bot) ChatBacklog(desk string) int { return b.outbox.q.backlog(desk) }

// Backlog is the bot's ChatBacklog for what is built before the bot (the
// desks' send_message): 0 until Set, then the bot's count. Safe for
// concurrent use.
type Backlog struct{ bot atomic.Pointer[Bot] }

var _ deskbot.ChatBacklog = (*Backlog)(nil)

// Set makes b answer with bot's count.
func (b *Backlog) Set(bot *Bot) { b.bot.Store(bot) }

// ChatBacklog is the bot's count once set, else 0.
func (b *Backlog) ChatBacklog(desk string) int {
	if bot := b.bot.Load(); bot != nil {
		return bot.ChatBacklog(desk)
	}
	return 0
}
