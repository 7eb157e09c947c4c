package agent

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/argtext"
)

// turnLog is what a turn did, for the history.
type turnLog struct {
	calls    []string // compact notes of the calls, in order
	held     bool
	final    string
	sayFinal bool // the final words go to the chat (not after a hold)
	capped   bool
}

// turn handles one trigger: the model sees the history and the trigger and
// calls tools until it answers without any, or the step cap. It reports
// whether the trigger is done with (turnDone: to be acknowledged; turnAcked:
// acknowledged already); turnLeft leaves it in hand for a later attempt
// (every model failed, Redis failed, shutdown).
func (k *desk) turn(ctx context.Context, tr *deskbot.Trigger, start turnStart) turnEnd {
	deps := k.d.deps
	log := k.log.With("trigger", tr.ID, "kind", tr.Kind)
	hist, t := start.hist, start.t
	// A call's record may still be to write (Turn.Record): no way out of
	// the turn leaves it so.
	defer t.Record()
	// On a TurnStore, opening the turn saved "working" already (this is
	// then a no-op). Otherwise it is saved and announced while the model is
	// asked: nothing in the turn waits for it. Every way out of the turn
	// waits for it first, so the state the turn ends in is written last.
	working := k.setStateAside(ctx, deskbot.DeskWorking)
	defer working()

	var tl turnLog
	ids := map[string]bool{}
	msgs := append(cleanHistory(hist), deskbot.Message{Role: "user", Content: triggerText(tr, deps.Now())})
	// After a restart (or an earlier attempt whose models all failed) the
	// calls already made for this trigger are shown as made, so the model
	// carries on instead of starting over; repeats are replayed anyway.
	if prior := t.Completed(); len(prior) > 0 {
		call := deskbot.Message{Role: "assistant"}
		var results []deskbot.Message
		for _, c := range prior {
			c.Call.ID = uniqueID(ids, c.Call.ID, len(ids))
			call.ToolCalls = append(call.ToolCalls, c.Call)
			results = append(results, toolMessage(c.Call.ID, c.Result))
			tl.note(c.Call, c.Result, c.Result.Held)
		}
		msgs = append(append(msgs, call), results...)
	}

	specs := k.reg.Specs()
	var sys string
	var sysAt time.Time
	var failures []string
	m := 0 // the chain's backend now answering
	for step := 0; ; {
		if step == k.cfg.maxSteps() {
			tl.capped = true
			break
		}
		// The prompt shows the time to the minute: made again only when
		// the minute changed since the last step.
		if now := deps.Now().Truncate(time.Minute); sys == "" || !now.Equal(sysAt) {
			sys, sysAt = SystemPrompt(k.cfg, specs, now), now
		}
		req := deskbot.ModelRequest{System: sys, Messages: msgs, Tools: specs}
		var reply deskbot.ModelReply
		var err error
		if tb, ok := k.models[m].(TurnBackend); ok {
			t.Record() // the backend's calls go through t
			reply, err = k.runBackend(ctx, tb, t, tr, req, &tl, &msgs, ids)
		} else {
			// The last call's record is written while the model reads its
			// result; whatever the answer leads to comes after both.
			t.WhileRecording(func() { reply, err = k.models[m].Complete(ctx, req) })
		}
		if ctx.Err() != nil {
			return turnLeft
		}
		if err != nil {
			if deskbot.ErrorCode(err) != deskbot.EUNAVAILABLE {
				// The provider refused the request: trying again will not
				// change its mind, so the turn ends and the team is told.
				log.ErrorContext(ctx, "model refused", "model", k.models[m].Name(), "err", err)
				tl.final = "I could not finish this turn: my model refused the request (" + deskbot.ErrorMessage(err) + ")."
				k.say(ctx, tr.ID, tl.final)
				break
			}
			failures = append(failures, deskbot.ErrorMessage(err))
			if m++; m == len(k.models) {
				k.unreachable(ctx, tr, failures)
				working()
				k.settle(ctx, tl.held, nil)
				return turnLeft
			}
			log.WarnContext(ctx, "model failed; the next in the chain takes over", "failed", k.models[m-1].Name(), "next", k.models[m].Name(), "err", err)
			t.Failover()
			continue
		}
		k.reachable(ctx, k.models[m])
		step++
		for i := range reply.ToolCalls {
			reply.ToolCalls[i].ID = uniqueID(ids, reply.ToolCalls[i].ID, step*100+i)
		}
		msgs = append(msgs, deskbot.Message{Role: "assistant", Content: reply.Text, ToolCalls: reply.ToolCalls})
		if len(reply.ToolCalls) == 0 {
			tl.final = strings.TrimSpace(reply.Text)
			// After a hold the chat already shows the request; the words
			// that close the turn ("Waiting for the team.") would be one
			// message more about it. They stay in the history; a desk
			// that has more to say uses send_message.
			tl.sayFinal = !tl.held
			break
		}
		for _, c := range reply.ToolCalls {
			ex, err := deps.Executor.Execute(ctx, t, c)
			if ctx.Err() != nil {
				return turnLeft
			}
			if err != nil {
				log.WarnContext(ctx, "tool call failed", "tool", c.Name, "err", err)
			}
			msgs = append(msgs, toolMessage(c.ID, ex.Result))
			tl.note(c, ex.Result, ex.Held || ex.Result.Held)
		}
	}
	t.Record() // the last results before the closing words (a capped turn's calls)
	var closing string
	if tl.capped {
		closing = fmt.Sprintf("My turn was cut off after %d model steps (the cap for this desk) before I finished. Tell me to continue if it still matters.", k.cfg.maxSteps())
	} else if tl.sayFinal {
		closing = tl.final
	}
	history := []deskbot.Message{
		{Role: "user", Content: argtext.Clip(triggerText(tr, deps.Now()), historyText, "… (cut)")},
		{Role: "assistant", Content: tl.summary()},
	}
	if ts, ok := deps.State.(TurnStore); ok {
		// The closing words, the history, the state the desk rests in and
		// the trigger's acknowledgement go in one script, in that order,
		// after "working": the resting state is the last state written,
		// and the trigger is acknowledged after everything the turn made
		// durable (its calls' records were awaited above).
		var words *deskbot.Event
		if closing = strings.TrimSpace(closing); closing != "" {
			words = &deskbot.Event{Kind: deskbot.EventDeskMessage, Desk: k.cfg.Name, Time: deps.Now(), TriggerID: tr.ID, Text: closing}
		}
		working()
		st, err := ts.CloseTurn(context.WithoutCancel(ctx), k.cfg.Name, words, history, tl.held, deps.Now(), tr)
		if err != nil {
			// As when each was written on its own: the turn's calls are
			// remembered and the trigger is acknowledged (by the caller,
			// with its tries); the state is unknown, so the next one is
			// written whatever it is.
			log.WarnContext(ctx, "could not save the end of the turn (words, history, state)", "err", err)
			k.state = ""
			return turnDone
		}
		k.state = st
		return turnAcked
	}
	// Without a TurnStore: the closing words, the history and the state the
	// desk rests in are independent, so they are in flight at once; the
	// state's event still follows the words in the stream. The trigger is
	// acknowledged (by the caller) only after all of them.
	said := make(chan struct{})
	go func() {
		defer close(said)
		k.say(ctx, tr.ID, closing)
	}()
	saved := make(chan struct{})
	go func() {
		defer close(saved)
		if err := deps.History.AppendHistory(context.WithoutCancel(ctx), k.cfg.Name, history...); err != nil {
			log.WarnContext(ctx, "could not save history", "err", err)
		}
	}()
	working()
	k.settle(ctx, tl.held, said)
	<-said
	<-saved
	return turnDone
}

