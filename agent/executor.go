package agent

import (
	"context"
	"log/slog"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/words"
)

// Gatekeeper is the part of the gate the executor needs: its answer to a
// desk's call (run, held or refused, with the desk's hard limits inside).
type Gatekeeper interface {
	Ask(ctx context.Context, desk, triggerID string, call deskbot.ToolCall, beforeHold func()) (deskbot.Verdict, error)
}

// ToolCallExecutor is the one path from a model's tool call to its result:
// publish the call, loop guard, argument checks, gate, run (under its call
// key, withCallKey), remember the completed call for the trigger, publish
// the result. Every call gets both
// events, whatever became of it (replayed, refused, held, run, failed).
//
// Before the gate sees a call, the tool may refuse its arguments
// (deskbot.Tool's CheckArguments): that goes back to the model as an
// error. The gate then answers the call (Gatekeeper.Ask): it refuses a
// call over its desk's hard limits (audited) and a guarded call it could
// not show an approver as it would run, holds a guarded call no grant
// covers, and lets the rest run.
type ToolCallExecutor struct {
	Runner Toolbox
	Gate   Gatekeeper
	Events deskbot.Publisher
	// Memory remembers each call with its events, in one round trip
	// written while the model reads the result (Turn.WhileRecording).
	Memory     deskbot.CallMemory
	Now        deskbot.Now
	MaxRepeats int // loop guard: identical calls allowed per turn (default 3)
	// Reader reads a call once where it enters (package sizing): an order
	// is parsed, checked by the broker and sized here, and the limits, the
	// gate and the chat use what it read (deskbot.ToolCall.Order). nil
	// (tests of other parts): calls go on as sent, and an order is never
	// sized, so four eyes counts it as large and no capped grant covers it.
	Reader Reader
	Log    *slog.Logger
}

// Reader reads a call once: sizing.Sizer.
type Reader interface {
	Read(ctx context.Context, desk string, call deskbot.ToolCall) (deskbot.ToolCall, error)
}

// Toolbox runs a desk's calls and names the tool a call would run, so its
// CheckArguments is consulted before the gate (Registries is one).
type Toolbox interface {
	deskbot.ToolRunner
	Tool(desk, name string) (deskbot.Tool, bool)
}

// Turn is the executor's state for one trigger's turn.
type Turn struct {
	Desk, TriggerID string
	guard           *LoopGuard
	// prior holds calls completed for this trigger before this attempt (by
	// an earlier backend or before a restart), not yet matched by a repeat.
	prior []deskbot.CompletedCall
	done  []deskbot.CompletedCall
	// held answers a repeat of a call held in this attempt: holding it again
	// would put a second, identical request before the team, and allowing
	// both would run the call twice.
	held map[string]deskbot.ToolResult
	// callEvent is the event of the call being executed (nil outside
	// Execute).
	callEvent *pendingEvent
	// record writes the last call's record (its events and its memory);
	// nil once written, or when there is none to write.
	record func()
}

// Record writes the last call's record, if it is still to be written:
// the call remembered for the trigger, its events published. Execute
// leaves it to be written while the model reads the result
// (WhileRecording). Whatever follows must come after it (a next
// call must not run before the last one is remembered, and the turn's
// closing words and acknowledgement follow its results), so Execute calls
// it before the next call, and the turn before it closes and on every way
// out.
func (t *Turn) Record() {
	if r := t.record; r != nil {
		t.record = nil
		r()
	}
}

// WhileRecording runs read (the model reading the results) on another
// goroutine while this one writes the last call's record, and returns when
// both are done. The record goes out from here at once, as it did when
// nothing overlapped it, and not from a goroutine of its own that would
// wait for a processor while the model's request is made: the time between
// a call ending and Redis knowing it ran (in which a crash would have the
// call run again) stays one round trip. read must not use the Turn.
func (t *Turn) WhileRecording(read func()) {
	if t.record == nil {
		read()
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		read()
	}()
	t.Record()
	<-done
}

