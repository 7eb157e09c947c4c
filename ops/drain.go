package ops

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/deskbot/deskbot"
)

// Drain is the service's graceful stop. A stop has two phases:
//
//  1. Soft: no new work starts. The bot stops polling, the sweeper stops,
//     and a desk asking its inbox for the next trigger is told there is
//     none; but a turn under way carries on, and a tool call that is running
//     (a desk's or a held call a person allowed) keeps its context, because
//     an order cut off half-way is worse than a slower stop.
//  2. Hard: once every turn ended, or the bound passed, everything left is
//     cancelled.
//
// Triggers that arrive meanwhile (a schedule firing) wait in Redis for the
// next start.
//
// The service's loops run through the drain (Go on the soft lifetime,
// GoHard on the hard one: the desks and what they read), so that Finish,
// after Stop, knows what it waits for.
type Drain struct {
	soft, hard       context.Context
	stopSoft, killed context.CancelFunc
	// Failed is told of a loop that returned an error other than a
	// cancellation, the loop's name first; set before the first Go.
	Failed func(error)
	loops  sync.WaitGroup // the loops on the soft lifetime
	desks  sync.WaitGroup // the loops on the hard one

	mu   sync.Mutex
	busy map[string]bool // desks between taking a trigger and finishing with it
	idle chan struct{}   // closed when stopping and no desk is busy
}

// NewDrain is the stop of a service whose lifetime is parent.
func NewDrain(parent context.Context) *Drain {
	d := &Drain{busy: map[string]bool{}, idle: make(chan struct{})}
	d.hard, d.killed = context.WithCancel(parent)
	d.soft, d.stopSoft = context.WithCancel(d.hard)
	return d
}

// Soft is the service's lifetime until the stop begins: what starts new
// work runs on it.
func (d *Drain) Soft() context.Context { return d.soft }

// Hard is the service's lifetime until the hard stop: the desks run on it.
func (d *Drain) Hard() context.Context { return d.hard }

// Idle is closed once stopping with no desk busy.
func (d *Drain) Idle() <-chan struct{} { return d.idle }

// Kill is the hard stop: everything left is cancelled.
func (d *Drain) Kill() { d.killed() }

// Stop begins the soft phase; Idle closes once no desk is busy.
func (d *Drain) Stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stopSoft()
	d.checkIdle()
}

// Go runs f, a loop of the service that starts new work on the soft
// lifetime, until it returns.
func (d *Drain) Go(name string, f func() error) { d.run(&d.loops, name, f) }

// GoHard runs f, a loop on the hard lifetime (the desks, and what they
// read while they run), until it returns.
func (d *Drain) GoHard(name string, f func() error) { d.run(&d.desks, name, f) }

func (d *Drain) run(wg *sync.WaitGroup, name string, f func() error) {
	wg.Go(func() {
		if err := f(); err != nil && !errors.Is(err, context.Canceled) && d.Failed != nil {
			d.Failed(fmt.Errorf("%s: %w", name, err))
		}
	})
}

// Finish ends a stop that Stop began: it waits, up to bound, for the soft
// loops to return (the bot returns once its held calls ran), then for no
// desk to be busy; then it cancels everything left (Kill) and waits for
// the hard loops, quick once cancelled: a turn returns at its next step.
// It reports whether everything finished within bound.
func (d *Drain) Finish(bound time.Duration) (clean bool) {
	timeout := time.After(bound)
	// Once every desk has returned none is busy, whatever the bookkeeping
	// says: a lost lease cancels the desks at once, and a desk cut off
	// mid-turn never says it is done with its trigger.
	desksDone := waitDone(&d.desks)
	select {
	case <-waitDone(&d.loops):
		select {
		case <-d.Idle():
			clean = true
		case <-desksDone:
			clean = true
		case <-timeout:
		}
	case <-timeout:
	}
	d.Kill()
	d.desks.Wait()
	return clean
}

// waitDone is closed once wg is done.
func waitDone(wg *sync.WaitGroup) <-chan struct{} {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	return done
}

func (d *Drain) stopping() bool { return d.soft.Err() != nil }

