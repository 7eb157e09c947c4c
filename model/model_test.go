package model_test

import (
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/argtext"
	"github.com/deskbot/deskbot/model"
	"github.com/deskbot/deskbot/model/modeltest"
)

// backend is one way of reaching a model; every behaviour is checked for all.
type backend struct {
	name     string
	provider string
	stream   bool
}

var backends = []backend{
	{"openai", model.OpenAI, false},
	{"openai-stream", model.OpenAI, true},
	{"anthropic", model.Anthropic, false},
	{"anthropic-stream", model.Anthropic, true},
}

const secretKey = "sk-test-9f8e7d6c5b4a-SECRET"

func (b backend) config(srv *modeltest.Server) model.Config {
	c := model.Config{
		Name: "fake:" + b.name, Provider: b.provider, Model: "fake-model",
		APIKey: secretKey, Stream: b.stream, Timeout: 5 * time.Second,
	}
	if srv != nil {
		c.BaseURL = srv.URL
		if b.provider == model.OpenAI {
			c.BaseURL += "/v1"
		}
	}
	return c
}

func mustNew(t testing.TB, c model.Config) deskbot.Model {
	t.Helper()
	m, err := model.New(c)
	if err != nil {
		t.Fatalf("model.New: %v", err)
	}
	return m
}

// forEach runs f for every backend against a fresh fake server.
func forEach(t *testing.T, f func(t *testing.T, b backend, srv *modeltest.Server, m deskbot.Model)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			srv := modeltest.New(t)
			f(t, b, srv, mustNew(t, b.config(srv)))
		})
	}
}

func ask(text string) deskbot.ModelRequest {
	return deskbot.ModelRequest{
		System:   "You are the main desk.",
		Messages: []deskbot.Message{{Role: "user", Content: text}},
		Tools: []deskbot.ToolSpec{{
			Name: "place_order", Description: "Place a paper order.",
			Schema: []byte(`{"type":"object","properties":{"symbol":{"type":"string"},"quantity":{"type":"number"}},"required":["symbol"]}`),
		}},
	}
}

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if got := deskbot.ErrorCode(err); got != code {
		t.Fatalf("error %v: code %q, want %q", err, got, code)
	}
}

func TestTextReply(t *testing.T) {
	forEach(t, func(t *testing.T, b backend, srv *modeltest.Server, m deskbot.Model) {
		srv.Push(modeltest.Text("Markets are calm; nothing to do. ₹ fine."))
		got, err := m.Complete(t.Context(), ask("status?"))
		if err != nil {
			t.Fatal(err)
		}
		if want := "Markets are calm; nothing to do. ₹ fine."; got.Text != want || len(got.ToolCalls) != 0 {
			t.Errorf("reply = %+v, want text %q and no calls", got, want)
		}
		req := srv.LastRequest()
		if req.Stream != b.stream {
			t.Errorf("stream = %v, want %v", req.Stream, b.stream)
		}
		if got, want := req.System(), "You are the main desk."; got != want {
			t.Errorf("system = %q, want %q", got, want)
		}
		if got := req.Tools(); len(got) != 1 || got[0] != "place_order" {
			t.Errorf("tools = %v, want [place_order]", got)
		}
		if s := req.ToolSchema("place_order"); s == nil || s["required"] == nil || s["properties"] == nil {
			t.Errorf("schema sent = %v, want properties and required", s)
		}
		if got, want := req.Model(), "fake-model"; got != want {
			t.Errorf("model = %q, want %q", got, want)
		}
	})
}

