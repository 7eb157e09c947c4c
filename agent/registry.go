// Package agent owns the desks: their tool registries, the loop guard, the
// ToolCallExecutor every call goes through, and the desk loop that turns
// triggers into model turns. A backend that runs whole turns itself
// (TurnBackend: Claude Code) is handed the turn, and its calls come back
// through the same executor. A desk none of whose models answers tells the
// group once per outage (a note per desk, which its loop clears when one
// answers again); a probe at the start tells it the same way
// (Desks.TellUnreachable).
//
// Concurrency: each desk handles one trigger at a time; desks run side by
// side. Registries are built at start and only read afterwards. Within a
// turn, a call's record (its memory and events) is written on a goroutine
// of its own while the model reads the result; the turn waits for it
// before the next call, the answer's consequences and its close.
// Delivery: a trigger is acknowledged only after its turn ends, so a crash
// mid-turn repeats the turn; the calls it already completed are remembered
// per trigger in Redis (before the next call runs) and replayed, never run
// twice. On the store (a TurnStore) a turn's end, its words, history and
// resting state, and the acknowledgement are one script: all of it or
// none.
package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"sort"
	"strings"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/argtext"
)

// Registry is one desk's tools.
type Registry struct {
	tools map[string]deskbot.Tool
	names []string
}

// NewRegistry builds a registry; a later tool of the same name replaces an
// earlier one.
func NewRegistry(tools ...deskbot.Tool) *Registry {
	r := &Registry{tools: map[string]deskbot.Tool{}}
	for _, t := range tools {
		r.Add(t)
	}
	return r
}

// Add registers t.
func (r *Registry) Add(t deskbot.Tool) {
	if _, ok := r.tools[t.Name()]; !ok {
		r.names = append(r.names, t.Name())
		sort.Strings(r.names)
	}
	r.tools[t.Name()] = t
}

// Names lists the tools in name order.
func (r *Registry) Names() []string { return append([]string(nil), r.names...) }

// Specs describes the tools to a model.
func (r *Registry) Specs() []deskbot.ToolSpec {
	specs := make([]deskbot.ToolSpec, 0, len(r.names))
	for _, n := range r.names {
		t := r.tools[n]
		specs = append(specs, deskbot.ToolSpec{Name: n, Description: t.Description(), Schema: t.Schema()})
	}
	return specs
}

// Run runs call. An unknown tool or arguments that are not a JSON object are
// the model's mistakes and come back as tool errors.
func (r *Registry) Run(ctx context.Context, desk string, call deskbot.ToolCall) (deskbot.ToolResult, error) {
	t, ok := r.tools[call.Name]
	if !ok {
		return deskbot.ToolResult{IsError: true, Text: "There is no tool named '" + call.Name + "'. The tools are: " + strings.Join(r.names, ", ") + "."}, nil
	}
	args, err := ObjectArguments(call.Arguments)
	if err != nil {
		return deskbot.ToolResult{IsError: true, Text: "The arguments of " + call.Name + " must be a JSON object: " + deskbot.ErrorMessage(err)}, nil
	}
	// The call's order as read where it entered, for the tool that runs
	// what the approver was shown (modify_order).
	return t.Run(deskbot.WithReadOrder(ctx, call.Order), desk, args)
}

// ObjectArguments validates that args is one JSON object; empty means {}.
func ObjectArguments(args json.RawMessage) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 {
		return json.RawMessage("{}"), nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &obj); err != nil || obj == nil {
		return nil, deskbot.Errorf(deskbot.EINVALID, "%s is not a JSON object.", argtext.Clip(string(trimmed), 200, "…"))
	}
	return args, nil
}

// Tool returns the tool of that name.
func (r *Registry) Tool(name string) (deskbot.Tool, bool) {
	t, ok := r.tools[name]
	return t, ok
}

// Registries maps desk names to their registries and runs calls for the gate.
type Registries map[string]*Registry

// RunTool runs call on desk's registry.
func (rs Registries) RunTool(ctx context.Context, desk string, call deskbot.ToolCall) (deskbot.ToolResult, error) {
	r, ok := rs[desk]
	if !ok {
		return deskbot.ToolResult{}, deskbot.Errorf(deskbot.ENOTFOUND, "There is no desk named '%s'.", desk)
	}
	return r.Run(ctx, desk, call)
}

// Tool returns the tool a call of desk named name would run.
func (rs Registries) Tool(desk, name string) (deskbot.Tool, bool) {
	r, ok := rs[desk]
	if !ok {
		return nil, false
	}
	return r.Tool(name)
}