// openCounter counts a desk's open requests in constant time (the store).
type openCounter interface {
	OpenRequestCount(ctx context.Context, desk string) (int64, error)
}

// settle sets the state a desk rests in after a turn: waiting for approval
// while any request of the desk is open (this turn's or an earlier one's),
// else idle. The new state is saved only after before is closed (nil: at
// once), so that its event follows the turn's last words; the count of open
// requests is read meanwhile.
func (k *desk) settle(ctx context.Context, heldNow bool, before <-chan struct{}) {
	waiting := heldNow
	if rs := k.d.deps.Requests; rs != nil && !waiting {
		if c, ok := rs.(openCounter); ok {
			n, err := c.OpenRequestCount(context.WithoutCancel(ctx), k.cfg.Name)
			waiting = n > 0
			if err != nil {
				k.log.WarnContext(ctx, "could not count open requests", "err", err)
			}
		} else {
			open, err := rs.OpenRequests(context.WithoutCancel(ctx))
			for _, r := range open {
				waiting = waiting || r.Desk == k.cfg.Name
			}
			if err != nil {
				k.log.WarnContext(ctx, "could not read open requests", "err", err)
			}
		}
	}
	if before != nil {
		<-before
	}
	if waiting {
		k.setState(ctx, deskbot.DeskWaiting)
	} else {
		k.setState(ctx, deskbot.DeskIdle)
	}
}

func toolMessage(id string, r deskbot.ToolResult) deskbot.Message {
	return deskbot.Message{Role: "tool", ToolCallID: id, Content: r.Text, IsError: r.IsError}
}

// uniqueID keeps tool call ids unique within a turn's conversation, as
// providers require: some local models number their calls afresh each step.
func uniqueID(seen map[string]bool, id string, n int) string {
	if id == "" || seen[id] {
		base := id
		if base == "" {
			base = "call"
		}
		for id = fmt.Sprintf("%s_%d", base, n); seen[id]; n++ {
			id = fmt.Sprintf("%s_%d", base, n)
		}
	}
	seen[id] = true
	return id
}
