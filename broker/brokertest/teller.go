package brokertest

import (
	"context"
	"sync"

	"github.com/deskbot/deskbot"
)

// Teller is a deskbot.Teller that keeps what it was told, once per key, as
// the store's does: a test's desk inbox and chat at once. Safe for
// concurrent use.
type Teller struct {
	mu     sync.Mutex
	seen   map[string]bool
	told   []deskbot.Trigger
	events []deskbot.Event
	// Err, when set, fails every TellOnce (the store down).
	Err error
}

var _ deskbot.Teller = (*Teller)(nil)

// TellOnce keeps t and e the first time key is told.
func (tl *Teller) TellOnce(_ context.Context, key string, t *deskbot.Trigger, e *deskbot.Event) (bool, error) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	if tl.Err != nil {
		return false, tl.Err
	}
	if tl.seen[key] {
		return false, nil
	}
	if tl.seen == nil {
		tl.seen = map[string]bool{}
	}
	tl.seen[key] = true
	if t != nil {
		tl.told = append(tl.told, *t)
	}
	if e != nil {
		tl.events = append(tl.events, *e)
	}
	return true, nil
}

// Told is what the desks were told, in order.
func (tl *Teller) Told() []deskbot.Trigger {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return append([]deskbot.Trigger(nil), tl.told...)
}

// Events is what the chat was told, in order.
func (tl *Teller) Events() []deskbot.Event {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return append([]deskbot.Event(nil), tl.events...)
}
