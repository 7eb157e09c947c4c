package modeltest

import (
	"encoding/json"
	"net/http"
	"strings"
)

// Which API a request came in on.
const (
	APIOpenAI    = "openai"
	APIAnthropic = "anthropic"
)

// Request is one request the fake received.
type Request struct {
	Index  int    // 0 for the first request the server received
	API    string // APIOpenAI or APIAnthropic
	Path   string
	Header http.Header
	Raw    []byte
	// Body is the decoded JSON body (numbers as json.Number); nil if the
	// body was not JSON.
	Body   map[string]any
	Stream bool
}

// Message is one entry of the conversation a request carried, in the same
// shape for both APIs: Anthropic's tool_result blocks become tool messages,
// its tool_use blocks become ToolCalls.
type Message struct {
	Role       string // system, user, assistant, tool
	Text       string
	ToolCalls  []ToolCall // assistant
	ToolCallID string     // tool
	IsError    bool       // tool (Anthropic only: OpenAI has no such flag)
}

// Model is the model the request named.
func (r Request) Model() string { s, _ := r.Body["model"].(string); return s }

// System is the system prompt: OpenAI's system messages, or Anthropic's
// system field.
func (r Request) System() string {
	if r.API == APIAnthropic {
		return text(r.Body["system"])
	}
	var parts []string
	for _, m := range r.Messages() {
		if m.Role == "system" || m.Role == "developer" {
			parts = append(parts, m.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// Tools lists the names of the tools offered, in order.
func (r Request) Tools() []string {
	var names []string
	for _, t := range list(r.Body["tools"]) {
		m, _ := t.(map[string]any)
		if f, ok := m["function"].(map[string]any); ok {
			m = f
		}
		name, _ := m["name"].(string)
		names = append(names, name)
	}
	return names
}

// ToolSchema returns the JSON schema sent for the named tool, nil if none.
func (r Request) ToolSchema(name string) map[string]any {
	for _, t := range list(r.Body["tools"]) {
		m, _ := t.(map[string]any)
		if f, ok := m["function"].(map[string]any); ok {
			if f["name"] == name {
				s, _ := f["parameters"].(map[string]any)
				return s
			}
		} else if m["name"] == name {
			s, _ := m["input_schema"].(map[string]any)
			return s
		}
	}
	return nil
}

// Messages returns the conversation, oldest first (for OpenAI including its
// system messages).
func (r Request) Messages() []Message {
	var out []Message
	for _, x := range list(r.Body["messages"]) {
		m, _ := x.(map[string]any)
		role, _ := m["role"].(string)
		if r.API == APIOpenAI {
			msg := Message{Role: role, Text: text(m["content"])}
			msg.ToolCallID, _ = m["tool_call_id"].(string)
			for _, c := range list(m["tool_calls"]) {
				cm, _ := c.(map[string]any)
				f, _ := cm["function"].(map[string]any)
				id, _ := cm["id"].(string)
				name, _ := f["name"].(string)
				args, _ := f["arguments"].(string)
				msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: id, Name: name, Arguments: args})
			}
			out = append(out, msg)
			continue
		}
		// Anthropic: content is a string or a list of blocks.
		if s, ok := m["content"].(string); ok {
			out = append(out, Message{Role: role, Text: s})
			continue
		}
		msg := Message{Role: role}
		for _, b := range list(m["content"]) {
			bm, _ := b.(map[string]any)
			switch bm["type"] {
			case "text":
				msg.Text += text(bm["text"])
			case "tool_use":
				id, _ := bm["id"].(string)
				name, _ := bm["name"].(string)
				args, _ := json.Marshal(bm["input"])
				msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: id, Name: name, Arguments: string(args)})
			case "tool_result":
				id, _ := bm["tool_use_id"].(string)
				isErr, _ := bm["is_error"].(bool)
				out = append(out, Message{Role: "tool", ToolCallID: id, Text: text(bm["content"]), IsError: isErr})
			}
		}
		if msg.Text != "" || len(msg.ToolCalls) > 0 {
			out = append(out, msg)
		}
	}
	return out
}

// Last returns the last message of the conversation (zero if none): what a
// handler usually answers.
func (r Request) Last() Message {
	ms := r.Messages()
	if len(ms) == 0 {
		return Message{}
	}
	return ms[len(ms)-1]
}

// ToolResults returns the tool messages of the conversation, oldest first.
func (r Request) ToolResults() []Message {
	var out []Message
	for _, m := range r.Messages() {
		if m.Role == "tool" {
			out = append(out, m)
		}
	}
	return out
}

// text flattens a content value: a string, or a list of parts with text.
func text(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	var b strings.Builder
	for _, p := range list(v) {
		pm, _ := p.(map[string]any)
		if s, ok := pm["text"].(string); ok {
			b.WriteString(s)
		}
	}
	return b.String()
}

func list(v any) []any { l, _ := v.([]any); return l }