// checkIdle closes idle once stopping with no desk busy; mu is held.
func (d *Drain) checkIdle() {
	if d.stopping() && len(d.busy) == 0 {
		select {
		case <-d.idle:
		default:
			close(d.idle)
		}
	}
}

func (d *Drain) setBusy(desk string, busy bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if busy {
		d.busy[desk] = true
	} else {
		delete(d.busy, desk)
	}
	d.checkIdle()
}

// runContext is ctx for a tool call: when ctx ends because of a stop, the
// call keeps running until the hard stop; any other end (a deadline, a
// caller giving up) cancels it at once, as before.
func (d *Drain) runContext(ctx context.Context) (context.Context, context.CancelFunc) {
	run, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	unhook := context.AfterFunc(ctx, func() {
		if d.stopping() {
			select {
			case <-d.hard.Done():
			case <-run.Done():
			}
		}
		cancel(context.Cause(ctx))
	})
	return run, func() { unhook(); cancel(context.Canceled) }
}

// WrapTool wraps t so that a stop does not cut its runs short
// (runContext).
func (d *Drain) WrapTool(t deskbot.Tool) deskbot.Tool { return &drainedTool{Tool: t, d: d} }

// WrapTools wraps a source of tools (agent.ToolSource's shape).
func (d *Drain) WrapTools(src func(desk string) []deskbot.Tool) func(desk string) []deskbot.Tool {
	return wrapTools(src, d.WrapTool)
}

// WrapTurns is the desks' store during a stop (drainedTurns).
func (d *Drain) WrapTurns(ts deskbot.TurnStore) deskbot.TurnStore {
	return &drainedTurns{TurnStore: ts, d: d}
}

type drainedTool struct {
	deskbot.Tool
	d *Drain
}

var _ deskbot.Tool = (*drainedTool)(nil)

// CheckArguments forwards to the tool's own check, which a stop leaves as is.
func (t *drainedTool) CheckArguments(args json.RawMessage) error {
	return t.Tool.CheckArguments(args)
}

func (t *drainedTool) Run(ctx context.Context, desk string, args json.RawMessage) (deskbot.ToolResult, error) {
	ctx, cancel := t.d.runContext(ctx)
	defer cancel()
	return t.Tool.Run(ctx, desk, args)
}

// drainedTurns is the desks' store during a stop: a desk that has finished with
// its trigger (closed its turn, or asks to open the next) is no longer
// busy, and once stopping it is handed nothing more. It sees every turn:
// OpenTurn is the only way one opens and CloseTurn the only way a trigger
// is acknowledged. All else is the store's.
type drainedTurns struct {
	deskbot.TurnStore // the store
	d                 *Drain
}

var _ deskbot.TurnStore = (*drainedTurns)(nil)

// OpenTurn: asking means the desk is done with its last trigger, taking one
// makes it busy, and once stopping it takes nothing (the trigger stays
// queued, or in hand for the next start).
func (in *drainedTurns) OpenTurn(ctx context.Context, desk string, block time.Duration, historyLimit int, now deskbot.Now) (deskbot.OpenedTurn, error) {
	in.d.setBusy(desk, false)
	if in.d.stopping() {
		<-ctx.Done() // the desks run on the hard context: wait for it
		return deskbot.OpenedTurn{}, ctx.Err()
	}
	o, err := in.TurnStore.OpenTurn(ctx, desk, block, historyLimit, now)
	if o.Trigger != nil {
		in.d.setBusy(desk, true)
		if in.d.stopping() {
			// The stop came while we waited. Unacknowledged, the trigger
			// is handed back at the next start, which also clears the
			// "working" just saved.
			in.d.setBusy(desk, false)
			<-ctx.Done()
			return deskbot.OpenedTurn{}, ctx.Err()
		}
	}
	return o, err
}

// CloseTurn: a turn that acknowledged its trigger (or tried to) leaves the
// desk no longer busy.
func (in *drainedTurns) CloseTurn(ctx context.Context, desk string, end deskbot.TurnEnd) (deskbot.DeskState, error) {
	st, err := in.TurnStore.CloseTurn(ctx, desk, end)
	if end.Ack != nil {
		in.d.setBusy(desk, false)
	}
	return st, err
}
