package hub

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/deskbot/deskbot"
)

// ask is one caller's wait for symbols the hub does not hold fresh.
type ask struct {
	lane  string
	ltp   bool            // only last prices are wanted
	queue []string        // symbols not yet put in a request
	left  map[string]bool // symbols not yet answered
	err   error
	done  chan struct{}
	gone  atomic.Bool // the caller stopped waiting
}

// enqueue queues an ask of symbols in lane.
func (h *Hub) enqueue(lane string, symbols []string, ltp bool) (*ask, error) {
	a := &ask{lane: lane, ltp: ltp, queue: symbols, left: make(map[string]bool, len(symbols)), done: make(chan struct{})}
	for _, s := range symbols {
		a.left[s] = true
	}
	h.mu.Lock()
	if lane != approvers && len(h.lanes[lane]) >= MaxLaneWaiting {
		h.mu.Unlock()
		return nil, deskbot.Errorf(deskbot.EINVALID, "this desk already has %d market requests waiting; wait for their answers before asking more", MaxLaneWaiting)
	}
	if len(h.lanes[lane]) == 0 && lane != approvers {
		h.ring = append(h.ring, lane)
	}
	h.lanes[lane] = append(h.lanes[lane], a)
	h.mu.Unlock()
	h.poke()
	return a, nil
}

// wait waits for a, or for ctx.
func (a *ask) wait(ctx context.Context) error {
	select {
	case <-a.done:
		return a.err
	case <-ctx.Done():
		a.gone.Store(true)
		return deskbot.Errorf(deskbot.EUNAVAILABLE, "the market's answer did not come in time; ask again")
	}
}

// quotesFor serves symbols' quotes in lane: fresh ones from what the hub
// holds, the rest through the scheduler.
func (h *Hub) quotesFor(ctx context.Context, lane string, symbols []string) (map[string]deskbot.Quote, error) {
	symbols = dedupe(symbols)
	out := make(map[string]deskbot.Quote, len(symbols))
	now := time.Now()
	var miss []string
	h.mu.Lock()
	for _, s := range symbols {
		if q, ok := h.quotes[s]; ok && now.Sub(q.at) < h.cfg.Fresh {
			out[s] = h.overlayLocked(q.q)
		} else {
			miss = append(miss, s)
		}
	}
	h.mu.Unlock()
	if len(miss) == 0 {
		return out, nil
	}
	if err := h.check(ctx, miss); err != nil {
		return nil, err
	}
	a, err := h.enqueue(lane, miss, false)
	if err != nil {
		return nil, err
	}
	if err := a.wait(ctx); err != nil {
		return nil, err
	}
	h.mu.Lock()
	for _, s := range miss {
		if q, ok := h.quotes[s]; ok {
			out[s] = h.overlayLocked(q.q)
		}
	}
	h.mu.Unlock()
	return out, nil
}

