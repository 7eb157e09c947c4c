// Package modeltest is a fake model server for tests: a loopback httptest
// server that speaks the OpenAI chat-completions API (POST
// /v1/chat/completions) and Anthropic's Messages API (POST /v1/messages),
// both plain JSON and server-sent events when the request asks to stream.
//
// Replies are scripted: Push queues them and each request consumes the next
// one in order; once the queue is empty the handler set with SetHandler
// answers (it sees the request, so a reply can depend on the last message).
// A request with neither fails the test: an unexpected model call is a bug.
// Failures come on demand: an HTTP status, a hang until the client gives up,
// broken tool arguments, a body that is not JSON, a body that does not end.
//
// Every request is recorded, decoded, so a test can assert what the model
// was shown. The server is safe for concurrent requests; it closes itself
// when the test ends, releasing any request that hangs.
package modeltest

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// ToolCall is a tool call the fake model makes. Arguments is sent exactly as
// given, valid JSON or not.
type ToolCall struct {
	ID        string // "" means the server makes one up (unless Reply.OmitIDs)
	Name      string
	Arguments string
}

// Reply is one scripted answer. The zero Reply is an empty text answer.
type Reply struct {
	Text      string
	ToolCalls []ToolCall
	// OmitIDs leaves tool call ids out, as some local models do.
	OmitIDs bool

	// Status, when not 0 or 200, answers with this HTTP status and an error
	// body in the provider's format carrying ErrorMessage.
	Status       int
	ErrorMessage string
	// Hang holds the request open until the client gives up or the test ends.
	Hang bool
	// Malformed answers 200 with a body that is not JSON (or, when
	// streaming, a chunk that is not JSON).
	Malformed bool
	// Flood, when > 0, answers 200 with a text of about this many bytes in
	// the API's format, streamed or not, written in pieces until the client
	// stops reading: a provider that never stops talking. BytesSent tells
	// how much of it went out.
	Flood int64
	// InputTokens and OutputTokens are the usage the answer reports (0
	// and 0 report 10 and 5).
	InputTokens, OutputTokens int64
}

// usage is the usage the reply reports.
func (r Reply) usage() (in, out int64) {
	if r.InputTokens == 0 && r.OutputTokens == 0 {
		return 10, 5
	}
	return r.InputTokens, r.OutputTokens
}

// Text is a reply of words only.
func Text(s string) Reply { return Reply{Text: s} }

// Calls is a reply made of tool calls.
func Calls(calls ...ToolCall) Reply { return Reply{ToolCalls: calls} }

// Status is a reply that fails with an HTTP status.
func Status(code int) Reply { return Reply{Status: code} }

// Server is the fake. URL is its base: the OpenAI backend wants URL+"/v1",
// the Anthropic SDK wants URL itself.
type Server struct {
	URL string

	t       testing.TB
	srv     *httptest.Server
	done    chan struct{}
	mu      sync.Mutex
	queue   []Reply
	handler func(Request) Reply
	reqs    []Request
	ended   bool
	nextID  int
	tag     string // in every reply's id: see replyID
	sent    atomic.Int64
}

// BytesSent is how many bytes of Flood replies the server managed to write.
func (s *Server) BytesSent() int64 { return s.sent.Load() }

// New starts a fake server that shuts down when the test ends.
func New(t testing.TB) *Server {
	t.Helper()
	s := Start(nil)
	s.t = t
	t.Cleanup(s.Close)
	return s
}

// Start starts a fake server answered by handler that runs until Close:
// for a program with a scripted model of its own (deskbot demo) rather
// than a test. With no test to fail, a request nothing answers gets an
// empty text reply.
func Start(handler func(Request) Reply) *Server {
	s := &Server{done: make(chan struct{}), handler: handler, tag: rand.Text()[:8]}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.serveOpenAI)
	mux.HandleFunc("POST /v1/messages", s.serveAnthropic)
	s.srv = httptest.NewServer(mux)
	s.URL = s.srv.URL
	return s
}

// Close releases hanging requests and stops the server. Tests need not call
// it; it runs when the test ends.
func (s *Server) Close() {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	s.ended = true
	close(s.done)
	s.mu.Unlock()
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Push queues replies, answered in order before the handler is asked.
func (s *Server) Push(replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, replies...)
}

// SetHandler sets the function that answers once the queue is empty.
func (s *Server) SetHandler(h func(Request) Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handler = h
}

// Pending is how many pushed replies are still unused.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue)
}

// Requests returns every request received so far, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// LastRequest returns the most recent request; it fails the test if there
// was none.
func (s *Server) LastRequest() Request {
	s.t.Helper()
	reqs := s.Requests()
	if len(reqs) == 0 {
		s.t.Fatal("modeltest: no request received")
	}
	return reqs[len(reqs)-1]
}

