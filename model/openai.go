package model

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/deskbot/deskbot"
)

// openaiModel talks to an OpenAI-compatible chat-completions endpoint.
type openaiModel struct {
	cfg    Config
	svc    openai.ChatCompletionService
	head   []byte      // the request's fields besides messages and tools (requestHead)
	pieces *pieceCache // the JSON of messages and tools already sent
}

func newOpenAI(c Config) (*openaiModel, error) {
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
	head, err := requestHead(c)
	if err != nil {
		return nil, deskbot.Errorf(deskbot.EINVALID, "Model backend %s: %s", c.Name, err)
	}
	return &openaiModel{cfg: c, svc: openai.NewChatCompletionService(opts...), head: head, pieces: sharedPieces}, nil
}

func (m *openaiModel) Name() string { return m.cfg.Name }

func (m *openaiModel) Complete(ctx context.Context, req deskbot.ModelRequest) (deskbot.ModelReply, error) {
	body, err := m.body(req)
	if err != nil {
		return deskbot.ModelReply{}, m.cfg.failure(ctx, err)
	}
	// The body goes as it is: the SDK still writes its (empty) parameters,
	// a few bytes, and the option replaces them, where parameters set to
	// the body (param.SetJSON) would be copied and checked once more.
	opt := option.WithRequestBody("application/json", body)
	return complete(ctx, &m.cfg, req, func(ctx context.Context) (attempt, error) {
		var a attempt
		var err error
		if m.cfg.Stream {
			a, err = m.stream(ctx, opt)
		} else {
			a, err = m.once(ctx, opt)
		}
		var apiErr *openai.Error
		if errors.As(err, &apiErr) {
			return a, &statusError{code: apiErr.StatusCode, msg: apiErr.Message}
		}
		return a, err
	})
}

// body is the request as the SDK would write it, byte for byte, put
// together from the JSON of each message and tool. A desk sends its whole
// history with every step, and the SDK's reflection spends far more on it
// than the request costs on the wire; the pieces are the SDK's own
// encodings, kept by content (see pieceCache), so a message or tool already
// sent is not encoded again.
func (m *openaiModel) body(req deskbot.ModelRequest) ([]byte, error) {
	msgs := tidy(req.Messages)
	if req.System != "" {
		msgs = append([]deskbot.Message{{Role: "system", Content: req.System}}, msgs...)
	}
	pieces := make([][]byte, 0, len(msgs)+len(req.Tools))
	var key []byte // scratch space for each piece's key
	for _, msg := range msgs {
		key = messageKey(key[:0], msg)
		p, err := m.piece(key, func() json.Marshaler { return openaiMessage(msg) })
		if err != nil {
			return nil, err
		}
		pieces = append(pieces, p)
	}
	for _, t := range req.Tools {
		key = toolKey(key[:0], t)
		p, err := m.piece(key, func() json.Marshaler { return openaiTool(t) })
		if err != nil {
			return nil, err
		}
		pieces = append(pieces, p)
	}
	return joinBody(pieces[:len(msgs)], m.head, pieces[len(msgs):]), nil
}

// piece is the piece kept under key, or the JSON of what v gives, then kept.
func (m *openaiModel) piece(key []byte, v func() json.Marshaler) ([]byte, error) {
	if p, ok := m.pieces.get(key); ok {
		return p, nil
	}
	p, err := marshalPiece(v())
	if err == nil {
		m.pieces.put(key, p)
	}
	return p, err
}

// openaiMessage is msg as the SDK's request parameter.
func openaiMessage(msg deskbot.Message) openai.ChatCompletionMessageParamUnion {
	switch msg.Role {
	case "system":
		return openai.SystemMessage(msg.Content)
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
		return openai.ChatCompletionMessageParamUnion{OfAssistant: &a}
	case "tool":
		text := toolText(msg)
		if msg.IsError && !strings.HasPrefix(strings.ToLower(text), "error") {
			text = "Error: " + text // the API has no error flag for results
		}
		return openai.ToolMessage(text, msg.ToolCallID)
	}
	return openai.UserMessage(msg.Content)
}

// openaiTool is t as the SDK's request parameter.
func openaiTool(t deskbot.ToolSpec) openai.ChatCompletionToolUnionParam {
	fd := shared.FunctionDefinitionParam{Name: t.Name, Parameters: schemaMap(t.Schema)}
	if t.Description != "" {
		fd.Description = openai.String(t.Description)
	}
	return openai.ChatCompletionFunctionTool(fd)
}

func (m *openaiModel) once(ctx context.Context, body option.RequestOption) (attempt, error) {
	res, err := m.svc.New(ctx, openai.ChatCompletionNewParams{}, body)
	if err != nil {
		return attempt{}, err
	}
	if len(res.Choices) == 0 {
		return attempt{}, &brokenError{"answer had no choices"}
	}
	msg := res.Choices[0].Message
	a := attempt{text: msg.Content, used: deskbot.Usage{InputTokens: res.Usage.PromptTokens, OutputTokens: res.Usage.CompletionTokens}}
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
func (m *openaiModel) stream(ctx context.Context, body option.RequestOption) (attempt, error) {
	s := m.svc.NewStreaming(ctx, openai.ChatCompletionNewParams{}, body)
	defer s.Close()
	var text, refusal strings.Builder
	type partial struct {
		id, name string
		args     strings.Builder
	}
	var calls []*partial
	at := map[int64]*partial{}
	finished := false
	var used deskbot.Usage
	for s.Next() {
		// The usage comes in a last chunk of its own, with no choices
		// (stream_options.include_usage); servers that ignore the option
		// send none.
		if u := s.Current().Usage; u.PromptTokens+u.CompletionTokens > 0 {
			used = deskbot.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens}
		}
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
	a := attempt{text: text.String(), used: used}
	if a.text == "" {
		a.text = refusal.String()
	}
	for _, c := range calls {
		a.calls = append(a.calls, rawCall{id: c.id, name: c.name, args: c.args.String()})
	}
	return a, nil
}
