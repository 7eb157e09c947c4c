package model

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/deskbot/deskbot"
)

// sdkParams is the whole request as the SDK's parameters, each message and
// tool converted as a backend converts it, for the SDK to write whole: a
// request written from pieces must be it, byte for byte.
func sdkParams(c Config, req deskbot.ModelRequest) openai.ChatCompletionNewParams {
	p := openai.ChatCompletionNewParams{Model: shared.ChatModel(c.Model)}
	if c.MaxTokens > 0 {
		p.MaxTokens = openai.Int(int64(c.MaxTokens))
	}
	if c.Stream {
		p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	}
	if req.System != "" {
		p.Messages = append(p.Messages, openai.SystemMessage(req.System))
	}
	for _, msg := range tidy(req.Messages) {
		p.Messages = append(p.Messages, openaiMessage(msg))
	}
	for _, t := range req.Tools {
		p.Tools = append(p.Tools, openaiTool(t))
	}
	return p
}

func call(id, name, args string) deskbot.ToolCall {
	return deskbot.ToolCall{ID: id, Name: name, Arguments: json.RawMessage(args)}
}

// history is n messages of a desk's history, user and assistant in turn.
func history(n int) []deskbot.Message {
	var ms []deskbot.Message
	for i := range n {
		if i%2 == 0 {
			ms = append(ms, deskbot.Message{Role: "user", Content: "[10:30 India time] Message from Asha:\nWhat is INFY at?"})
		} else {
			ms = append(ms, deskbot.Message{Role: "assistant", Content: fmt.Sprintf("(Tools I used: get_quote {\"symbol\":\"INFY\"} -> quote #%d: 1500.00)\nINFY is at 1500.", i)})
		}
	}
	return ms
}

var quoteTool = deskbot.ToolSpec{Name: "get_quote", Description: "Quote a symbol.", Schema: json.RawMessage(`{"type":"object","properties":{"symbol":{"type":"string"}}}`)}