// Execution is the outcome of one call.
type Execution struct {
	Result   deskbot.ToolResult
	Held     bool             // the call became a permission request; the turn should end
	Replayed bool             // the call had already completed for this trigger; it was not run again
	Refused  bool             // the loop guard, an argument check or a hard limit refused it: nothing ran, nothing was held
	Request  *deskbot.Request // when Held
	Grant    *deskbot.Grant   // the standing grant it ran under, when one let it run
}

// Resume starts a turn for trigger from the calls already completed for it,
// as the desk read them from the store with its turn's other reads, in one
// round trip.
func (e *ToolCallExecutor) Resume(desk, triggerID string, prior []deskbot.CompletedCall) *Turn {
	max := e.MaxRepeats
	if max == 0 {
		max = 3
	}
	return &Turn{Desk: desk, TriggerID: triggerID, guard: NewLoopGuard(max), prior: prior}
}

// Completed lists every call completed for the trigger so far, for handing
// to a fallback backend.
func (t *Turn) Completed() []deskbot.CompletedCall {
	return append(append([]deskbot.CompletedCall(nil), t.prior...), t.done...)
}

// Failover starts a new attempt by another backend: every call completed so
// far becomes prior, so a repeat of one is answered from memory.
func (t *Turn) Failover() {
	t.prior = t.Completed()
	t.done = nil
}

// Execute runs one call for the turn. A system failure (the tool could not
// run) is returned as an error, with a result fit to tell the model.
//
// Execute returns before the call's record is written: the caller has it
// written (Turn.Record, Turn.WhileRecording) before anything that must
// follow it.
func (e *ToolCallExecutor) Execute(ctx context.Context, t *Turn, call deskbot.ToolCall) (Execution, error) {
	// The last call is remembered before this one runs: a crash now must
	// not find this call's result without that one's.
	t.Record()
	log := e.log().With("desk", t.Desk, "trigger", t.TriggerID, "tool", call.Name, "call", call.ID)
	// The call's event is published when the call has taken callEventWait
	// without an outcome (a command people should see running), or before
	// a hold (the request never precedes its call in the stream); a call
	// done sooner has it published with its result, in the same round
	// trip, in that order. The call is remembered with its result event, in
	// one MULTI.
	callEv := deskbot.Event{Kind: deskbot.EventToolCall, Desk: t.Desk, Time: e.now(), TriggerID: t.TriggerID, Call: &call}
	pending := publishLater(callEventWait, func() { e.publish(ctx, log, callEv) })
	t.callEvent = pending
	ex, remember, err := e.execute(ctx, log, t, call)
	t.callEvent = nil
	callFirst := pending.takeOver()
	res := ex.Result
	// A call run under a standing grant says whose, so the chat can tell
	// the team who let it run without asking.
	resultEv := deskbot.Event{Kind: deskbot.EventToolResult, Desk: t.Desk, Time: e.now(), TriggerID: t.TriggerID, Call: &call, Result: &res, Grant: ex.Grant}
	var first *deskbot.Event
	if callFirst {
		first = &callEv
	}
	t.record = func() {
		if rerr := e.Memory.RecordResult(context.WithoutCancel(ctx), t.TriggerID, first, remember, resultEv); rerr != nil {
			// If the call ran, only a repeat after a crash is at risk now.
			log.ErrorContext(ctx, "could not remember the call and publish its events", "remember", remember != nil, "err", rerr)
		}
	}
	return ex, err
}

// callEventWait is how long a call may take before its event is published
// on its own: people watching see a slow call while it runs; a quick one's
// event goes with its result.
const callEventWait = 50 * time.Millisecond

// pendingEvent is an event published by a timer unless it is published or
// taken over first. Only the goroutine that made it calls its methods.
type pendingEvent struct {
	timer   *time.Timer
	publish func()
	done    chan struct{} // closed when the timer's publish returned
	settled bool          // published, or taken over
}

