package hub

import (
	"context"
	"fmt"
	"time"

	"github.com/deskbot/deskbot"
)

// MaxChainStrikes is how many strikes on each side of the money a chain
// may show.
const MaxChainStrikes = 25

// chainAsk is a wait for one option chain. The broker reads a chain with
// one request of the quote family (Kite: its instruments from the day's
// list, their prices in one quote request), so a chain takes a slot of
// the quote scheduler, in its lane, like a quote request.
type chainAsk struct {
	key, underlying, expiry string
	strikes                 int
	done                    chan struct{}
	chain                   deskbot.OptionChain
	err                     error
}

type heldChain struct {
	c  deskbot.OptionChain
	at time.Time
}

// optionChain serves a chain in lane: one the hub read less than Fresh
// ago, one already asked for, or a new ask queued in lane.
func (h *Hub) optionChain(ctx context.Context, lane, underlying, expiry string, strikes int) (deskbot.OptionChain, error) {
	if strikes <= 0 {
		strikes = 10
	}
	if strikes > MaxChainStrikes {
		return deskbot.OptionChain{}, deskbot.Errorf(deskbot.EINVALID, "strikes may be at most %d on each side of the money; ask for fewer", MaxChainStrikes)
	}
	key := fmt.Sprintf("%s|%s|%d", underlying, expiry, strikes)
	h.mu.Lock()
	if c, ok := h.chainsHeld[key]; ok && time.Since(c.at) < h.cfg.Fresh {
		h.mu.Unlock()
		return c.c, nil
	}
	a, ok := h.chainsAsked[key]
	if !ok {
		if lane != approvers && len(h.chainQ[lane]) >= MaxLaneWaiting {
			h.mu.Unlock()
			return deskbot.OptionChain{}, deskbot.Errorf(deskbot.EINVALID, "this desk already has %d option chains waiting; wait for their answers before asking more", MaxLaneWaiting)
		}
		a = &chainAsk{key: key, underlying: underlying, expiry: expiry, strikes: strikes, done: make(chan struct{})}
		h.chainsAsked[key] = a
		if len(h.chainQ[lane]) == 0 && lane != approvers {
			h.chainRing = append(h.chainRing, lane)
		}
		h.chainQ[lane] = append(h.chainQ[lane], a)
	}
	h.mu.Unlock()
	h.poke()
	select {
	case <-a.done:
		return a.chain, a.err
	case <-ctx.Done():
		return deskbot.OptionChain{}, deskbot.Errorf(deskbot.EUNAVAILABLE, "the option chain did not come in time; ask again")
	}
}

// nextChainLocked takes the next chain ask: the approvers' first, then
// the desks' in turn. Called with mu held.
func (h *Hub) nextChainLocked() *chainAsk {
	pop := func(lane string) *chainAsk {
		q := h.chainQ[lane]
		if len(q) == 0 {
			return nil
		}
		a := q[0]
		if h.chainQ[lane] = q[1:]; len(h.chainQ[lane]) == 0 {
			delete(h.chainQ, lane)
		}
		return a
	}
	if a := pop(approvers); a != nil {
		return a
	}
	for len(h.chainRing) > 0 {
		lane := h.chainRing[0]
		h.chainRing = h.chainRing[1:]
		if a := pop(lane); a != nil {
			if len(h.chainQ[lane]) > 0 {
				h.chainRing = append(h.chainRing, lane)
			}
			return a
		}
	}
	return nil
}

// fetchChain reads a's chain from the broker and answers everyone
// waiting for it.
func (h *Hub) fetchChain(ctx context.Context, a *chainAsk) {
	h.requests.Add(1)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := h.cfg.Market.OptionChain(ctx, a.underlying, a.expiry, a.strikes)
	h.mu.Lock()
	delete(h.chainsAsked, a.key)
	if err != nil {
		a.err = marketError(err)
	} else {
		a.chain = c
		for k, x := range h.chainsHeld {
			if time.Since(x.at) >= h.cfg.Fresh {
				delete(h.chainsHeld, k)
			}
		}
		h.chainsHeld[a.key] = heldChain{c: c, at: time.Now()}
	}
	h.mu.Unlock()
	close(a.done)
}