// bodyCases are requests whose bodies must be the SDK's, byte for byte.
var bodyCases = []struct {
	name string
	req  deskbot.ModelRequest
}{
	{"empty", deskbot.ModelRequest{}},
	{"system only", deskbot.ModelRequest{System: "You are the main desk."}},
	{"tools only", deskbot.ModelRequest{Tools: []deskbot.ToolSpec{quoteTool}}},
	{"one user message", deskbot.ModelRequest{System: "sys", Messages: []deskbot.Message{{Role: "user", Content: "hi"}}, Tools: []deskbot.ToolSpec{quoteTool}}},
	{"turn with a call", deskbot.ModelRequest{System: "sys", Tools: []deskbot.ToolSpec{quoteTool}, Messages: append(history(40),
		deskbot.Message{Role: "user", Content: "What is INFY at?"},
		deskbot.Message{Role: "assistant", ToolCalls: []deskbot.ToolCall{call("call_1", "get_quote", `{"symbol":"INFY"}`)}},
		deskbot.Message{Role: "tool", ToolCallID: "call_1", Content: "quote: 1500.00"})}},
	{"words and calls, odd arguments", deskbot.ModelRequest{Messages: []deskbot.Message{
		{Role: "user", Content: "go"},
		{Role: "assistant", Content: "Checking.", ToolCalls: []deskbot.ToolCall{call("a", "x", ""), call("b", "y", `{ "k" : [1, 2.50, 1e21] }`), call("", "", `"text"`)}},
		{Role: "tool", ToolCallID: "a", Content: "", IsError: true},
		{Role: "tool", ToolCallID: "b", Content: "boom", IsError: true},
		{Role: "tool", ToolCallID: "", Content: "Error: already said"},
	}}},
	{"results: error prefix, empty, orphan, unanswered", deskbot.ModelRequest{Messages: []deskbot.Message{
		{Role: "tool", ToolCallID: "orphan", Content: "dropped"},
		{Role: "user", Content: "go"},
		{Role: "assistant", ToolCalls: []deskbot.ToolCall{call("c1", "q", `{}`), call("c2", "q", `{}`)}},
		{Role: "tool", ToolCallID: "c2", Content: "ERROR already"},
		{Role: "tool", ToolCallID: "c2", Content: "twice"},
		{Role: "user", Content: "next"},
		{Role: "tool", ToolCallID: "c1", Content: "late"},
		{Role: "assistant", ToolCalls: []deskbot.ToolCall{call("c3", "q", `{}`)}},
	}}},
	{"roles: system mid-way, unknown, empty", deskbot.ModelRequest{System: "s", Messages: []deskbot.Message{
		{Role: "system", Content: "also a system message"}, {Role: "", Content: "no role"}, {Role: "developer", Content: "odd role"}, {Role: "user", Content: ""}, {Role: "assistant"},
	}}},
	{"hard strings", deskbot.ModelRequest{System: "<b>&amp;</b> \u2028\u2029 \x00\x01\x08\x0c\x1f \"q\" \\ / é 日本 😀 \xff\xfe",
		Messages: []deskbot.Message{{Role: "user", Content: "line\nbreak\ttab\r \x7f <script>alert('x')</script> M&M"},
			{Role: "assistant", Content: "\ufeffbom", ToolCalls: []deskbot.ToolCall{call("id\"1", "na<me>", `{"s":"\u003c&\u003e"}`)}},
			{Role: "tool", ToolCallID: "id\"1", Content: "\xc3\x28 bad utf-8"}},
		Tools: []deskbot.ToolSpec{{Name: "t<&>", Description: "desc \u2028 & <tags>", Schema: json.RawMessage(`{"type":"object","properties":{"p":{"type":"string","pattern":"^[A-Z&<>]+$","description":"\u00e9 & <"}}}`)}}}},
	{"schemas: missing, broken, no type, numbers, nesting", deskbot.ModelRequest{Messages: []deskbot.Message{{Role: "user", Content: "x"}}, Tools: []deskbot.ToolSpec{
		{Name: "none"},
		{Name: "broken", Schema: json.RawMessage(`{"type":`)},
		{Name: "array", Schema: json.RawMessage(`[1,2]`)},
		{Name: "null", Schema: json.RawMessage(`null`)},
		{Name: "no type", Schema: json.RawMessage(`{"properties":{"n":{"type":"number","minimum":0.1,"maximum":1e21,"default":100000000000000000000000}}}`)},
		{Name: "nested", Description: "", Schema: json.RawMessage(`{"type":"object","required":["a"],"properties":{"a":{"type":"array","items":{"type":"object","properties":{"z":{},"b":{"enum":[true,false,null]}}}}},"additionalProperties":false}`)},
	}}},
	{"long message", deskbot.ModelRequest{Messages: []deskbot.Message{{Role: "user", Content: strings.Repeat("long text & more ", 8000)}, {Role: "assistant", Content: "ok"}, {Role: "user", Content: strings.Repeat("long text & more ", 8000)}}}},
}

// Bodies written from pieces are the SDK's own, byte for byte, whether
// their pieces are written afresh or kept from earlier requests (every case
// goes through one model twice, so pieces of one case are found by others).
func TestBodyIsTheSDKs(t *testing.T) {
	configs := []Config{
		{Model: "fake-model"},
		{Model: "qwen3:8b <&> \u2028", MaxTokens: 512},
	}
	for _, c := range configs {
		m, err := newOpenAI(c)
		if err != nil {
			t.Fatal(err)
		}
		for round := range 2 {
			for _, tt := range bodyCases {
				t.Run(fmt.Sprintf("%s/%s/%d", c.Model, tt.name, round), func(t *testing.T) {
					want, err := sdkParams(c, tt.req).MarshalJSON()
					if err != nil {
						t.Fatal(err)
					}
					got, err := m.body(tt.req)
					if err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(got, want) {
						t.Errorf("body differs from the SDK's\n got: %s\nwant: %s", got, want)
					}
				})
			}
		}
	}
}

