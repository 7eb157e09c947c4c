package model

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/deskbot/deskbot"
)

func TestTidy(t *testing.T) {
	call := func(id string) deskbot.ToolCall {
		return deskbot.ToolCall{ID: id, Name: "bash", Arguments: []byte(`{}`)}
	}
	in := []deskbot.Message{
		{Role: "tool", ToolCallID: "old", Content: "orphan from a dropped turn"},
		{Role: "user", Content: "go"},
		{Role: "assistant", ToolCalls: []deskbot.ToolCall{call("a"), call("b")}},
		{Role: "tool", ToolCallID: "b", Content: "b done"},
		{Role: "tool", ToolCallID: "b", Content: "b again"},
		{Role: "user", Content: "next"},
		{Role: "assistant", ToolCalls: []deskbot.ToolCall{call("c")}},
	}
	got := tidy(in)
	want := []deskbot.Message{
		{Role: "user", Content: "go"},
		{Role: "assistant", ToolCalls: []deskbot.ToolCall{call("a"), call("b")}},
		{Role: "tool", ToolCallID: "b", Content: "b done"},
		{Role: "tool", ToolCallID: "a", Content: noResult, IsError: true},
		{Role: "user", Content: "next"},
		{Role: "assistant", ToolCalls: []deskbot.ToolCall{call("c")}},
		{Role: "tool", ToolCallID: "c", Content: noResult, IsError: true},
	}
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if !bytes.Equal(g, w) {
		t.Errorf("tidy:\n got %s\nwant %s", g, w)
	}
}
