// Package mcpserve serves a desk's tools to an MCP client (the Claude Code
// CLI) over streamable HTTP, built on the official Go SDK.
//
// One Server listens on the host's loopback (127.0.0.1, a port of its own
// picked by the kernel) for the whole service. A desk's tools are served
// only while one of its turns is open: Open gives the turn its URL
// (/desk/<name>) and a fresh random bearer token; Close forgets them. A
// request without the token of the desk's open turn (no token, another
// desk's, a closed turn's) is refused with 401 before the SDK sees it. The
// desks' sandboxes have a network namespace of their own and cannot reach
// the host's loopback at all; the token is what guards the endpoint when
// desks run without a sandbox.
//
// tools/list lists exactly the tools given to Open, with their names,
// descriptions and JSON schemas as the agent loop offers them; tools/call
// hands the call, its arguments byte for byte, to the turn's Call, which
// runs it through the agent's executor (events, loop guard, gate, registry,
// completed-call memory). The server is stateless in the MCP sense (no
// Mcp-Session-Id): every request stands alone, so nothing outlives a turn.
//
// Concurrency: Open, Close and requests may come from any goroutine; a desk
// has at most one open turn at a time.
package mcpserve

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"context"

	"github.com/deskbot/deskbot"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServerName is the MCP server's name; a client such as Claude Code names
// the tools mcp__<ServerName>__<tool>.
const ServerName = "deskbot"

// maxRequestBytes bounds one request's body (a tool call's arguments).
const maxRequestBytes = 1 << 20

// Call runs one tool call for a turn and returns what the model is told.
type Call func(ctx context.Context, call deskbot.ToolCall) deskbot.ToolResult

// Server serves the open turns' tools.
type Server struct {
	ln   net.Listener
	srv  *http.Server
	log  *slog.Logger
	done chan struct{}

	mu    sync.Mutex
	turns map[string]*Turn // by desk
}

// Listen starts a Server on 127.0.0.1 on a free port. log may be nil.
func Listen(log *slog.Logger) (*Server, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, deskbot.Errorf(deskbot.EUNAVAILABLE, "MCP server: cannot listen on the loopback: %v", err)
	}
	s := &Server{ln: ln, log: log, turns: map[string]*Turn{}, done: make(chan struct{})}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("MCP server stopped", "err", err)
		}
	}()
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the server; open turns are refused from then on.
func (s *Server) Close() error {
	err := s.srv.Close()
	<-s.done
	return err
}

// Turn is a desk's open turn: its tools are served at URL to a client that
// sends Token as a bearer token.
type Turn struct {
	URL, Token string
	desk       string
	s          *Server
	h          http.Handler
	n          atomic.Int64 // calls so far, for their ids
}

// Open serves tools to desk's turn until Close; call runs each tools/call.
// A desk with a turn open already is refused (a desk runs one turn at a
// time), as is a tool whose schema is not a JSON object schema.
func (s *Server) Open(desk string, tools []deskbot.ToolSpec, call Call) (*Turn, error) {
	if err := deskbot.ValidDeskName(desk); err != nil {
		return nil, err
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, deskbot.Errorf(deskbot.EUNAVAILABLE, "MCP server: no randomness for a token: %v", err)
	}
	t := &Turn{URL: "http://" + s.Addr() + "/desk/" + desk, Token: hex.EncodeToString(b), desk: desk, s: s}
	srv := mcp.NewServer(&mcp.Implementation{Name: ServerName, Version: "1"}, &mcp.ServerOptions{Logger: s.log})
	for _, spec := range tools {
		schema, err := objectSchema(spec.Schema)
		if err != nil {
			return nil, deskbot.Errorf(deskbot.EINVALID, "MCP server: tool %s: %v", spec.Name, err)
		}
		srv.AddTool(&mcp.Tool{Name: spec.Name, Description: spec.Description, InputSchema: schema}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			c := deskbot.ToolCall{ID: fmt.Sprintf("mcp_%d", t.n.Add(1)), Name: req.Params.Name, Arguments: req.Params.Arguments}
			res := call(ctx, c)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Text}}, IsError: res.IsError}, nil
		})
	}
	t.h = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		Stateless: true, JSONResponse: true, Logger: s.log, MaxRequestBodyBytes: maxRequestBytes,
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, busy := s.turns[desk]; busy {
		return nil, deskbot.Errorf(deskbot.ECONFLICT, "MCP server: desk %s has a turn open already", desk)
	}
	s.turns[desk] = t
	return t, nil
}

// Close stops serving the turn: its token is refused from now on.
func (t *Turn) Close() {
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	if t.s.turns[t.desk] == t {
		delete(t.s.turns, t.desk)
	}
}

// ServeHTTP checks the bearer token of the desk the path names, then hands
// the request to that turn's MCP handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	desk, ok := strings.CutPrefix(r.URL.Path, "/desk/")
	s.mu.Lock()
	t := s.turns[desk]
	s.mu.Unlock()
	token, bearer := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || t == nil || !bearer || subtle.ConstantTimeCompare([]byte(token), []byte(t.Token)) != 1 {
		s.log.WarnContext(r.Context(), "MCP request refused: no open turn for this token", "path", r.URL.Path)
		w.Header().Set("WWW-Authenticate", `Bearer realm="deskbot"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	t.h.ServeHTTP(w, r)
}

// objectSchema is a tool's schema as the SDK takes it: a JSON object with
// type "object" (an empty schema means an object of any properties).
func objectSchema(raw json.RawMessage) (json.RawMessage, error) {
	if len(strings.TrimSpace(string(raw))) == 0 {
		return json.RawMessage(`{"type":"object"}`), nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, errors.New("its schema is not a JSON object")
	}
	if m["type"] != "object" {
		return nil, errors.New(`its schema's type is not "object"`)
	}
	return raw, nil
}
