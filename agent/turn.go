package agent

import (
	"context"
	"fmt"
	"log/slog"
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
// whether the trigger is done with (turnAcked: acknowledged when the turn
// closed); turnLeft leaves it in hand for a later attempt
// (every model failed, Redis failed, shutdown). Opening the turn saved the
// desk working; closing it writes the state it rests in, last.
func (k *desk) turn(ctx context.Context, tr *deskbot.Trigger, start turnStart) turnEnd {
	c := k.conversation(tr, start)
	// A call's record may still be to write (Turn.Record): no way out of
	// the turn leaves it so.
	defer c.t.Record()
	if !k.converse(ctx, c) {
		return turnLeft
	}
	c.t.Record() // the last results before the closing words (a capped turn's calls)
	return k.closeTurn(ctx, c)
}

// conv is one turn's conversation with the desk's chain of backends.
type conv struct {
	tr   *deskbot.Trigger
	t    *Turn
	msgs []deskbot.Message
	ids  map[string]bool // the tool call ids used so far (uniqueID)
	tl   turnLog
	log  *slog.Logger
	// used is what the chain's models said the turn's steps cost.
	used deskbot.Usage
}

// conversation starts a turn's conversation: the history, the trigger and,
// after a restart (or an earlier attempt whose models all failed), the
// calls already made for this trigger shown as made, so the model carries
// on instead of starting over; repeats are replayed anyway.
func (k *desk) conversation(tr *deskbot.Trigger, start turnStart) *conv {
	c := &conv{tr: tr, t: start.t, ids: map[string]bool{}, log: k.log.With("trigger", tr.ID, "kind", tr.Kind)}
	c.msgs = append(cleanHistory(start.hist), deskbot.Message{Role: "user", Content: triggerText(tr, k.d.deps.Now())})
	if prior := c.t.Completed(); len(prior) > 0 {
		call := deskbot.Message{Role: "assistant"}
		var results []deskbot.Message
		for _, p := range prior {
			p.Call.ID = uniqueID(c.ids, p.Call.ID, len(c.ids))
			call.ToolCalls = append(call.ToolCalls, p.Call)
			results = append(results, toolMessage(p.Call.ID, p.Result))
			c.tl.note(p.Call, p.Result, p.Result.Held)
		}
		c.msgs = append(append(c.msgs, call), results...)
	}
	return c
}

// converse asks the chain until the model answers without a call, refuses,
// or the step cap ends the turn, running each call it makes. It reports
// false when the turn is to be left for later: a shutdown, or every
// backend of the chain failed (the desk is then settled and the team told
// once).
func (k *desk) converse(ctx context.Context, c *conv) bool {
	specs := k.reg.Specs()
	if c.tr.Kind == deskbot.TriggerWhy {
		// The team asked why before deciding: the desk answers in words
		// and can run nothing, so no tool is offered.
		specs = nil
	}
	var sys string
	var sysAt time.Time
	var failures []string
	m := 0 // the chain's backend now answering
	for step := 0; step < k.cfg.maxSteps(); {
		// The prompt shows the time to the minute: made again only when
		// the minute changed since the last step.
		if now := k.d.deps.Now().Truncate(time.Minute); sys == "" || !now.Equal(sysAt) {
			sys, sysAt = SystemPrompt(k.cfg, specs, now), now
		}
		reply, err := k.ask(ctx, k.models[m], c, deskbot.ModelRequest{System: sys, Messages: c.msgs, Tools: specs})
		if ctx.Err() != nil {
			return false
		}
		if err != nil {
			if deskbot.ErrorCode(err) != deskbot.EUNAVAILABLE {
				// The provider refused the request: trying again will not
				// change its mind, so the turn ends and the team is told.
				c.log.ErrorContext(ctx, "model refused", "model", k.models[m].Name(), "err", err)
				c.tl.final = "I could not finish this turn: my model refused the request (" + deskbot.ErrorMessage(err) + ")."
				k.say(ctx, c.tr.ID, c.tl.final)
				return true
			}
			failures = append(failures, deskbot.ErrorMessage(err))
			if m++; m == len(k.models) {
				k.unreachable(ctx, c.tr, failures)
				k.settle(ctx, c.tl.held)
				return false
			}
			c.log.WarnContext(ctx, "model failed; the next in the chain takes over", "failed", k.models[m-1].Name(), "next", k.models[m].Name(), "err", err)
			c.t.Failover()
			continue
		}
		k.reachable(ctx, k.models[m])
		step++
		for i := range reply.ToolCalls {
			reply.ToolCalls[i].ID = uniqueID(c.ids, reply.ToolCalls[i].ID, step*100+i)
		}
		if c.tr.Kind == deskbot.TriggerWhy && len(reply.ToolCalls) > 0 {
			// Offered none, a model that calls tools anyway runs nothing:
			// its words are the answer, its calls are dropped.
			c.log.WarnContext(ctx, "a model called tools in a turn that has none; nothing ran", "calls", len(reply.ToolCalls))
			reply.ToolCalls = nil
		}
		c.msgs = append(c.msgs, deskbot.Message{Role: "assistant", Content: reply.Text, ToolCalls: reply.ToolCalls})
		if len(reply.ToolCalls) == 0 {
			c.tl.final = strings.TrimSpace(reply.Text)
			// After a hold the chat already shows the request; the words
			// that close the turn ("Waiting for the team.") would be one
			// message more about it. They stay in the history; a desk
			// that has more to say uses send_message.
			c.tl.sayFinal = !c.tl.held
			return true
		}
		for _, call := range reply.ToolCalls {
			ex, err := k.d.exec.Execute(ctx, c.t, call)
			if ctx.Err() != nil {
				return false
			}
			if err != nil {
				c.log.WarnContext(ctx, "tool call failed", "tool", call.Name, "err", err)
			}
			c.msgs = append(c.msgs, toolMessage(call.ID, ex.Result))
			c.tl.note(call, ex.Result, ex.Held || ex.Result.Held)
		}
	}
	c.tl.capped = true
	return true
}

// ask has one backend of the chain answer: a model one step, a turn
// backend the whole turn (its calls going through the executor).
func (k *desk) ask(ctx context.Context, b Backend, c *conv, req deskbot.ModelRequest) (reply deskbot.ModelReply, err error) {
	if b.Turns != nil {
		c.t.Record() // the backend's calls go through t
		reply, err = k.runBackend(ctx, b.Turns, c, req)
		c.used = c.used.Add(reply.Usage)
		return reply, err
	}
	// The last call's record is written while the model reads its result;
	// whatever the answer leads to comes after both.
	c.t.WhileRecording(func() { reply, err = b.Model.Complete(ctx, req) })
	c.used = c.used.Add(reply.Usage)
	return reply, err
}

// closeTurn writes the closing words, the history, the tokens spent, the
// state the desk rests in and the trigger's acknowledgement in one script,
// in that order:
// the resting state is the last state written, and the trigger is
// acknowledged after everything the turn made durable (its calls' records
// were awaited before).
func (k *desk) closeTurn(ctx context.Context, c *conv) turnEnd {
	now := k.d.deps.Now()
	var closing string
	if c.tl.capped {
		closing = fmt.Sprintf("My turn was cut off after %d model steps (the cap for this desk) before I finished. Tell me to continue if it still matters.", k.cfg.maxSteps())
	} else if c.tl.sayFinal {
		closing = c.tl.final
	}
	var words *deskbot.Event
	if closing = strings.TrimSpace(closing); closing != "" {
		words = &deskbot.Event{Kind: deskbot.EventDeskMessage, Desk: k.cfg.Name, Time: now, TriggerID: c.tr.ID, Text: closing}
		if c.tr.Kind == deskbot.TriggerWhy {
			// The answer to "why?" goes under the request it explains.
			words.RequestID = c.tr.RequestID
		}
	}
	history := []deskbot.Message{
		{Role: "user", Content: argtext.Clip(triggerText(c.tr, now), historyText, "… (cut)")},
		{Role: "assistant", Content: c.tl.summary()},
	}
	st, err := k.d.deps.Store.CloseTurn(context.WithoutCancel(ctx), k.cfg.Name, deskbot.TurnEnd{
		Words: words, History: history, Tokens: c.used.Total(), HeldNow: c.tl.held, At: now, Ack: c.tr,
	})
	if err != nil {
		// The turn's calls are remembered; the trigger is acknowledged
		// with the resting state alone, with tries. The state is unknown
		// until then, so the next one is written whatever it is.
		c.log.WarnContext(ctx, "could not save the end of the turn (words, history, state)", "err", err)
		k.state = ""
		k.ack(ctx, c.tr, c.tl.held)
		return turnAcked
	}
	k.state = st
	return turnAcked
}

// settle sets the state a desk rests in after a turn left for later:
// waiting for approval while any request of the desk is open (this turn's
// or an earlier one's), else idle.
func (k *desk) settle(ctx context.Context, heldNow bool) {
	waiting := heldNow
	if !waiting {
		n, err := k.d.deps.Store.OpenRequestCount(context.WithoutCancel(ctx), k.cfg.Name)
		if err != nil {
			k.log.WarnContext(ctx, "could not count open requests", "err", err)
		}
		waiting = n > 0
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
