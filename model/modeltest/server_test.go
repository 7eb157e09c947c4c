package modeltest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/deskbot/deskbot/model/modeltest"
)

func post(t *testing.T, url, body string) map[string]any {
	t.Helper()
	res, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("answer %q: %v", b, err)
	}
	return v
}

func TestQueueThenHandler(t *testing.T) {
	srv := modeltest.New(t)
	srv.Push(modeltest.Text("first"))
	srv.SetHandler(func(r modeltest.Request) modeltest.Reply {
		return modeltest.Text("you said " + r.Last().Text)
	})
	body := `{"model":"m","messages":[{"role":"system","content":"sys"},{"role":"user","content":"hello"}]}`
	var got []string
	for range 2 {
		v := post(t, srv.URL+"/v1/chat/completions", body)
		msg := v["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
		got = append(got, msg["content"].(string))
	}
	if got[0] != "first" || got[1] != "you said hello" {
		t.Errorf("answers = %q, want [first, you said hello]", got)
	}
	if n := srv.Pending(); n != 0 {
		t.Errorf("pending = %d, want 0", n)
	}
	r := srv.LastRequest()
	if r.System() != "sys" || r.Model() != "m" || r.Index != 1 || r.API != modeltest.APIOpenAI {
		t.Errorf("recorded %+v", r)
	}
}

func TestAnthropicMessagesNormalised(t *testing.T) {
	srv := modeltest.New(t)
	srv.Push(modeltest.Text("ok"))
	post(t, srv.URL+"/v1/messages", `{"model":"m","max_tokens":10,"system":[{"type":"text","text":"sys"}],"messages":[
		{"role":"user","content":"buy"},
		{"role":"assistant","content":[{"type":"text","text":"buying"},{"type":"tool_use","id":"t1","name":"place_order","input":{"symbol":"X"}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","is_error":true,"content":[{"type":"text","text":"held"}]},{"type":"text","text":"allowed"}]}]}`)
	ms := srv.LastRequest().Messages()
	if len(ms) != 4 {
		t.Fatalf("messages = %+v, want 4", ms)
	}
	if c := ms[1].ToolCalls; ms[1].Text != "buying" || len(c) != 1 || c[0].ID != "t1" || c[0].Arguments != `{"symbol":"X"}` {
		t.Errorf("assistant = %+v", ms[1])
	}
	if m := ms[2]; m.Role != "tool" || m.ToolCallID != "t1" || m.Text != "held" || !m.IsError {
		t.Errorf("tool result = %+v", m)
	}
	if m := ms[3]; m.Role != "user" || m.Text != "allowed" {
		t.Errorf("last = %+v", m)
	}
	if got := srv.LastRequest().System(); got != "sys" {
		t.Errorf("system = %q", got)
	}
}

// Every reply has its own id, in each wire format, plain or streamed, as
// the providers give them: the Claude Code CLI merges a session's
// assistant messages that share one when it reloads the session.
func TestEachReplyHasItsOwnID(t *testing.T) {
	for _, tc := range []struct {
		name, path, body string
	}{
		{"anthropic", "/v1/messages", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`},
		{"anthropic streamed", "/v1/messages", `{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`},
		{"openai", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`},
		{"openai streamed", "/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := modeltest.New(t)
			srv.SetHandler(func(modeltest.Request) modeltest.Reply { return modeltest.Text("ok") })
			seen := map[string]bool{}
			for range 3 {
				id := replyID(t, srv.URL+tc.path, tc.body)
				if id == "" || seen[id] {
					t.Fatalf("reply id %q; ids before it %v", id, seen)
				}
				seen[id] = true
			}
		})
	}
}

// replyID posts body and returns its reply's id: the body's, or for a
// stream the first event's (every chunk of an OpenAI stream carries it).
func replyID(t *testing.T, url, body string) string {
	t.Helper()
	res, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	data := b
	if strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		_, rest, ok := strings.Cut(string(b), "data: ")
		if !ok {
			t.Fatalf("a stream without data: %q", b)
		}
		first, _, _ := strings.Cut(rest, "\n")
		data = []byte(first)
	}
	var v struct {
		ID      string `json:"id"`
		Message struct {
			ID string `json:"id"`
		} `json:"message"` // Anthropic's message_start
	}
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("reply %q: %v", data, err)
	}
	if v.ID != "" {
		return v.ID
	}
	return v.Message.ID
}