func TestToolCallsKeepExactArguments(t *testing.T) {
	// Odd spacing, a number whose text re-encoding would change, non-ASCII.
	args := `{ "symbol":"INFY",  "quantity": 10, "price": 1520.50, "note": "ünïcödé ₹" }`
	forEach(t, func(t *testing.T, b backend, srv *modeltest.Server, m deskbot.Model) {
		srv.Push(modeltest.Reply{Text: "Buying.", ToolCalls: []modeltest.ToolCall{
			{ID: "call_a", Name: "place_order", Arguments: args},
			{ID: "call_b", Name: "get_positions", Arguments: ""},
		}})
		got, err := m.Complete(t.Context(), ask("buy infy"))
		if err != nil {
			t.Fatal(err)
		}
		if got.Text != "Buying." {
			t.Errorf("text = %q, want %q", got.Text, "Buying.")
		}
		if len(got.ToolCalls) != 2 {
			t.Fatalf("calls = %+v, want 2", got.ToolCalls)
		}
		c0, c1 := got.ToolCalls[0], got.ToolCalls[1]
		if c0.ID != "call_a" || c0.Name != "place_order" || string(c0.Arguments) != args {
			t.Errorf("call 0 = %s %s %s, want call_a place_order %s", c0.ID, c0.Name, c0.Arguments, args)
		}
		if c1.ID != "call_b" || c1.Name != "get_positions" || string(c1.Arguments) != "{}" {
			t.Errorf("call 1 = %s %s %s, want call_b get_positions {}", c1.ID, c1.Name, c1.Arguments)
		}
	})
}

func TestHistoryIsSent(t *testing.T) {
	args := `{"symbol": "TCS", "quantity": 5}`
	req := deskbot.ModelRequest{
		System: "Desk prompt.",
		Messages: []deskbot.Message{
			{Role: "user", Content: "Buy 5 TCS."},
			{Role: "assistant", Content: "Placing it.", ToolCalls: []deskbot.ToolCall{
				{ID: "call_1", Name: "place_order", Arguments: []byte(args)},
				{ID: "call_2", Name: "flatten_desk", Arguments: []byte(`{}`)},
			}},
			{Role: "tool", ToolCallID: "call_1", Content: "Filled 5 TCS at 3400."},
			{Role: "tool", ToolCallID: "call_2", Content: "Held for approval.", IsError: true},
			{Role: "user", Content: "Allowed. Result: flattened."},
		},
	}
	forEach(t, func(t *testing.T, b backend, srv *modeltest.Server, m deskbot.Model) {
		srv.Push(modeltest.Text("Done."))
		if _, err := m.Complete(t.Context(), req); err != nil {
			t.Fatal(err)
		}
		sent := srv.LastRequest()
		if got := sent.System(); got != "Desk prompt." {
			t.Errorf("system = %q, want %q", got, "Desk prompt.")
		}
		var got []modeltest.Message
		for _, msg := range sent.Messages() {
			if msg.Role != "system" {
				got = append(got, msg)
			}
		}
		if len(got) != 5 {
			t.Fatalf("messages sent = %+v, want 5", got)
		}
		if got[0].Role != "user" || got[0].Text != "Buy 5 TCS." {
			t.Errorf("message 0 = %+v", got[0])
		}
		a := got[1]
		if a.Role != "assistant" || a.Text != "Placing it." || len(a.ToolCalls) != 2 ||
			a.ToolCalls[0].ID != "call_1" || a.ToolCalls[0].Name != "place_order" || a.ToolCalls[1].Name != "flatten_desk" {
			t.Errorf("assistant message = %+v", a)
		}
		if b.provider == model.OpenAI && a.ToolCalls[0].Arguments != args {
			t.Errorf("arguments sent = %s, want exactly %s", a.ToolCalls[0].Arguments, args)
		}
		if b.provider == model.Anthropic && argtext.Canonical([]byte(a.ToolCalls[0].Arguments)) != argtext.Canonical([]byte(args)) {
			t.Errorf("input sent = %s, want %s", a.ToolCalls[0].Arguments, args)
		}
		if r := got[2]; r.Role != "tool" || r.ToolCallID != "call_1" || r.Text != "Filled 5 TCS at 3400." {
			t.Errorf("tool result 1 = %+v", r)
		}
		r := got[3]
		if r.Role != "tool" || r.ToolCallID != "call_2" || !strings.Contains(r.Text, "Held for approval.") {
			t.Errorf("tool result 2 = %+v", r)
		}
		if b.provider == model.Anthropic && !r.IsError {
			t.Errorf("tool result 2 not flagged as an error: %+v", r)
		}
		if got[4].Role != "user" || got[4].Text != "Allowed. Result: flattened." {
			t.Errorf("message 4 = %+v", got[4])
		}
	})
}

