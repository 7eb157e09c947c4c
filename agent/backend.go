package agent

import (
	"context"
	"sync"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/model"
)

// ClaudeCode is the provider, in a desk's chain, of a backend that runs the
// Claude Code CLI (package claudecode builds it).
const ClaudeCode = "claude-code"

// TurnBackend is a backend that runs a whole turn itself, like the Claude
// Code CLI: it plans, calls the desk's tools through req.Call and answers
// with its final words. Every call it makes goes through the same
// ToolCallExecutor as the agent loop's, so it gets the same events, loop
// guard, argument checks, gate and completed-call memory.
//
// RunTurn returns the desk's message to the chat (Text) and the tokens the
// turn spent as the backend reported them (Usage, also with an error: a
// turn cut short spent them all the same, and the desk's daily token rule
// counts them). An error with code EUNAVAILABLE (a crash, a limit, a
// timeout) hands the turn to the next backend of the chain, which is
// shown the calls made so far; any other error ends the turn as a
// refusal. req.Call is not used after RunTurn returns.
type TurnBackend interface {
	Name() string
	RunTurn(ctx context.Context, req TurnRequest) (deskbot.ModelReply, error)
}

// Backend is one link of a desk's failover chain: a model the agent loop
// asks step by step, or (Turns set, Model nil) a backend that runs whole
// turns. Which one is fixed where the chain is built (NewModels, by the
// provider's name), so a wrapper around either cannot turn one into the
// other unseen.
type Backend struct {
	Model deskbot.Model
	Turns TurnBackend
}

// Name names the backend, as logs and the chat do.
func (b Backend) Name() string {
	if b.Turns != nil {
		return b.Turns.Name()
	}
	return b.Model.Name()
}

// TurnRequest is one turn handed to a TurnBackend.
type TurnRequest struct {
	Desk, TriggerID string
	System          string             // the desk's system prompt, as the agent loop sends it
	Trigger         string             // the trigger, as the model reads it
	Tools           []deskbot.ToolSpec // the desk's tools, as the agent loop offers them
	// Completed lists the calls already completed for this trigger (by an
	// earlier backend or attempt): their results stand, and a repeat is
	// answered from memory without running again.
	Completed []deskbot.CompletedCall
	MaxSteps  int // the desk's cap on model steps
	// Call runs one tool call through the executor and returns what the
	// model is told. Calls are run one at a time, in arrival order.
	Call func(ctx context.Context, call deskbot.ToolCall) deskbot.ToolResult
}

// Backends builds the backends of providers the model package does not
// know (ClaudeCode), by provider name.
type Backends map[string]func(desk DeskConfig, c model.Config) (TurnBackend, error)

// runBackend runs one turn on a TurnBackend. The calls it makes are noted
// for the history and added to the conversation, so a backend taking over
// after a failure sees them as made.
func (k *desk) runBackend(ctx context.Context, tb TurnBackend, c *conv, req deskbot.ModelRequest) (deskbot.ModelReply, error) {
	var mu sync.Mutex // the Turn serves one call at a time
	n, over := 0, false
	call := func(_ context.Context, tc deskbot.ToolCall) deskbot.ToolResult {
		mu.Lock()
		defer mu.Unlock()
		if over || ctx.Err() != nil {
			return deskbot.ToolResult{IsError: true, Text: "This turn has ended; " + tc.Name + " was not run."}
		}
		if c.tr.Kind == deskbot.TriggerWhy {
			// Offered no tools, a backend that calls one anyway runs nothing.
			return deskbot.ToolResult{IsError: true, Text: "You cannot call tools in this turn; " + tc.Name + " was not run."}
		}
		n++
		tc.ID = uniqueID(c.ids, tc.ID, 1000+n)
		// The turn's context, not the caller's: a call that started runs
		// to its end and is remembered even if the backend dies meanwhile.
		ex, err := k.d.exec.Execute(ctx, c.t, tc)
		// Remembered before the backend hears the result: it goes on
		// thinking on its own, and nothing here would write the record
		// until its next call.
		c.t.Record()
		if err != nil {
			c.log.WarnContext(ctx, "tool call failed", "tool", tc.Name, "err", err)
		}
		c.msgs = append(c.msgs, deskbot.Message{Role: "assistant", ToolCalls: []deskbot.ToolCall{tc}}, toolMessage(tc.ID, ex.Result))
		c.tl.note(tc, ex.Result, ex.Held || ex.Result.Held)
		return ex.Result
	}
	reply, err := tb.RunTurn(ctx, TurnRequest{
		Desk: k.cfg.Name, TriggerID: c.tr.ID, System: req.System, Trigger: triggerText(c.tr, k.d.deps.Now()),
		Tools: req.Tools, Completed: c.t.Completed(), MaxSteps: k.cfg.maxSteps(), Call: call,
	})
	mu.Lock() // waits for a call still running
	over = true
	mu.Unlock()
	return deskbot.ModelReply{Text: reply.Text, Usage: reply.Usage}, err
}