func publishLater(after time.Duration, publish func()) *pendingEvent {
	p := &pendingEvent{publish: publish, done: make(chan struct{})}
	p.timer = time.AfterFunc(after, func() {
		defer close(p.done)
		publish()
	})
	return p
}

// publishNow publishes the event unless it is (being) published already, and
// returns once it is.
func (p *pendingEvent) publishNow() {
	if p.settled {
		return
	}
	p.settled = true
	if p.timer.Stop() {
		p.publish()
		return
	}
	<-p.done
}

// takeOver reports whether the event is still to be published, and if so
// stops the timer: the caller publishes it. Otherwise it returns once the
// event is published.
func (p *pendingEvent) takeOver() bool {
	if p.settled {
		return false
	}
	p.settled = true
	if p.timer.Stop() {
		return true
	}
	<-p.done
	return false
}

// execute runs the call and returns, besides its outcome, the completed
// call the trigger must remember (nil when nothing is to be remembered).
func (e *ToolCallExecutor) execute(ctx context.Context, log *slog.Logger, t *Turn, call deskbot.ToolCall) (Execution, *deskbot.CompletedCall, error) {
	if c, ok := t.takePrior(call); ok {
		// Same name and arguments as a call completed earlier for this
		// trigger: the model is told what happened then, nothing runs.
		return Execution{Result: c.Result, Replayed: true}, nil, nil
	}
	if res, ok := t.held[callKey(call)]; ok {
		return Execution{Result: res, Replayed: true}, nil, nil
	}
	if res, ok := t.guard.Check(call); !ok {
		return Execution{Result: res, Refused: true}, nil, nil
	}
	if e.Reader != nil {
		read, err := e.Reader.Read(ctx, t.Desk, call)
		switch deskbot.ErrorCode(err) {
		case "":
			call = read
		case deskbot.EINVALID:
			log.InfoContext(ctx, "call refused: reading it", "why", deskbot.ErrorMessage(err))
			return Execution{Result: deskbot.ToolResult{IsError: true, Text: deskbot.ErrorMessage(err)}, Refused: true}, nil, nil
		default:
			log.WarnContext(ctx, "call not run: it could not be read", "err", err)
			return Execution{Result: deskbot.ToolResult{IsError: true, Text: words.UncheckedMessage(call.Name, err)}, Refused: true}, nil, nil
		}
	}
	// An order read above was parsed and checked by the broker already,
	// which is all its tool's check does.
	if call.Order == nil {
		if res, ok := e.checkArguments(t.Desk, call); !ok {
			log.InfoContext(ctx, "call refused: arguments", "why", res.Text)
			return Execution{Result: res, Refused: true}, nil, nil
		}
	}
	ex, err := e.gateOrRun(ctx, t, call)
	if ex.Refused {
		return ex, nil, nil
	}
	var remember *deskbot.CompletedCall
	if ex.Held || err == nil {
		c := deskbot.CompletedCall{Call: call, Result: ex.Result}
		t.done = append(t.done, c)
		if ex.Held {
			if t.held == nil {
				t.held = map[string]deskbot.ToolResult{}
			}
			t.held[callKey(call)] = ex.Result
		}
		remember = &c
	}
	return ex, remember, err
}

// checkArguments lets the called tool refuse its arguments (a model's
// mistake, guarded tool or not) before the gate can hold the call.
func (e *ToolCallExecutor) checkArguments(desk string, call deskbot.ToolCall) (deskbot.ToolResult, bool) {
	tool, ok := e.Runner.Tool(desk, call.Name)
	if !ok {
		return deskbot.ToolResult{}, true // the registry tells the model
	}
	args, err := ObjectArguments(call.Arguments)
	if err != nil {
		return deskbot.ToolResult{IsError: true, Text: "The arguments of " + call.Name + " must be a JSON object: " + deskbot.ErrorMessage(err)}, false
	}
	if err := tool.CheckArguments(args); err != nil {
		return deskbot.ToolResult{IsError: true, Text: deskbot.ErrorMessage(err)}, false
	}
	return deskbot.ToolResult{}, true
}

