package ops

import (
	"context"
	"encoding/json"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/agent"
)

// WrapModel counts m's completions and failures under its name.
func (m *Metrics) WrapModel(model deskbot.Model) deskbot.Model {
	return &countedModel{Model: model, m: m}
}

// WrapChains wraps every backend of every desk's chain: a model's
// completions, and a turn backend's turns, are counted as the backend's
// calls and failures under its name.
func (m *Metrics) WrapChains(chains map[string][]agent.Backend) map[string][]agent.Backend {
	out := make(map[string][]agent.Backend, len(chains))
	for desk, chain := range chains {
		for _, b := range chain {
			if b.Turns != nil {
				b.Turns = &countedTurns{TurnBackend: b.Turns, m: m}
			} else {
				b.Model = m.WrapModel(b.Model)
			}
			out[desk] = append(out[desk], b)
		}
	}
	return out
}

type countedTurns struct {
	agent.TurnBackend
	m *Metrics
}

var _ agent.TurnBackend = (*countedTurns)(nil)

func (c *countedTurns) RunTurn(ctx context.Context, req agent.TurnRequest) (deskbot.ModelReply, error) {
	name := c.Name()
	c.m.modelCalls.WithLabelValues(name).Inc()
	reply, err := c.TurnBackend.RunTurn(ctx, req)
	if err != nil && ctx.Err() == nil {
		c.m.modelFail.WithLabelValues(name).Inc()
	}
	return reply, err
}

type countedModel struct {
	deskbot.Model
	m *Metrics
}

var _ deskbot.Model = (*countedModel)(nil)

func (c *countedModel) Complete(ctx context.Context, req deskbot.ModelRequest) (deskbot.ModelReply, error) {
	name := c.Name()
	c.m.modelCalls.WithLabelValues(name).Inc()
	reply, err := c.Model.Complete(ctx, req)
	if err != nil && ctx.Err() == nil { // a stop cutting a call short is no failure of the backend
		c.m.modelFail.WithLabelValues(name).Inc()
	}
	return reply, err
}

// WrapTool counts t's runs and errors under its name: a result marked as
// an error (the model's mistake) and a failure to run both count.
func (m *Metrics) WrapTool(t deskbot.Tool) deskbot.Tool { return &countedTool{Tool: t, m: m} }

// WrapTools wraps a source of tools (agent.ToolSource's shape).
func (m *Metrics) WrapTools(src func(desk string) []deskbot.Tool) func(desk string) []deskbot.Tool {
	return wrapTools(src, m.WrapTool)
}

// wrapTools is src with every tool it gives wrapped by wrap: the one way
// the decorators here wrap a desk's tools.
func wrapTools(src func(desk string) []deskbot.Tool, wrap func(deskbot.Tool) deskbot.Tool) func(desk string) []deskbot.Tool {
	return func(desk string) []deskbot.Tool {
		ts := src(desk)
		out := make([]deskbot.Tool, len(ts))
		for i, t := range ts {
			out[i] = wrap(t)
		}
		return out
	}
}

type countedTool struct {
	deskbot.Tool
	m *Metrics
}

var _ deskbot.Tool = (*countedTool)(nil)

// CheckArguments forwards to the tool's own check: a wrapper that hid it
// would let a call the tool refuses be held and shown to an approver.
func (c *countedTool) CheckArguments(args json.RawMessage) error {
	return c.Tool.CheckArguments(args)
}

func (c *countedTool) Run(ctx context.Context, desk string, args json.RawMessage) (deskbot.ToolResult, error) {
	name := c.Name()
	c.m.toolCalls.WithLabelValues(name).Inc()
	res, err := c.Tool.Run(ctx, desk, args)
	if err != nil || res.IsError {
		c.m.toolErrors.WithLabelValues(name).Inc()
	}
	return res, err
}
