package model

import (
	"context"
	"errors"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/deskbot/deskbot"
)

// openaiModel talks to an OpenAI-compatible chat-completions endpoint.
type openaiModel struct {
	cfg Config
	svc openai.ChatCompletionService
}

func newOpenAI(c Config) *openaiModel {
	// The service is built from explicit options only: openai.NewClient
	// would read OPENAI_API_KEY and friends from the environment and could
	// send a key meant for OpenAI to a local server.
	opts := []option.RequestOption{
		option.WithBaseURL(c.BaseURL),
		option.WithHTTPClient(c.HTTPClient),
		option.WithMaxRetries(0),
	}
	if c.APIKey != "" {
		opts = append(opts, option.WithAPIKey(c.APIKey))
	}
	return &openaiModel{cfg: c, svc: openai.NewChatCompletionService(opts...)}
}

func (m *openaiModel) Name() string { return m.cfg.Name }

func (m *openaiModel) Complete(ctx context.Context, req deskbot.ModelRequest) (deskbot.ModelReply, error) {
	params := m.params(req)
	return complete(ctx, &m.cfg, req, func(ctx context.Context) (attempt, error) {
		var a attempt
		var err error
		if m.cfg.Stream {
			a, err = m.stream(ctx, params)
		} else {
			a, err = m.once(ctx, params)
		}
		var apiErr *openai.Error
		if errors.As(err, &apiErr) {
			return a, &statusError{code: apiErr.StatusCode, msg: apiErr.Message}
		}
		return a, err
	})
}

func (m *openaiModel) params(req deskbot.ModelRequest) openai.ChatCompletionNewParams {
	p := openai.ChatCompletionNewParams{Model: shared.ChatModel(m.cfg.Model)}
	if m.cfg.MaxTokens > 0 {
		// max_tokens, not max_completion_tokens: local servers know only
		// the older name.
		p.MaxTokens = openai.Int(int64(m.cfg.MaxTokens))
	}
	if req.System != "" {
		p.Messages = append(p.Messages, openai.SystemMessage(req.System))
	}
	for _, msg := range tidy(req.Messages) {
		switch msg.Role {
		case "system":
			p.Messages = append(p.Messages, openai.SystemMessage(msg.Content))
		case "assistant":
			var a openai.ChatCompletionAssistantMessageParam
			if msg.Content != "" {
				a.Content.OfString = openai.String(msg.Content)
			}
			for _, c := range msg.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID:       c.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: argsText(c.Arguments)},
					},
				})
			}
			p.Messages = append(p.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		case "tool":
			text := toolText(msg)
			if msg.IsError && !strings.HasPrefix(strings.ToLower(text), "error") {
				text = "Error: " + text // the API has no error flag for results
			}
			p.Messages = append(p.Messages, openai.ToolMessage(text, msg.ToolCallID))
		default:
			p.Messages = append(p.Messages, openai.UserMessage(msg.Content))
		}
	}
	for _, t := range req.Tools {
		fd := shared.FunctionDefinitionParam{Name: t.Name, Parameters: schemaMap(t.Schema)}
		if t.Description != "" {
			fd.Description = openai.String(t.Description)
		}
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(fd))
	}
	return p
}

func (m *openaiModel) once(ctx context.Context, p openai.ChatCompletionNewParams) (attempt, error) {
	res, err := m.svc.New(ctx, p)
	if err != nil {
		return attempt{}, err
	}
	if len(res.Choices) == 0 {
		return attempt{}, &brokenError{"answer had no choices"}
	}
	msg := res.Choices[0].Message
	a := attempt{text: msg.Content}
	if a.text == "" {
		a.text = msg.Refusal
	}
	for _, c := range msg.ToolCalls {
		args := c.Function.Arguments
		if raw := c.Function.JSON.Arguments.Raw(); strings.HasPrefix(raw, "{") {
			args = raw // a server that sent an object where a string belongs
		}
		a.calls = append(a.calls, rawCall{id: c.ID, name: c.Function.Name, args: args})
	}
	return a, nil
}

// stream reads a streamed answer. Tool calls arrive as deltas keyed by
// index: the first carries id and name, the rest pieces of the arguments.
// Some servers send each call whole, and a few reuse index 0 for every
// call; a new id at a used index therefore starts a new call.
func (m *openaiModel) stream(ctx context.Context, p openai.ChatCompletionNewParams) (attempt, error) {
	s := m.svc.NewStreaming(ctx, p)
	defer s.Close()
	var text, refusal strings.Builder
	type partial struct {
		id, name string
		args     strings.Builder
	}
	var calls []*partial
	at := map[int64]*partial{}
	finished := false
	for s.Next() {
		for _, ch := range s.Current().Choices {
			if ch.Index != 0 {
				continue
			}
			d := ch.Delta
			text.WriteString(d.Content)
			refusal.WriteString(d.Refusal)
			for _, tc := range d.ToolCalls {
				c := at[tc.Index]
				if c == nil || (tc.ID != "" && c.id != "" && tc.ID != c.id) {
					if len(calls) == m.cfg.MaxToolCalls {
						return attempt{}, m.cfg.tooManyCalls()
					}
					c = &partial{}
					at[tc.Index] = c
					calls = append(calls, c)
				}
				if tc.ID != "" {
					c.id = tc.ID
				}
				if n := tc.Function.Name; n != "" && n != c.name {
					c.name += n
				}
				c.args.WriteString(tc.Function.Arguments)
			}
			if ch.FinishReason != "" {
				finished = true
			}
		}
	}
	if err := s.Err(); err != nil {
		return attempt{}, err
	}
	if !finished {
		return attempt{}, &brokenError{"answer stream ended early"}
	}
	a := attempt{text: text.String()}
	if a.text == "" {
		a.text = refusal.String()
	}
	for _, c := range calls {
		a.calls = append(a.calls, rawCall{id: c.id, name: c.name, args: c.args.String()})
	}
	return a, nil
}
