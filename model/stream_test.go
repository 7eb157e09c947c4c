package model_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/model"
)

// Streams as some OpenAI-compatible servers really send them, which the
// fake's well-behaved stream does not cover.
func TestOpenAIStreamQuirks(t *testing.T) {
	chunk := func(delta string, finish string) string {
		f := "null"
		if finish != "" {
			f = fmt.Sprintf("%q", finish)
		}
		return fmt.Sprintf(`data: {"id":"c","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":%s,"finish_reason":%s}]}`+"\n\n", delta, f)
	}
	cases := []struct {
		name string
		body string
		want []deskbot.ToolCall // nil with code: an error
		code string
	}{
		{
			name: "whole calls all at index 0",
			body: chunk(`{"role":"assistant","tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"get_positions","arguments":"{}"}}]}`, "") +
				chunk(`{"tool_calls":[{"index":0,"id":"b","type":"function","function":{"name":"place_order","arguments":"{\"symbol\":\"X\"}"}}]}`, "") +
				chunk(`{}`, "tool_calls") + "data: [DONE]\n\n",
			want: []deskbot.ToolCall{
				{ID: "a", Name: "get_positions", Arguments: []byte(`{}`)},
				{ID: "b", Name: "place_order", Arguments: []byte(`{"symbol":"X"}`)},
			},
		},
		{
			name: "name repeated in every delta",
			body: chunk(`{"tool_calls":[{"index":0,"id":"a","function":{"name":"bash","arguments":"{\"cmd\":"}}]}`, "") +
				chunk(`{"tool_calls":[{"index":0,"function":{"name":"bash","arguments":"\"ls\"}"}}]}`, "") +
				chunk(`{}`, "tool_calls") + "data: [DONE]\n\n",
			want: []deskbot.ToolCall{{ID: "a", Name: "bash", Arguments: []byte(`{"cmd":"ls"}`)}},
		},
		{
			name: "cut off before the end",
			body: chunk(`{"tool_calls":[{"index":0,"id":"a","function":{"name":"place_order","arguments":"{\"symbol\":\"X\"}"}}]}`, ""),
			code: deskbot.EUNAVAILABLE,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprint(w, c.body)
			}))
			defer srv.Close()
			m := mustNew(t, model.Config{Name: "quirky", Model: "m", BaseURL: srv.URL + "/v1", Stream: true})
			got, err := m.Complete(t.Context(), ask("go"))
			if c.code != "" {
				wantCode(t, err, c.code)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got.ToolCalls) != len(c.want) {
				t.Fatalf("calls = %+v, want %+v", got.ToolCalls, c.want)
			}
			for i, w := range c.want {
				g := got.ToolCalls[i]
				if g.ID != w.ID || g.Name != w.Name || string(g.Arguments) != string(w.Arguments) {
					t.Errorf("call %d = %s %s %s, want %s %s %s", i, g.ID, g.Name, g.Arguments, w.ID, w.Name, w.Arguments)
				}
			}
		})
	}
}
