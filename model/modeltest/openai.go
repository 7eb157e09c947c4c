package modeltest

import (
	"fmt"
	"net/http"
)

// The OpenAI chat-completions wire format, as far as a client of tools
// needs it.

type oaFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type oaToolCall struct {
	Index    *int       `json:"index,omitempty"` // streaming only
	ID       string     `json:"id,omitempty"`
	Type     string     `json:"type,omitempty"`
	Function oaFunction `json:"function"`
}

type oaMessage struct {
	Role      string       `json:"role,omitempty"`
	Content   *string      `json:"content"`
	ToolCalls []oaToolCall `json:"tool_calls,omitempty"`
}

type oaChoice struct {
	Index        int        `json:"index"`
	Message      *oaMessage `json:"message,omitempty"`
	Delta        *oaMessage `json:"delta,omitempty"`
	FinishReason *string    `json:"finish_reason"`
}

type oaCompletion struct {
	ID      string     `json:"id"`
	Object  string     `json:"object"`
	Created int64      `json:"created"`
	Model   string     `json:"model"`
	Choices []oaChoice `json:"choices"`
	Usage   *oaUsage   `json:"usage,omitempty"`
}

type oaUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

func (s *Server) serveOpenAI(w http.ResponseWriter, r *http.Request) {
	req, rep, ok := s.take(r, APIOpenAI)
	model, _ := req.Body["model"].(string)
	id := s.replyID(req, "chatcmpl-fake-")
	switch {
	case !ok:
		writeJSON(w, http.StatusInternalServerError, openAIError("modeltest: no reply scripted"))
		return
	case rep.Hang:
		s.hang(r)
		return
	case rep.Flood > 0:
		s.flood(w, APIOpenAI, id, model, req.Stream, rep.Flood)
		return
	case rep.Status != 0 && rep.Status != http.StatusOK:
		msg := rep.ErrorMessage
		if msg == "" {
			msg = http.StatusText(rep.Status)
		}
		writeJSON(w, rep.Status, openAIError(msg))
		return
	case rep.Malformed && !req.Stream:
		writeJSON(w, http.StatusOK, fmt.Appendf(nil, `{"id":%q,"choices":[{"index":0,"message":{"role":`, id))
		return
	}

	finish := "stop"
	if len(rep.ToolCalls) > 0 {
		finish = "tool_calls"
	}
	calls := make([]oaToolCall, len(rep.ToolCalls))
	for i, c := range rep.ToolCalls {
		calls[i] = oaToolCall{Type: "function", Function: oaFunction{Name: c.Name, Arguments: c.Arguments}}
		if !rep.OmitIDs {
			calls[i].ID = s.callID(c, "call_fake_")
		}
	}
	if !req.Stream {
		msg := &oaMessage{Role: "assistant", ToolCalls: calls}
		if rep.Text != "" || len(calls) == 0 {
			msg.Content = &rep.Text
		}
		writeJSON(w, http.StatusOK, mustMarshal(oaCompletion{
			ID: id, Object: "chat.completion", Model: model,
			Choices: []oaChoice{{Message: msg, FinishReason: &finish}}, Usage: oaUsageOf(rep),
		}))
		return
	}

	e := newSSE(w)
	chunk := func(delta oaMessage, finish *string) {
		e.send("", mustMarshal(oaCompletion{
			ID: id, Object: "chat.completion.chunk", Model: model,
			Choices: []oaChoice{{Delta: &delta, FinishReason: finish}},
		}))
	}
	empty := ""
	chunk(oaMessage{Role: "assistant", Content: &empty}, nil)
	if rep.Malformed {
		e.send("", fmt.Appendf(nil, `{"id":%q,"choices":[{"delta":`, id))
		return
	}
	for _, p := range pieces(rep.Text, 3) {
		chunk(oaMessage{Content: &p}, nil)
	}
	// Each call opens with its id and name, then its arguments arrive in
	// several deltas that carry only the index, as OpenAI streams them.
	for i, c := range calls {
		idx := i
		first := c
		first.Index = &idx
		first.Function.Arguments = ""
		chunk(oaMessage{ToolCalls: []oaToolCall{first}}, nil)
		for _, p := range pieces(c.Function.Arguments, 3) {
			chunk(oaMessage{ToolCalls: []oaToolCall{{Index: &idx, Function: oaFunction{Arguments: p}}}}, nil)
		}
	}
	chunk(oaMessage{}, &finish)
	// Asked for, the usage follows in a chunk with no choices, as OpenAI
	// sends it.
	if so, _ := req.Body["stream_options"].(map[string]any); so["include_usage"] == true {
		e.send("", mustMarshal(oaCompletion{
			ID: id, Object: "chat.completion.chunk", Model: model, Choices: []oaChoice{}, Usage: oaUsageOf(rep),
		}))
	}
	e.send("", []byte("[DONE]"))
}

func oaUsageOf(rep Reply) *oaUsage {
	in, out := rep.usage()
	return &oaUsage{PromptTokens: in, CompletionTokens: out, TotalTokens: in + out}
}

func openAIError(msg string) []byte {
	return mustMarshal(map[string]any{"error": map[string]any{
		"message": msg, "type": "server_error", "param": nil, "code": nil,
	}})
}
