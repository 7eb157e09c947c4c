package model_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
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
		if b.provider == model.Anthropic && deskbot.CanonicalArguments([]byte(a.ToolCalls[0].Arguments)) != deskbot.CanonicalArguments([]byte(args)) {
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

func TestFailuresHandOver(t *testing.T) {
	cases := []struct {
		name  string
		reply modeltest.Reply
		code  string
		say   string // the error names this
	}{
		{"500", modeltest.Status(500), deskbot.EUNAVAILABLE, "500"},
		{"503", modeltest.Status(503), deskbot.EUNAVAILABLE, "503"},
		{"429", modeltest.Reply{Status: 429, ErrorMessage: "slow down"}, deskbot.EUNAVAILABLE, "429"},
		{"malformed body", modeltest.Reply{Malformed: true}, deskbot.EUNAVAILABLE, "fake:"},
		{"400", modeltest.Reply{Status: 400, ErrorMessage: "tools[0].name is invalid"}, deskbot.EINVALID, "tools[0].name is invalid"},
		{"401", modeltest.Reply{Status: 401, ErrorMessage: "bad key"}, deskbot.EINVALID, "401"},
	}
	forEach(t, func(t *testing.T, b backend, srv *modeltest.Server, m deskbot.Model) {
		for _, c := range cases {
			srv.Push(c.reply)
			_, err := m.Complete(t.Context(), ask("hi"))
			wantCode(t, err, c.code)
			if msg := deskbot.ErrorMessage(err); !strings.Contains(msg, "fake:"+b.name) || !strings.Contains(msg, c.say) {
				t.Errorf("%s: message %q should name the backend and %q", c.name, msg, c.say)
			}
		}
		if got, want := len(srv.Requests()), len(cases); got != want {
			t.Errorf("requests = %d, want %d (no retries of failures)", got, want)
		}
	})
}

func TestHangTimesOut(t *testing.T) {
	forEach(t, func(t *testing.T, b backend, srv *modeltest.Server, _ deskbot.Model) {
		c := b.config(srv)
		c.Timeout = 150 * time.Millisecond
		m := mustNew(t, c)
		srv.Push(modeltest.Reply{Hang: true})
		start := time.Now()
		_, err := m.Complete(t.Context(), ask("hi"))
		wantCode(t, err, deskbot.EUNAVAILABLE)
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("gave up after %s, want about %s", d, c.Timeout)
		}
	})
}

func TestCallerCancelIsNotAFailover(t *testing.T) {
	forEach(t, func(t *testing.T, b backend, srv *modeltest.Server, m deskbot.Model) {
		srv.Push(modeltest.Reply{Hang: true})
		ctx, cancel := context.WithCancel(t.Context())
		go func() {
			for len(srv.Requests()) == 0 {
				time.Sleep(time.Millisecond)
			}
			cancel()
		}()
		_, err := m.Complete(ctx, ask("hi"))
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("error = %v, want context.Canceled", err)
		}
		if deskbot.ErrorCode(err) == deskbot.EUNAVAILABLE {
			t.Errorf("a cancelled caller must not move the chain on: %v", err)
		}
	})
}

func TestConnectionRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			c := b.config(nil)
			c.BaseURL = "http://user:pass@" + addr + "/v1"
			_, err := mustNew(t, c).Complete(t.Context(), ask("hi"))
			wantCode(t, err, deskbot.EUNAVAILABLE)
			if msg := err.Error(); !strings.Contains(msg, "connection refused") || strings.Contains(msg, "pass") {
				t.Errorf("error %q: want 'connection refused' and no URL credentials", msg)
			}
		})
	}
}

func TestBrokenArgumentsRetryOnce(t *testing.T) {
	broken := modeltest.Calls(modeltest.ToolCall{ID: "c1", Name: "place_order", Arguments: `{"symbol": "INFY", "quantity": `})
	fixed := modeltest.Calls(modeltest.ToolCall{ID: "c2", Name: "place_order", Arguments: `{"symbol": "INFY", "quantity": 1}`})
	notObject := modeltest.Calls(modeltest.ToolCall{ID: "c3", Name: "place_order", Arguments: `["INFY", 1]`})
	forEach(t, func(t *testing.T, b backend, srv *modeltest.Server, m deskbot.Model) {
		srv.Push(broken, fixed)
		got, err := m.Complete(t.Context(), ask("buy"))
		if err != nil {
			t.Fatalf("broken then fixed: %v", err)
		}
		if len(got.ToolCalls) != 1 || string(got.ToolCalls[0].Arguments) != `{"symbol": "INFY", "quantity": 1}` {
			t.Errorf("calls = %+v, want the fixed call", got.ToolCalls)
		}
		if n := len(srv.Requests()); n != 2 {
			t.Errorf("requests = %d, want 2 (one retry)", n)
		}

		srv.Push(broken, notObject)
		_, err = m.Complete(t.Context(), ask("buy"))
		wantCode(t, err, deskbot.EUNAVAILABLE)
		if msg := deskbot.ErrorMessage(err); !strings.Contains(msg, "place_order") || !strings.Contains(msg, "fake:"+b.name) {
			t.Errorf("message %q should name the tool and the backend", msg)
		}
		if n := len(srv.Requests()); n != 4 {
			t.Errorf("requests = %d, want 4 (exactly one retry)", n)
		}
	})
}

func TestKeyNeverInErrors(t *testing.T) {
	forEach(t, func(t *testing.T, b backend, srv *modeltest.Server, m deskbot.Model) {
		// A provider that echoes the key it refused, as some do.
		srv.SetHandler(func(r modeltest.Request) modeltest.Reply {
			key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ") + r.Header.Get("X-Api-Key")
			code := 401
			if r.Index%2 == 1 {
				code = 500
			}
			return modeltest.Reply{Status: code, ErrorMessage: "Incorrect API key provided: " + key}
		})
		for range 2 {
			_, err := m.Complete(t.Context(), ask("hi"))
			if err == nil {
				t.Fatal("want an error")
			}
			if strings.Contains(err.Error(), secretKey) || strings.Contains(deskbot.ErrorMessage(err), secretKey) {
				t.Errorf("error carries the key: %v", err)
			}
			if !strings.Contains(err.Error(), "Incorrect API key provided") {
				t.Errorf("error %q lost the provider's message", err)
			}
		}
		h := srv.LastRequest().Header
		if !strings.Contains(h.Get("Authorization")+h.Get("X-Api-Key"), secretKey) {
			t.Errorf("the key was never sent, so this test proves nothing")
		}
	})
}

func TestEnvironmentKeysNotSent(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-env-LEAK")
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-env-LEAK")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	forEach(t, func(t *testing.T, b backend, srv *modeltest.Server, _ deskbot.Model) {
		c := b.config(srv)
		c.APIKey = ""
		srv.Push(modeltest.Text("ok"))
		if _, err := mustNew(t, c).Complete(t.Context(), ask("hi")); err != nil {
			t.Fatal(err)
		}
		for k, v := range srv.LastRequest().Header {
			if strings.Contains(strings.Join(v, " "), "LEAK") {
				t.Errorf("header %s carries a key from the environment", k)
			}
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
