// Package watch owns the desks' price watches: the tools watch_price and
// cancel_watch, and the Evaluator that fires them.
//
// A watch is kept in the store (deskbot.WatchStore) when it is set, so it
// outlives the process; the Evaluator runs on the leader only, reads every
// watch at its start (a restart, a hand-over) and again whenever a tool
// changed one (Changed) and every Refresh, follows the watched symbols
// through the hub (deskbot.Feed, as "watches") and checks every tick
// against the watches of its symbol in memory. A crossing is fired by the
// store's one atomic step (FireWatch: the watch deleted and the desk's
// trigger queued together), so a watch wakes its desk once, whoever fires
// it and whatever fails: a fire that fails is tried again on the next
// tick that crosses, and one that finds the watch gone queues nothing.
//
// Concurrency: the tick callback runs on the hub's goroutine and never
// waits on Redis: it marks a crossed watch as firing and hands it to the
// Evaluator's own goroutine, which writes. Everything the two share is
// guarded by mu.
package watch

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/retry"
	"github.com/deskbot/deskbot/words"
)

// Follower is the name the Evaluator follows its symbols under
// (deskbot.Feed's who).
const Follower = "watches"

// Evaluator fires the desks' watches as the market crosses their levels.
type Evaluator struct {
	Store deskbot.WatchStore
	Feed  deskbot.Feed
	Log   *slog.Logger
	// Refresh is how often every watch is read again, whatever Changed
	// said (default 10 s): a watch set or cancelled through another
	// process is picked up within it.
	Refresh time.Duration

	mu       sync.Mutex
	bySymbol map[string][]deskbot.Watch
	firing   map[string]bool // watch ids handed to the writer
	symbols  []string        // followed, sorted

	fire    chan fired
	changed chan struct{}
	once    sync.Once
	// afterFire, when set (tests, the benchmark), is called after each
	// fire was written.
	afterFire func(w deskbot.Watch, ok bool)
}

type fired struct {
	w deskbot.Watch
	p deskbot.Price
}

func (e *Evaluator) init() {
	e.once.Do(func() {
		e.fire = make(chan fired, 4096)
		e.changed = make(chan struct{}, 1)
		if e.Log == nil {
			e.Log = slog.New(slog.DiscardHandler)
		}
		if e.Refresh <= 0 {
			e.Refresh = 10 * time.Second
		}
	})
}

// Changed tells the Evaluator a watch was set or cancelled: it reads the
// watches again. It never blocks.
func (e *Evaluator) Changed() {
	e.init()
	select {
	case e.changed <- struct{}{}:
	default:
	}
}

// Run evaluates the watches until ctx ends.
func (e *Evaluator) Run(ctx context.Context) error {
	e.init()
	go e.ticks(ctx)
	refresh := time.NewTicker(e.Refresh)
	defer refresh.Stop()
	e.load(ctx)
	for {
		select {
		case <-ctx.Done():
			return nil
		case f := <-e.fire:
			e.write(ctx, f)
		case <-e.changed:
			e.load(ctx)
		case <-refresh.C:
			e.load(ctx)
		}
	}
}

// ticks reads the hub's ticks, again after a break.
func (e *Evaluator) ticks(ctx context.Context) {
	wait := retry.Backoff{Min: 100 * time.Millisecond, Max: 5 * time.Second}
	for ctx.Err() == nil {
		err := e.Feed.Ticks(ctx, e.Tick)
		if ctx.Err() != nil {
			return
		}
		e.Log.Warn("watches: the market's ticks stopped; following again", "err", deskbot.ErrorMessage(err))
		if retry.Sleep(ctx, wait.Next()) != nil {
			return
		}
	}
}

// load reads every watch and follows their symbols.
func (e *Evaluator) load(ctx context.Context) {
	all, err := e.Store.AllWatches(ctx)
	if err != nil {
		e.Log.Warn("watches: could not read the watches; trying again", "err", deskbot.ErrorMessage(err))
		return
	}
	by := make(map[string][]deskbot.Watch)
	for _, w := range all {
		by[w.Symbol] = append(by[w.Symbol], w)
	}
	symbols := make([]string, 0, len(by))
	for s := range by {
		symbols = append(symbols, s)
	}
	slices.Sort(symbols)
	e.mu.Lock()
	e.bySymbol = by
	same := slices.Equal(symbols, e.symbols)
	e.mu.Unlock()
	if same {
		return
	}
	if err := e.Feed.Follow(ctx, Follower, symbols); err != nil {
		e.Log.Warn("watches: could not follow the watched symbols; trying again", "err", deskbot.ErrorMessage(err))
		return
	}
	e.mu.Lock()
	e.symbols = symbols
	e.mu.Unlock()
}

// Tick checks t against its symbol's watches and hands the crossed ones
// to the writer. It never waits: a crossed watch the writer cannot take
// now is left for the next tick.
func (e *Evaluator) Tick(t deskbot.Tick) {
	e.init()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.firing == nil {
		e.firing = make(map[string]bool)
	}
	for _, w := range e.bySymbol[deskbot.OneSpelling(t.Symbol)] {
		if e.firing[w.ID] || !w.Crossed(t.Price.Value) {
			continue
		}
		select {
		case e.fire <- fired{w: w, p: t.Price}:
			e.firing[w.ID] = true
		default:
			return
		}
	}
}

// write fires one crossed watch: its trigger queued and the watch deleted
// in one step. Gone already (fired, cancelled) queues nothing.
func (e *Evaluator) write(ctx context.Context, f fired) {
	ok, err := e.Store.FireWatch(ctx, f.w, words.WatchTrigger(f.w, f.p))
	e.mu.Lock()
	delete(e.firing, f.w.ID)
	if err == nil {
		ws := e.bySymbol[f.w.Symbol]
		e.bySymbol[f.w.Symbol] = slices.DeleteFunc(slices.Clone(ws), func(x deskbot.Watch) bool { return x.ID == f.w.ID })
	}
	e.mu.Unlock()
	if err != nil {
		e.Log.Warn("watches: could not fire a watch; the next crossing tries again", "desk", f.w.Desk, "watch", f.w.ID, "err", deskbot.ErrorMessage(err))
		return
	}
	if ok {
		// Read again: a symbol no watch is left on is no longer followed.
		e.Changed()
		e.Log.Info("watch fired", "desk", f.w.Desk, "watch", f.w.ID, "symbol", f.w.Symbol, "price", f.p.Value)
	}
	if e.afterFire != nil {
		e.afterFire(f.w, ok)
	}
}