// take records the request and picks its reply. ok is false when nothing
// was scripted for it.
func (s *Server) take(r *http.Request, api string) (Request, Reply, bool) {
	raw, _ := io.ReadAll(r.Body)
	req := Request{API: api, Path: r.URL.Path, Header: r.Header.Clone(), Raw: raw}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber() // keep argument numbers as the client sent them
	if err := d.Decode(&req.Body); err != nil {
		req.Body = nil
	}
	req.Stream, _ = req.Body["stream"].(bool)

	s.mu.Lock()
	req.Index = len(s.reqs)
	s.reqs = append(s.reqs, req)
	var rep Reply
	ok := true
	h := s.handler
	switch {
	case len(s.queue) > 0:
		rep, s.queue = s.queue[0], s.queue[1:]
		h = nil
	case h == nil:
		ok = s.t == nil // a program's server answers with the zero Reply
		if !s.ended && s.t != nil {
			s.t.Errorf("modeltest: request #%d to %s with no reply scripted", req.Index, req.Path)
		}
	}
	s.mu.Unlock()
	if h != nil {
		rep = h(req)
	}
	return req, rep, ok
}

// hang waits until the client goes away or the test ends.
func (s *Server) hang(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-s.done:
	}
}

// replyID is the id of req's reply: each reply its own, as the providers
// give them (the Claude Code CLI merges the assistant messages of a
// session that share an id when it reloads it, so one id for all
// reorders a resumed conversation). The server's tag keeps them apart
// from another server's.
func (s *Server) replyID(req Request, prefix string) string {
	return fmt.Sprintf("%s%s_%d", prefix, s.tag, req.Index+1)
}

// callID returns the id to send for a call.
func (s *Server) callID(c ToolCall, prefix string) string {
	if c.ID != "" {
		return c.ID
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	return fmt.Sprintf("%s%d", prefix, s.nextID)
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}

// sse writes server-sent events, flushing each so that the client really
// receives the reply in pieces.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

func newSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f}
}

func (e *sse) send(event string, data []byte) {
	if event != "" {
		fmt.Fprintf(e.w, "event: %s\n", event)
	}
	fmt.Fprintf(e.w, "data: %s\n\n", data)
	if e.f != nil {
		e.f.Flush()
	}
}

// pieces splits s into about n parts on rune boundaries, so a streamed
// argument string arrives in several deltas without breaking a character.
func pieces(s string, n int) []string {
	runes := []rune(s)
	if len(runes) == 0 {
		return nil
	}
	size := max(1, (len(runes)+n-1)/n)
	var out []string
	for i := 0; i < len(runes); i += size {
		out = append(out, string(runes[i:min(i+size, len(runes))]))
	}
	return out
}

func mustMarshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("modeltest: " + err.Error())
	}
	return b
}

// flood writes about n bytes of one endless text, in api's format, until
// the client stops reading.
func (s *Server) flood(w http.ResponseWriter, api, id, model string, stream bool, n int64) {
	piece := strings.Repeat("a", 32<<10)
	var head, each, tail string
	switch {
	case api == APIOpenAI && !stream:
		head = fmt.Sprintf(`{"id":%q,"object":"chat.completion","model":%s,"choices":[{"index":0,"message":{"role":"assistant","content":"`, id, mustMarshal(model))
		each = piece
		tail = `"},"finish_reason":"stop"}]}`
	case api == APIOpenAI:
		head = `data: {"id":"` + id + `","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n"
		each = `data: {"id":"` + id + `","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"` + piece + `"},"finish_reason":null}]}` + "\n\n"
		tail = `data: {"id":"` + id + `","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n"
	case !stream:
		head = fmt.Sprintf(`{"id":%q,"type":"message","role":"assistant","model":%s,"content":[{"type":"text","text":"`, id, mustMarshal(model))
		each = piece
		tail = `"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}`
	default:
		head = "event: message_start\ndata: " + fmt.Sprintf(`{"type":"message_start","message":{"id":%q,"type":"message","role":"assistant","model":%s,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":1}}}`, id, mustMarshal(model)) + "\n\n" +
			"event: content_block_start\ndata: " + `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\n\n"
		each = "event: content_block_delta\ndata: " + `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"` + piece + `"}}` + "\n\n"
		tail = "event: content_block_stop\ndata: " + `{"type":"content_block_stop","index":0}` + "\n\n" +
			"event: message_delta\ndata: " + `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":1}}` + "\n\n" +
			"event: message_stop\ndata: " + `{"type":"message_stop"}` + "\n\n"
	}
	if stream {
		w.Header().Set("Content-Type", "text/event-stream")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	write := func(p string) bool {
		k, err := io.WriteString(w, p)
		s.sent.Add(int64(k))
		if err == nil && f != nil {
			f.Flush()
		}
		return err == nil
	}
	if !write(head) {
		return
	}
	for left := n - int64(len(head)+len(tail)); left > 0; left -= int64(len(each)) {
		select {
		case <-s.done:
			return
		default:
		}
		if !write(each) {
			return
		}
	}
	write(tail)
}
