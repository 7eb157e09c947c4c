package model

import (
	"encoding/json"

	"github.com/deskbot/deskbot"
)

// noResult stands in for a tool result the history lacks.
const noResult = "No result was recorded for this call."

// tidy makes a conversation acceptable to providers, which refuse a tool
// result that answers no call and an assistant's calls that go unanswered.
// A bounded history can cut a turn in two, so this happens in practice: an
// orphaned result is dropped, and an unanswered call is answered with an
// error saying no result was recorded (rather than dropped: the model must
// not believe it never asked).
func tidy(msgs []deskbot.Message) []deskbot.Message {
	out := make([]deskbot.Message, 0, len(msgs))
	var open []string // calls of the last assistant message not yet answered
	closeOpen := func() {
		for _, id := range open {
			out = append(out, deskbot.Message{Role: "tool", ToolCallID: id, Content: noResult, IsError: true})
		}
		open = nil
	}
	for _, m := range msgs {
		if m.Role == "tool" {
			i := indexOf(open, m.ToolCallID)
			if i < 0 {
				continue
			}
			open = append(open[:i], open[i+1:]...)
			out = append(out, m)
			continue
		}
		closeOpen()
		out = append(out, m)
		if m.Role == "assistant" {
			for _, c := range m.ToolCalls {
				open = append(open, c.ID)
			}
		}
	}
	closeOpen()
	return out
}

func indexOf(ids []string, id string) int {
	for i, x := range ids {
		if x == id {
			return i
		}
	}
	return -1
}

// argsText is a call's arguments as sent back to a provider in the history.
func argsText(a json.RawMessage) string {
	if len(a) == 0 {
		return "{}"
	}
	return string(a)
}

// schemaMap decodes a tool's JSON schema; a missing or unusable schema is
// an object with no properties, which every provider accepts.
func schemaMap(s json.RawMessage) map[string]any {
	var m map[string]any
	if json.Unmarshal(s, &m) != nil || m == nil {
		m = map[string]any{}
	}
	if _, ok := m["type"]; !ok {
		m["type"] = "object"
	}
	if _, ok := m["properties"]; !ok {
		m["properties"] = map[string]any{}
	}
	return m
}

// toolText is a tool result's content as a provider wants it: never empty.
func toolText(m deskbot.Message) string {
	if m.Content == "" {
		if m.IsError {
			return "Error."
		}
		return "(no output)"
	}
	return m.Content
}
