package mcpserve_test

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/agent"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/mcpserve"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearer adds a token to every request, as Claude Code does with the
// headers of its MCP config.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func connect(ctx context.Context, url, token string) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	return c.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token}}, MaxRetries: -1, DisableStandaloneSSE: true,
	}, nil)
}

func mustListen(t testing.TB) *mcpserve.Server {
	t.Helper()
	s, err := mcpserve.Listen(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func mustOpen(t testing.TB, s *mcpserve.Server, desk string, tools []deskbot.ToolSpec, call mcpserve.Call) *mcpserve.Turn {
	t.Helper()
	turn, err := s.Open(desk, tools, call)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(turn.Close)
	return turn
}

var specs = []deskbot.ToolSpec{
	{Name: "get_quote", Description: "Quote a symbol.", Schema: json.RawMessage(`{"type":"object","properties":{"symbol":{"type":"string"}},"required":["symbol"]}`)},
	{Name: "place_order", Description: "Place an order.", Schema: json.RawMessage(`{"type":"object","properties":{"qty":{"type":"integer"}}}`)},
}

// echo answers every call with its name and arguments, byte for byte.
func echo(calls *atomic.Int64) mcpserve.Call {
	return func(_ context.Context, c deskbot.ToolCall) deskbot.ToolResult {
		calls.Add(1)
		return deskbot.ToolResult{Text: c.Name + " " + string(c.Arguments), IsError: c.Name == "place_order"}
	}
}

func TestListsExactlyTheDesksToolsAndCallsThroughCall(t *testing.T) {
	s := mustListen(t)
	var calls atomic.Int64
	turn := mustOpen(t, s, "alpha", specs, echo(&calls))
	cs, err := connect(t.Context(), turn.URL, turn.Token)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	list, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Tools) != len(specs) {
		t.Fatalf("got %d tools, want %d", len(list.Tools), len(specs))
	}
	for i, got := range list.Tools {
		want := specs[i]
		var wantSchema any
		if err := json.Unmarshal(want.Schema, &wantSchema); err != nil {
			t.Fatal(err)
		}
		if got.Name != want.Name || got.Description != want.Description || !reflect.DeepEqual(got.InputSchema, wantSchema) {
			t.Errorf("tool %d = %s %q %v, want %s %q %v", i, got.Name, got.Description, got.InputSchema, want.Name, want.Description, wantSchema)
		}
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "place_order", Arguments: map[string]any{"qty": 5}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.Content[0].(*mcp.TextContent).Text, `place_order {"qty":5}`; got != want || !res.IsError {
		t.Errorf("result = %q (error %v), want %q (error true)", got, res.IsError, want)
	}
	if calls.Load() != 1 {
		t.Errorf("calls = %d, want 1", calls.Load())
	}
}

// No request is served without the bearer token of the desk's open turn.
func TestRefusesOtherDesksNoAndStaleTokens(t *testing.T) {
	s := mustListen(t)
	var calls atomic.Int64
	alpha := mustOpen(t, s, "alpha", specs, echo(&calls))
	beta := mustOpen(t, s, "beta", specs, echo(&calls))
	stale, err := s.Open("gamma", specs, echo(&calls))
	if err != nil {
		t.Fatal(err)
	}
	stale.Close()
	for _, tc := range []struct{ name, url, token string }{
		{"another desk's token", alpha.URL, beta.Token},
		{"no token", alpha.URL, ""},
		{"a made-up token", alpha.URL, strings.Repeat("0", 64)},
		{"a closed turn's token", stale.URL, stale.Token},
		{"a desk with no turn", strings.Replace(alpha.URL, "alpha", "delta", 1), alpha.Token},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, err := connect(t.Context(), tc.url, tc.token)
			if err == nil {
				_, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "get_quote", Arguments: map[string]any{"symbol": "TCS"}})
				cs.Close()
			}
			if err == nil {
				t.Fatal("the request was served")
			}
		})
	}
	if calls.Load() != 0 {
		t.Errorf("%d calls ran", calls.Load())
	}
	// A raw request says 401.
	req, _ := http.NewRequestWithContext(t.Context(), "POST", alpha.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Authorization", "Bearer "+beta.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("status = %d, want 401", resp.StatusCode)
	}
}

func TestOneTurnPerDeskAndObjectSchemasOnly(t *testing.T) {
	s := mustListen(t)
	var calls atomic.Int64
	mustOpen(t, s, "alpha", specs, echo(&calls))
	if _, err := s.Open("alpha", specs, echo(&calls)); deskbot.ErrorCode(err) != deskbot.ECONFLICT {
		t.Errorf("second turn of a desk: err = %v, want ECONFLICT", err)
	}
	bad := []deskbot.ToolSpec{{Name: "x", Schema: json.RawMessage(`{"type":"string"}`)}}
	if _, err := s.Open("beta", bad, echo(&calls)); deskbot.ErrorCode(err) != deskbot.EINVALID {
		t.Errorf("string schema: err = %v, want EINVALID", err)
	}
	if _, err := s.Open("../x", specs, echo(&calls)); err == nil {
		t.Error("a bad desk name was served")
	}
}

// The cost of one tool call over MCP (HTTP on the loopback, JSON-RPC,
// the SDK on both sides) against the same call made on the registry.
func BenchmarkToolCall(b *testing.B) {
	reg := agent.NewRegistry(&deskbottest.Tool{ToolName: deskbot.ToolGetQuote, About: "Quote a symbol.",
		ArgSchema: json.RawMessage(`{"type":"object","properties":{"symbol":{"type":"string"}}}`),
		Result:    deskbot.ToolResult{Text: "1500.00"}})
	call := func(ctx context.Context, c deskbot.ToolCall) deskbot.ToolResult {
		res, err := reg.Run(ctx, "alpha", c)
		if err != nil {
			b.Fatal(err)
		}
		return res
	}
	args := json.RawMessage(`{"symbol":"TCS"}`)
	b.Run("registry", func(b *testing.B) {
		for b.Loop() {
			call(b.Context(), deskbot.ToolCall{ID: "1", Name: "get_quote", Arguments: args})
		}
	})
	b.Run("mcp", func(b *testing.B) {
		s := mustListen(b)
		turn := mustOpen(b, s, "alpha", reg.Specs(), call)
		cs, err := connect(b.Context(), turn.URL, turn.Token)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		p := &mcp.CallToolParams{Name: "get_quote", Arguments: args}
		for b.Loop() {
			if _, err := cs.CallTool(b.Context(), p); err != nil {
				b.Fatal(err)
			}
		}
	})
}
