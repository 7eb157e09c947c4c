package model

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/deskbot/deskbot"
)

// anthropicModel talks to Anthropic's Messages API.
type anthropicModel struct {
	cfg    Config
	client anthropic.Client
}

func newAnthropic(c Config) *anthropicModel {
	// WithoutEnvironmentDefaults: the key and URL come from c alone, never
	// from ANTHROPIC_* variables or profile files.
	return &anthropicModel{cfg: c, client: anthropic.NewClient(
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(c.BaseURL),
		option.WithAPIKey(c.APIKey),
		option.WithHTTPClient(c.HTTPClient),
		option.WithMaxRetries(0),
	)}
}

func (m *anthropicModel) Name() string { return m.cfg.Name }

func (m *anthropicModel) Complete(ctx context.Context, req deskbot.ModelRequest) (deskbot.ModelReply, error) {
	params := m.params(req)
	return complete(ctx, &m.cfg, req, func(ctx context.Context) (attempt, error) {
		var a attempt
		var err error
		if m.cfg.Stream {
			a, err = m.stream(ctx, params)
		} else {
			a, err = m.once(ctx, params)
		}
		var apiErr *anthropic.Error
		if errors.As(err, &apiErr) {
			return a, &statusError{code: apiErr.StatusCode, msg: apiErr.Message}
		}
		return a, err
	})
}

func (m *anthropicModel) params(req deskbot.ModelRequest) anthropic.MessageNewParams {
	p := anthropic.MessageNewParams{Model: anthropic.Model(m.cfg.Model), MaxTokens: int64(m.cfg.MaxTokens)}
	system := []string{}
	if req.System != "" {
		system = append(system, req.System)
	}
	// Anthropic wants turns that alternate; consecutive messages of one
	// role (tool results and the user's words both count as user) share a
	// turn, results first.
	type turn struct {
		user   bool
		blocks []anthropic.ContentBlockParamUnion
	}
	var turns []turn
	add := func(user bool, b anthropic.ContentBlockParamUnion) {
		if n := len(turns); n > 0 && turns[n-1].user == user {
			turns[n-1].blocks = append(turns[n-1].blocks, b)
			return
		}
		turns = append(turns, turn{user: user, blocks: []anthropic.ContentBlockParamUnion{b}})
	}
	for _, msg := range tidy(req.Messages) {
		switch msg.Role {
		case "system":
			system = append(system, msg.Content)
		case "assistant":
			if strings.TrimSpace(msg.Content) != "" {
				add(false, anthropic.NewTextBlock(msg.Content))
			}
			for _, c := range msg.ToolCalls {
				add(false,
					anthropic.NewToolUseBlock(anthropicID(c.ID), json.RawMessage(argsText(c.Arguments)), c.Name))
			}
		case "tool":
			add(true, anthropic.NewToolResultBlock(anthropicID(msg.ToolCallID), toolText(msg), msg.IsError))
		default:
			if strings.TrimSpace(msg.Content) != "" {
				add(true, anthropic.NewTextBlock(msg.Content))
			}
		}
	}
	for _, t := range turns {
		if t.user {
			p.Messages = append(p.Messages, anthropic.NewUserMessage(t.blocks...))
		} else {
			p.Messages = append(p.Messages, anthropic.NewAssistantMessage(t.blocks...))
		}
	}
	if s := strings.Join(system, "\n\n"); s != "" {
		p.System = []anthropic.TextBlockParam{{Text: s}}
	}
	for _, t := range req.Tools {
		schema := schemaMap(t.Schema)
		in := anthropic.ToolInputSchemaParam{Properties: schema["properties"], ExtraFields: map[string]any{}}
		for k, v := range schema {
			switch k {
			case "type", "properties":
			case "required":
				for _, r := range asList(v) {
					if s, ok := r.(string); ok {
						in.Required = append(in.Required, s)
					}
				}
			default:
				in.ExtraFields[k] = v
			}
		}
		tool := anthropic.ToolParam{Name: t.Name, InputSchema: in}
		if t.Description != "" {
			tool.Description = anthropic.String(t.Description)
		}
		p.Tools = append(p.Tools, anthropic.ToolUnionParam{OfTool: &tool})
	}
	return p
}

func (m *anthropicModel) once(ctx context.Context, p anthropic.MessageNewParams) (attempt, error) {
	res, err := m.client.Messages.New(ctx, p)
	if err != nil {
		return attempt{}, err
	}
	a := attempt{used: deskbot.Usage{InputTokens: res.Usage.InputTokens, OutputTokens: res.Usage.OutputTokens}}
	for _, b := range res.Content {
		switch b.Type {
		case "text":
			a.text += b.Text
		case "tool_use":
			a.calls = append(a.calls, rawCall{id: b.ID, name: b.Name, args: string(b.Input)})
		}
	}
	return a, nil
}

// stream reads a streamed answer, gathering tool input from its
// input_json_delta pieces itself: the SDK's accumulator replaces input that
// does not parse with {}, which would hide a malformed call.
func (m *anthropicModel) stream(ctx context.Context, p anthropic.MessageNewParams) (attempt, error) {
	s := m.client.Messages.NewStreaming(ctx, p)
	defer s.Close()
	type block struct {
		kind, id, name string
		text           strings.Builder
	}
	var blocks []*block
	at := map[int64]*block{}
	stopped, calls := false, 0
	var used deskbot.Usage
	for s.Next() {
		ev := s.Current()
		switch ev.Type {
		case "message_start":
			used.InputTokens = ev.Message.Usage.InputTokens
		case "message_delta":
			used.OutputTokens = ev.Usage.OutputTokens // the count so far, not a delta
		case "content_block_start":
			if ev.ContentBlock.Type == "tool_use" && m.cfg.MaxToolCalls == calls {
				return attempt{}, m.cfg.tooManyCalls()
			}
			if ev.ContentBlock.Type == "tool_use" {
				calls++
			}
			b := &block{kind: ev.ContentBlock.Type, id: ev.ContentBlock.ID, name: ev.ContentBlock.Name}
			b.text.WriteString(ev.ContentBlock.Text)
			at[ev.Index] = b
			blocks = append(blocks, b)
		case "content_block_delta":
			if b := at[ev.Index]; b != nil {
				b.text.WriteString(ev.Delta.Text)
				b.text.WriteString(ev.Delta.PartialJSON)
			}
		case "message_stop":
			stopped = true
		}
	}
	if err := s.Err(); err != nil {
		return attempt{}, err
	}
	if !stopped {
		return attempt{}, &brokenError{"answer stream ended early"}
	}
	a := attempt{used: used}
	for _, b := range blocks {
		switch b.kind {
		case "text":
			a.text += b.text.String()
		case "tool_use":
			a.calls = append(a.calls, rawCall{id: b.id, name: b.name, args: b.text.String()})
		}
	}
	return a, nil
}

// anthropicID fits a call id from another provider to Anthropic's alphabet
// ([A-Za-z0-9_-]), the same way for a call and its result.
func anthropicID(id string) string {
	if id == "" {
		return "call_none"
	}
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '_'
	}, id)
}

func asList(v any) []any { l, _ := v.([]any); return l }
