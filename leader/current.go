package leader

import (
	"sync/atomic"

	"github.com/deskbot/deskbot"
)

// Current is this process's current term as the parts see it
// (deskbot.Leadership): no term means standby. Safe for concurrent use:
// the term is swapped whole.
type Current struct{ term atomic.Pointer[Term] }

var _ deskbot.Leadership = (*Current)(nil)

// Set makes t the current term.
func (c *Current) Set(t *Term) { c.term.Store(t) }

// Term is the current term; nil while standing by.
func (c *Current) Term() *Term { return c.term.Load() }

// Token is the current term's fencing token; 0 while standing by.
func (c *Current) Token() int64 {
	if t := c.term.Load(); t != nil {
		return t.Token()
	}
	return 0
}

// Valid reports whether this process leads now.
func (c *Current) Valid() bool {
	t := c.term.Load()
	return t != nil && t.Valid()
}