func (e *ToolCallExecutor) gateOrRun(ctx context.Context, t *Turn, call deskbot.ToolCall) (Execution, error) {
	v, err := e.Gate.Ask(ctx, t.Desk, t.TriggerID, call, func() {
		if t.callEvent != nil {
			t.callEvent.publishNow() // the call's event comes before its request's
		}
	})
	defer v.Release() // until the call is held or has run
	if err != nil {
		// Unknown whether a grant covers it, or the hold could not be saved:
		// the call must not run.
		e.log().ErrorContext(ctx, "gate unavailable; call not run", "desk", t.Desk, "trigger", t.TriggerID, "tool", call.Name, "err", err)
		return Execution{Result: deskbot.ToolResult{IsError: true, Text: words.UnrecordedMessage(call.Name, err)}}, nil
	}
	switch {
	case v.Refused:
		return Execution{Result: v.Result, Refused: true}, nil
	case v.Held != nil:
		return Execution{Result: v.Result, Held: true, Request: v.Held}, nil
	}
	under := v.Grant
	start := time.Now()
	res, err := e.Runner.RunTool(withCallKey(ctx, t, call), t.Desk, call)
	if err != nil {
		e.log().ErrorContext(ctx, "tool failed", "desk", t.Desk, "trigger", t.TriggerID, "tool", call.Name, "err", err, "took", time.Since(start))
		return Execution{Result: deskbot.ToolResult{IsError: true, Text: call.Name + " could not run: " + deskbot.ErrorMessage(err)}, Grant: under}, err
	}
	return Execution{Result: res, Grant: under}, nil
}

// withCallKey is ctx carrying the key of call run unguarded in t's turn
// (deskbot.WithCallKey): "<trigger id>:<call id>", the model's call id as
// the turn made it unique. A broker places at most one order per key.
//
// What it guarantees: the trigger keeps its id until its turn ends, so
// this call of this turn, asked of the broker again (the broker's own
// retry, a tool that asks twice), places one order; and a call completed
// for the trigger is remembered and replayed from memory, never run again
// (Turn.takePrior). What it does not: a crash after the call ran and
// before it was remembered leaves nothing of it here, and the replayed
// turn's model asks afresh; a call it makes under a new call id is a new
// call, with a new key, and places a new order. (A model that gives that
// lost call's id to another call, as one numbering its calls afresh each
// turn may, gets the lost call's order back instead: still one order per
// key.) With no trigger or call id there is no key to give, and by
// deskbot.CallKey's contract a broker tool then refuses to trade rather
// than make one up.
func withCallKey(ctx context.Context, t *Turn, call deskbot.ToolCall) context.Context {
	if t.TriggerID == "" || call.ID == "" {
		return ctx
	}
	return deskbot.WithCallKey(ctx, t.TriggerID+":"+call.ID)
}

func (t *Turn) takePrior(call deskbot.ToolCall) (deskbot.CompletedCall, bool) {
	k := callKey(call)
	for i, c := range t.prior {
		if callKey(c.Call) == k {
			t.prior = append(t.prior[:i:i], t.prior[i+1:]...)
			return c, true
		}
	}
	return deskbot.CompletedCall{}, false
}

// publish records an event; events are for people watching, so a failure
// to publish one does not stop the call.
func (e *ToolCallExecutor) publish(ctx context.Context, log *slog.Logger, ev deskbot.Event) {
	if err := e.Events.Publish(ctx, ev); err != nil {
		log.WarnContext(ctx, "could not publish event", "kind", ev.Kind, "err", err)
	}
}

func (e *ToolCallExecutor) now() time.Time {
	if e.Now == nil {
		return time.Now()
	}
	return e.Now()
}

func (e *ToolCallExecutor) log() *slog.Logger {
	if e.Log == nil {
		return discard
	}
	return e.Log
}