// Pieces that would share a key if fields were merely joined stay apart.
func TestPieceKeysDoNotCollide(t *testing.T) {
	m, err := newOpenAI(Config{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	reqs := []deskbot.ModelRequest{
		{Messages: []deskbot.Message{{Role: "assistant", ToolCalls: []deskbot.ToolCall{call("ab", "c", `{}`)}}}},
		{Messages: []deskbot.Message{{Role: "assistant", ToolCalls: []deskbot.ToolCall{call("a", "bc", `{}`)}}}},
		{Messages: []deskbot.Message{{Role: "assistant", Content: "x"}}},
		{Messages: []deskbot.Message{{Role: "user", Content: "x"}}},
		{Messages: []deskbot.Message{{Role: "system", Content: "x"}}},
		{Messages: []deskbot.Message{{Role: "assistant", ToolCalls: []deskbot.ToolCall{call("i", "n", `{}`)}}, {Role: "tool", ToolCallID: "i", Content: "r", IsError: true}}},
		{Messages: []deskbot.Message{{Role: "assistant", ToolCalls: []deskbot.ToolCall{call("i", "n", `{}`)}}, {Role: "tool", ToolCallID: "i", Content: "r"}}},
		{Tools: []deskbot.ToolSpec{{Name: "ab", Description: "c"}}},
		{Tools: []deskbot.ToolSpec{{Name: "a", Description: "bc"}}},
	}
	for round := range 2 {
		for i, req := range reqs {
			want, err := sdkParams(m.cfg, req).MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			if got, err := m.body(req); err != nil || !bytes.Equal(got, want) {
				t.Errorf("round %d, request %d: body %s, %v; want %s", round, i, got, err, want)
			}
		}
	}
}

func TestPieceCacheKeepsWhatIsUsed(t *testing.T) {
	c := newPieceCache()
	piece := bytes.Repeat([]byte("x"), maxPiece/2)
	key := func(i int) []byte { return fmt.Appendf(nil, "k%d", i) }
	perGen := pieceCacheBytes / (len(piece) + len(key(0)))
	c.put(key(0), piece)
	for i := 1; i <= perGen; i++ { // fills the generation: key 0 is now in the old one
		c.put(key(i), piece)
	}
	if _, ok := c.get(key(0)); !ok {
		t.Fatal("a piece of the old generation is lost after one turnover")
	}
	for i := perGen + 1; i <= 3*perGen; i++ { // key 0 was moved to the current: two turnovers drop it
		c.put(key(i), piece)
	}
	if _, ok := c.get(key(0)); ok {
		t.Error("a piece unused for two turnovers is still kept")
	}
	if _, ok := c.get(key(3 * perGen)); !ok {
		t.Error("the newest piece is not kept")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.cur) + len(c.old); n > 2*perGen+2 {
		t.Errorf("%d pieces kept, want at most %d", n, 2*perGen+2)
	}
	c.put([]byte("big"), make([]byte, maxPiece))
	if _, ok := c.cur["big"]; ok {
		t.Error("a piece over maxPiece is kept")
	}
}

// A history already sent is not written again: a request carrying forty
// messages of it costs about the allocations of one without, instead of
// the SDK's dozens per message.
func TestHistoryIsNotWrittenAgain(t *testing.T) {
	reply := []byte(`{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write(reply)
	}))
	t.Cleanup(srv.Close)
	m, err := New(Config{Model: "m", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	allocs := func(req deskbot.ModelRequest) float64 {
		return testing.AllocsPerRun(50, func() {
			if _, err := m.Complete(context.Background(), req); err != nil {
				t.Fatal(err)
			}
		})
	}
	ask := deskbot.ModelRequest{System: "sys", Tools: []deskbot.ToolSpec{quoteTool}, Messages: []deskbot.Message{{Role: "user", Content: "What is INFY at?"}}}
	withHistory := ask
	withHistory.Messages = append(history(40), ask.Messages...)
	bare, full := allocs(ask), allocs(withHistory)
	t.Logf("allocations: %.0f without history, %.0f with", bare, full)
	if full-bare > 20 {
		t.Errorf("a request with 40 messages of history makes %.0f allocations more than one without; want at most 20", full-bare)
	}
}

// What goes on the wire is what the SDK sent when given the whole request,
// streamed or not: body byte for byte, and its headers.
func TestWireIsTheSDKs(t *testing.T) {
	type sent struct {
		body   []byte
		ctype  string
		length int64
	}
	got := make(chan sent, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- sent{b, r.Header.Get("Content-Type"), r.ContentLength}
		http.Error(w, `{"error":{"message":"no"}}`, http.StatusBadRequest)
	}))
	t.Cleanup(srv.Close)
	for _, stream := range []bool{false, true} {
		c := Config{Model: "fake-model", MaxTokens: 64, BaseURL: srv.URL, Stream: stream, HTTPClient: srv.Client(), Timeout: 5 * time.Second, Log: slog.New(slog.DiscardHandler)}
		m, err := newOpenAI(c)
		if err != nil {
			t.Fatal(err)
		}
		for _, tt := range bodyCases {
			t.Run(fmt.Sprintf("stream=%v/%s", stream, tt.name), func(t *testing.T) {
				ctx := context.Background()
				if stream {
					m.svc.NewStreaming(ctx, sdkParams(c, tt.req)).Close()
				} else {
					m.svc.New(ctx, sdkParams(c, tt.req))
				}
				want := <-got
				m.Complete(ctx, tt.req)
				if have := <-got; !bytes.Equal(have.body, want.body) || have.ctype != want.ctype || have.length != want.length {
					t.Errorf("sent %s (%s, %d bytes)\nwant %s (%s, %d bytes)", have.body, have.ctype, have.length, want.body, want.ctype, want.length)
				}
			})
		}
	}
}

// A backend is shared by desks: requests written at once, from pieces kept
// by one another, are each the SDK's.
func TestBodiesWrittenAtOnce(t *testing.T) {
	c := Config{Model: "fake-model"}
	m, err := newOpenAI(c)
	if err != nil {
		t.Fatal(err)
	}
	want := make([][]byte, len(bodyCases))
	for i, tt := range bodyCases {
		if want[i], err = sdkParams(c, tt.req).MarshalJSON(); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for n := range 20 {
				i := (g + n) % len(bodyCases)
				if got, err := m.body(bodyCases[i].req); err != nil || !bytes.Equal(got, want[i]) {
					t.Errorf("%s: body differs from the SDK's (%v)", bodyCases[i].name, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// The pieces kept are bounded for the process, not per backend: ten desks,
// each with its own backend and history, keep no more between them than one
// cache's two generations.
func TestPiecesAreBoundedForTheProcess(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`))
	}))
	t.Cleanup(srv.Close)
	caches := map[*pieceCache]bool{}
	for desk := range 10 {
		m, err := New(Config{Model: "m", BaseURL: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		caches[m.(*openaiModel).pieces] = true
		var msgs []deskbot.Message
		for i := range 40 {
			msgs = append(msgs, deskbot.Message{Role: "user", Content: fmt.Sprintf("desk %d, message %d: %s", desk, i, strings.Repeat("x", 1000))})
		}
		if _, err := m.Complete(t.Context(), deskbot.ModelRequest{System: "sys", Messages: msgs}); err != nil {
			t.Fatal(err)
		}
	}
	kept := 0
	for c := range caches {
		c.mu.Lock()
		for _, gen := range []map[string][]byte{c.cur, c.old} {
			for k, p := range gen {
				kept += len(k) + len(p)
			}
		}
		c.mu.Unlock()
	}
	if kept > 2*pieceCacheBytes {
		t.Errorf("%d bytes of pieces kept for ten desks, want at most %d", kept, 2*pieceCacheBytes)
	}
}