// check refuses a symbol the broker does not list before it can join a
// request shared with others (an unknown symbol would fail all of it).
func (h *Hub) check(ctx context.Context, symbols []string) error {
	for _, s := range symbols {
		h.mu.Lock()
		_, known := h.quotes[s]
		h.mu.Unlock()
		if known {
			continue
		}
		if _, err := h.cfg.Prices.Instrument(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// overlayLocked is q with a newer streamed last price, if there is one.
func (h *Hub) overlayLocked(q deskbot.Quote) deskbot.Quote {
	if p, ok := h.last[q.Symbol]; ok && p.At.After(q.Last.At) {
		q.Last = p
		if q.Close > 0 {
			q.Change = deskbot.RoundPaise(p.Value - q.Close)
			q.ChangePct = (p.Value - q.Close) / q.Close * 100
		}
	}
	return q
}

// lastPrices serves symbols' last prices in lane.
func (h *Hub) lastPrices(ctx context.Context, lane string, symbols []string) (map[string]deskbot.Price, error) {
	symbols = dedupe(symbols)
	out := make(map[string]deskbot.Price, len(symbols))
	now := time.Now()
	var miss []string
	h.mu.Lock()
	for _, s := range symbols {
		if p, ok := h.freshLastLocked(s, now); ok {
			out[s] = p
		} else {
			miss = append(miss, s)
		}
	}
	h.mu.Unlock()
	if len(miss) == 0 {
		return out, nil
	}
	a, err := h.enqueue(lane, miss, true)
	if err != nil {
		return nil, err
	}
	if err := a.wait(ctx); err != nil {
		return nil, err
	}
	h.mu.Lock()
	for _, s := range miss {
		if p, ok := h.last[s]; ok && p.Value > 0 {
			out[s] = p
		}
	}
	h.mu.Unlock()
	return out, nil
}

// freshLastLocked is s's last price when the stream holds s or the hub
// fetched it less than Fresh ago.
func (h *Hub) freshLastLocked(s string, now time.Time) (deskbot.Price, bool) {
	p, ok := h.last[s]
	if ok && h.streaming.Load() && h.streamed[s] {
		return p, true
	}
	if q, qok := h.quotes[s]; qok && now.Sub(q.at) < h.cfg.Fresh {
		return h.overlayLocked(q.q).Last, q.q.Last.Value > 0
	}
	if f, fok := h.fetched[s]; ok && fok && now.Sub(f) < h.cfg.Fresh {
		return p, true
	}
	return deskbot.Price{}, false
}

// batch is one request of the quote family.
type batch struct {
	symbols []string
	ltp     bool
	asks    []*ask
	poll    bool
}

// nextBatchLocked takes the next request's symbols: the approvers' asks
// first, then the followed symbols' poll when it is due, then the desks'
// asks one symbol each in turn. Called with mu held.
func (h *Hub) nextBatchLocked(now time.Time) batch {
	var b batch
	in := map[string]bool{}
	app := h.live(approvers)
	ltp := true
	for _, a := range app {
		ltp = ltp && a.ltp
	}
	anyDesk := false
	for _, l := range h.ring {
		if len(h.live(l)) > 0 {
			anyDesk = true
			ltp = false // a desk's ask is a full quote
		}
	}
	pollSet := h.pollSetLocked()
	pollDue := len(pollSet) > 0 && (now.Sub(h.lastPoll) >= h.cfg.PollEvery || (len(app) == 0 && !anyDesk))
	if len(app) == 0 && pollDue {
		// An LTP request of the followed symbols not streamed, from
		// where the last poll stopped.
		n := min(len(pollSet), h.cfg.MaxLTP)
		if h.cursor >= len(pollSet) {
			h.cursor = 0
		}
		for i := range n {
			b.symbols = append(b.symbols, pollSet[(h.cursor+i)%len(pollSet)])
		}
		h.cursor = (h.cursor + n) % len(pollSet)
		h.lastPoll = now
		b.ltp, b.poll = true, true
		return b
	}
	limit := h.cfg.MaxQuote
	if ltp {
		limit = h.cfg.MaxLTP
	}
	b.ltp = ltp
	take := func(a *ask) bool {
		for len(a.queue) > 0 {
			s := a.queue[0]
			if in[s] {
				a.queue = a.queue[1:]
				continue
			}
			if len(b.symbols) >= limit {
				return false
			}
			in[s] = true
			b.symbols = append(b.symbols, s)
			a.queue = a.queue[1:]
			return true
		}
		return false
	}
	note := func(a *ask) {
		for _, x := range b.asks {
			if x == a {
				return
			}
		}
		b.asks = append(b.asks, a)
	}
	for _, a := range app {
		note(a)
		for take(a) {
		}
	}
	// The desks in turn, one symbol each, until the request is full or
	// nobody waits; the ring starts one further on each time.
	for len(b.symbols) < limit {
		took := false
		for _, l := range h.ring {
			for _, a := range h.live(l) {
				if len(a.queue) == 0 {
					continue
				}
				note(a)
				if take(a) {
					took = true
				}
				break
			}
			if len(b.symbols) >= limit {
				break
			}
		}
		if !took {
			break
		}
	}
	// Asks whose every symbol is already in this request ride along too.
	for _, l := range append([]string{approvers}, h.ring...) {
		for _, a := range h.live(l) {
			for len(a.queue) > 0 && in[a.queue[0]] {
				a.queue = a.queue[1:]
			}
			if len(a.queue) == 0 {
				note(a)
			}
		}
	}
	if len(h.ring) > 1 {
		h.ring = append(h.ring[1:], h.ring[0])
	}
	return b
}

// quotesWaitingLocked reports whether any quote ask waits.
func (h *Hub) quotesWaitingLocked() bool {
	if len(h.live(approvers)) > 0 {
		return true
	}
	for _, l := range h.ring {
		if len(h.live(l)) > 0 {
			return true
		}
	}
	return false
}

// live is lane's asks still waited for, with those nobody waits for
// dropped.
func (h *Hub) live(lane string) []*ask {
	as := h.lanes[lane]
	kept := as[:0]
	for _, a := range as {
		if !a.gone.Load() {
			kept = append(kept, a)
		}
	}
	h.lanes[lane] = kept
	return kept
}

// pollSetLocked is the followed symbols the stream does not hold.
func (h *Hub) pollSetLocked() []string {
	streaming := h.streaming.Load()
	var out []string
	for s := range h.followed {
		if !streaming || !h.streamed[s] {
			out = append(out, s)
		}
	}
	sortStrings(out)
	return out
}

// quoteLoop makes the quote family's requests, one at a time, each at
// least QuoteEvery after the previous one's answer.
func (h *Hub) quoteLoop(ctx context.Context) {
	var next time.Time
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.wake:
		case <-t.C:
		}
		if d := time.Until(next); d > 0 {
			t.Reset(d)
			continue
		}
		// Chains and quote requests take the slots in turn when both
		// wait.
		h.mu.Lock()
		var ca *chainAsk
		if h.chainNext || !h.quotesWaitingLocked() {
			ca = h.nextChainLocked()
		}
		h.chainNext = ca == nil
		var b batch
		if ca == nil {
			b = h.nextBatchLocked(time.Now())
		}
		h.mu.Unlock()
		if ca != nil {
			h.fetchChain(ctx, ca)
			next = time.Now().Add(h.cfg.QuoteEvery)
			t.Reset(time.Until(next))
			continue
		}
		if len(b.symbols) == 0 {
			h.finish(b, nil)
			h.mu.Lock()
			pollWait := len(h.pollSetLocked()) > 0
			h.mu.Unlock()
			if pollWait {
				t.Reset(h.cfg.QuoteEvery)
			}
			continue
		}
		err := h.fetch(ctx, b)
		// Paced from the answer, not the ask: the broker saw this request
		// before it answered, so the next one reaches it at least
		// QuoteEvery later whatever the network's delays.
		next = time.Now().Add(h.cfg.QuoteEvery)
		h.finish(b, err)
		t.Reset(time.Until(next))
	}
}

// fetch makes b's request and keeps what it answers.
func (h *Hub) fetch(ctx context.Context, b batch) error {
	h.requests.Add(1)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var ticks []deskbot.Tick
	now := time.Now()
	if b.ltp {
		ps, err := h.cfg.Prices.LastPrices(ctx, b.symbols)
		if err != nil {
			h.cfg.Log.Warn("last prices", "symbols", len(b.symbols), "err", err)
			return err
		}
		at := h.cfg.Now()
		h.mu.Lock()
		for s, v := range ps {
			ticks = h.keepLocked(ticks, s, deskbot.Price{Value: v, At: at}, now)
		}
		h.mu.Unlock()
	} else {
		qs, err := h.cfg.Market.Quotes(ctx, b.symbols)
		if err != nil {
			h.cfg.Log.Warn("quotes", "symbols", len(b.symbols), "err", err)
			return err
		}
		h.mu.Lock()
		for s, q := range qs {
			h.quotes[s] = held{q: q, at: now}
			ticks = h.keepLocked(ticks, s, q.Last, now)
		}
		h.mu.Unlock()
	}
	for _, t := range ticks {
		h.emit(t)
	}
	return nil
}

// keepLocked keeps s's polled price p and notes a tick when s is followed
// and its price moved.
func (h *Hub) keepLocked(ticks []deskbot.Tick, s string, p deskbot.Price, now time.Time) []deskbot.Tick {
	if !(p.Value > 0) {
		return ticks
	}
	old, had := h.last[s]
	if had && old.At.After(p.At) {
		return ticks
	}
	h.last[s] = p
	h.fetched[s] = now
	if _, f := h.followed[s]; f && (!had || old.Value != p.Value) {
		ticks = append(ticks, deskbot.Tick{Symbol: s, Price: p})
	}
	return ticks
}

// finish answers b's asks: those with every symbol answered are done;
// a failed request fails the asks that were in it.
func (h *Hub) finish(b batch, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	in := make(map[string]bool, len(b.symbols))
	for _, s := range b.symbols {
		in[s] = true
	}
	for _, a := range b.asks {
		for s := range a.left {
			if in[s] {
				delete(a.left, s)
			}
		}
		if err != nil && a.err == nil {
			a.err = marketError(err)
		}
		if len(a.left) == 0 || err != nil {
			h.dropLocked(a)
			close(a.done)
		}
	}
}

// dropLocked takes a out of its lane.
func (h *Hub) dropLocked(a *ask) {
	as := h.lanes[a.lane]
	for i, x := range as {
		if x == a {
			h.lanes[a.lane] = append(as[:i:i], as[i+1:]...)
			break
		}
	}
	if len(h.lanes[a.lane]) == 0 {
		delete(h.lanes, a.lane)
		for i, l := range h.ring {
			if l == a.lane {
				h.ring = append(h.ring[:i:i], h.ring[i+1:]...)
				break
			}
		}
	}
}

// marketError keeps a coded error's code and words; anything else is the
// market being unreachable.
func marketError(err error) error {
	if deskbot.ErrorCode(err) != "" && deskbot.ErrorCode(err) != deskbot.EINTERNAL {
		return err
	}
	return deskbot.Errorf(deskbot.EUNAVAILABLE, "the market's data could not be read just now; try again in a minute")
}