func TestMissingIDsAreMadeUpStably(t *testing.T) {
	reply := modeltest.Reply{OmitIDs: true, ToolCalls: []modeltest.ToolCall{
		{Name: "get_positions", Arguments: `{}`},
		{Name: "get_positions", Arguments: `{}`},
	}}
	forEach(t, func(t *testing.T, b backend, srv *modeltest.Server, m deskbot.Model) {
		srv.Push(reply, reply)
		first, err := m.Complete(t.Context(), ask("positions"))
		if err != nil {
			t.Fatal(err)
		}
		again, err := m.Complete(t.Context(), ask("positions"))
		if err != nil {
			t.Fatal(err)
		}
		if len(first.ToolCalls) != 2 || len(again.ToolCalls) != 2 {
			t.Fatalf("calls = %+v / %+v, want 2 each", first.ToolCalls, again.ToolCalls)
		}
		a, bID := first.ToolCalls[0].ID, first.ToolCalls[1].ID
		if a == "" || bID == "" || a == bID {
			t.Errorf("ids %q, %q: want two distinct non-empty ids", a, bID)
		}
		if again.ToolCalls[0].ID != a || again.ToolCalls[1].ID != bID {
			t.Errorf("ids not stable: %q,%q then %q,%q", a, bID, again.ToolCalls[0].ID, again.ToolCalls[1].ID)
		}
		next := ask("positions")
		next.Messages = append(next.Messages, deskbot.Message{Role: "assistant", ToolCalls: first.ToolCalls},
			deskbot.Message{Role: "tool", ToolCallID: a, Content: "none"}, deskbot.Message{Role: "tool", ToolCallID: bID, Content: "none"})
		srv.Push(reply)
		later, err := m.Complete(t.Context(), next)
		if err != nil {
			t.Fatal(err)
		}
		if id := later.ToolCalls[0].ID; id == a || id == bID {
			t.Errorf("a later step reused id %q", id)
		}
	})
}

func TestNewRejectsBadConfig(t *testing.T) {
	cases := []model.Config{
		{Provider: "openai"},
		{Provider: "gemini", Model: "x"},
		{Model: "x", Timeout: -1},
	}
	for _, c := range cases {
		_, err := model.New(c)
		wantCode(t, err, deskbot.EINVALID)
	}
	m := mustNew(t, model.Config{Model: "qwen3"})
	if got, want := m.Name(), "openai:qwen3"; got != want {
		t.Errorf("default name = %q, want %q", got, want)
	}
}

// Every backend reports what the provider said the answer cost, streamed or
// not; a malformed answer retried is paid for too.
func TestUsageReported(t *testing.T) {
	forEach(t, func(t *testing.T, b backend, srv *modeltest.Server, m deskbot.Model) {
		reply := modeltest.Text("Done.")
		reply.InputTokens, reply.OutputTokens = 1200, 34
		srv.Push(reply)
		got, err := m.Complete(t.Context(), ask("status?"))
		if err != nil {
			t.Fatal(err)
		}
		if want := (deskbot.Usage{InputTokens: 1200, OutputTokens: 34}); got.Usage != want {
			t.Errorf("usage = %+v, want %+v", got.Usage, want)
		}

		bad := modeltest.Calls(modeltest.ToolCall{Name: "place_order", Arguments: `{"symbol":`})
		bad.InputTokens, bad.OutputTokens = 100, 7
		good := modeltest.Text("Fixed.")
		good.InputTokens, good.OutputTokens = 110, 3
		srv.Push(bad, good)
		got, err = m.Complete(t.Context(), ask("again"))
		if err != nil {
			t.Fatal(err)
		}
		if want := (deskbot.Usage{InputTokens: 210, OutputTokens: 10}); got.Usage != want {
			t.Errorf("usage after a malformed answer retried = %+v, want %+v", got.Usage, want)
		}
	})
}
