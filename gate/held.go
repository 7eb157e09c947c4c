package gate

import (
	"sync"

	"github.com/deskbot/deskbot"
)

// heldCache keeps the requests this gate held, as they were held, so that
// deciding one need not read it back from Redis: a request's content (desk,
// tool, arguments, trigger, expiry) never changes after Hold. It only saves
// a round trip: the decision itself is still the store's atomic transition,
// which checks the state and expiry in Redis, and a request held by another
// process (or forgotten here) is read from the store as before. Entries go
// when the request is decided or lapses through this gate; past max, an
// arbitrary one goes, which costs that request one read.
type heldCache struct {
	mu  sync.Mutex
	max int
	m   map[string]*deskbot.Request
	// shown is what this process's chat showed of a held request's effect
	// (deskbot.ShownState), recorded by Gate.Shown: an allow of a request
	// this gate held reads it here, with no round trip.
	shown map[string]string
}

func newHeldCache(max int) *heldCache {
	return &heldCache{max: max, m: make(map[string]*deskbot.Request), shown: make(map[string]string)}
}

// setShown records what the chat showed of request id, when this gate
// holds it; it reports whether it does.
func (c *heldCache) setShown(id, state string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[id]; !ok {
		return false
	}
	c.shown[id] = state
	return true
}

// shownOf is what the chat showed of request id (ok false when nothing),
// and whether this gate holds it (then nothing recorded means nothing
// shown that depends on the book).
func (c *heldCache) shownOf(id string) (state string, ok, held bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, held = c.m[id]
	state, ok = c.shown[id]
	return state, ok, held
}

func (c *heldCache) put(r *deskbot.Request) {
	cp := *r
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= c.max {
		for id := range c.m {
			delete(c.m, id)
			delete(c.shown, id)
			break
		}
	}
	c.m[r.ID] = &cp
}

// get returns a copy of the request as it was held.
func (c *heldCache) get(id string) (*deskbot.Request, bool) {
	c.mu.Lock()
	r, ok := c.m[id]
	c.mu.Unlock()
	if !ok {
		return nil, false
	}
	cp := *r
	return &cp, true
}

func (c *heldCache) forget(id string) {
	c.mu.Lock()
	delete(c.m, id)
	delete(c.shown, id)
	c.mu.Unlock()
}
