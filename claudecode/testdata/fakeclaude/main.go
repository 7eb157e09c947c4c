// Command fakeclaude stands in for the Claude Code CLI in tests. It reads
// its flags as `claude -p --output-format stream-json --verbose` does,
// prints the stream-json lines the real CLI prints (system init, assistant
// tool_use, user tool_result, result), and calls the MCP server of its
// --mcp-config the way Claude Code does (initialize, tools/list,
// tools/call), with the config's headers.
//
// What it does is scripted: <its own path>.script.json holds one entry per
// run ({"runs": [...]}); the n-th run takes the n-th entry (a counter sits
// next to the script). Tests give each test its own copy of the binary, so
// neither an argument nor a variable of theirs changes what the backend
// gives the CLI. Each run records what it saw (arguments, environment,
// working directory, stdin, tools, results) in <script>.run<n>.json.
// --version prints the script's "version", claudecode.MinVersion when it
// has none.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/deskbot/deskbot/claudecode"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type step struct {
	Call  string          `json:"call,omitempty"`
	Args  json.RawMessage `json:"args,omitempty"`
	Crash bool            `json:"crash,omitempty"`
}

type run struct {
	Steps []step `json:"steps"`
	Text  string `json:"text"`
	// Error ends with an error result of this subtype (error_max_turns),
	// whose reasons are Errors (its result text empty, as the CLI's).
	Error  string   `json:"error,omitempty"`
	Errors []string `json:"errors,omitempty"`
	// Stderr is written to stderr before the result.
	Stderr string `json:"stderr,omitempty"`
	// HideTools leaves the MCP server's tools out of the init line, as
	// if the CLI did not offer them.
	HideTools bool `json:"hide_tools,omitempty"`
	// Token replaces the config's bearer token ("none" sends none).
	Token string `json:"token,omitempty"`
	// NoSession fails a --resume before the session starts, as the CLI
	// does when the session is unknown.
	NoSession bool `json:"no_session,omitempty"`
	// Hang waits, after the steps, until killed.
	Hang bool `json:"hang,omitempty"`
}

type record struct {
	Args    []string          `json:"args"`
	Env     []string          `json:"env"`
	Cwd     string            `json:"cwd"`
	Stdin   string            `json:"stdin"`
	Tools   []*mcp.Tool       `json:"tools"`
	Results []string          `json:"results"`
	Errors  []string          `json:"errors"`
	Flags   map[string]string `json:"flags"`
	Pid     int               `json:"pid"`
}

func main() {
	self, err := os.Executable()
	if err != nil {
		fail("%v", err)
	}
	script, args := self+".script.json", os.Args[1:]
	raw, err := os.ReadFile(script)
	var sc struct {
		Runs []run
		// Version is what --version prints; the oldest deskbot runs
		// when not set.
		Version string
	}
	if err == nil {
		err = json.Unmarshal(raw, &sc)
	}
	if len(args) > 0 && args[0] == "--version" {
		fmt.Println(cmp.Or(sc.Version, claudecode.MinVersion+" (Claude Code)"))
		return
	}
	if err != nil {
		fail("no script: %v", err)
	}
	n := 0
	if b, err := os.ReadFile(script + ".n"); err == nil {
		n, _ = strconv.Atoi(string(b))
	}
	if err := os.WriteFile(script+".n", []byte(strconv.Itoa(n+1)), 0o600); err != nil {
		fail("%v", err)
	}
	if n >= len(sc.Runs) {
		fail("run %d is not scripted", n+1)
	}
	r := sc.Runs[n]
	rec := &record{Args: args, Env: os.Environ(), Flags: flags(args), Pid: os.Getpid()}
	rec.Cwd, _ = os.Getwd()
	in, _ := readAll(os.Stdin)
	rec.Stdin = in
	// A record is replaced whole (written aside, then renamed): the
	// backend may kill the run while it saves one.
	save := func() {
		b, _ := json.MarshalIndent(rec, "", " ")
		name := fmt.Sprintf("%s.run%d.json", script, n+1)
		if os.WriteFile(name+".tmp", b, 0o600) == nil {
			_ = os.Rename(name+".tmp", name)
		}
	}
	defer save()

	session := fmt.Sprintf("0000-session-%d", n+1)
	if s, ok := rec.Flags["--resume"]; ok {
		if r.NoSession {
			// As the CLI does (2.1.332): the reason on stderr and in the
			// error result's errors, which names the unknown session and
			// has no result text; no init.
			fmt.Fprintf(os.Stderr, "No conversation found with session ID: %s\n", s)
			emit(map[string]any{"type": "result", "subtype": "error_during_execution", "is_error": true, "num_turns": 0, "session_id": s,
				"errors": []string{"No conversation found with session ID: " + s}})
			save()
			os.Exit(1)
		}
		session = s
	}
	// As the CLI does, the MCP servers are connected before the init
	// line, which shows how that went.
	status, tools := "connected", []string{}
	cs, err := connect(rec.Flags["--mcp-config"], r.Token)
	if err != nil {
		rec.Errors = append(rec.Errors, err.Error())
		status = "failed"
	} else {
		defer cs.Close()
		list, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			rec.Errors = append(rec.Errors, err.Error())
			status = "failed"
		} else {
			rec.Tools = list.Tools
		}
	}
	if !r.HideTools {
		for _, t := range rec.Tools {
			tools = append(tools, "mcp__deskbot__"+t.Name)
		}
	}
	save() // the backend may stop the run at its init line
	emit(map[string]any{"type": "system", "subtype": "init", "cwd": rec.Cwd, "session_id": session, "model": rec.Flags["--model"],
		"tools": tools, "mcp_servers": []map[string]string{{"name": "deskbot", "status": status}}, "permissionMode": "default"})
	turns := 1
	for i, s := range r.Steps {
		if s.Crash {
			save()
			fmt.Fprintln(os.Stderr, "Error: the fake CLI crashed")
			os.Exit(3)
		}
		id := fmt.Sprintf("toolu_%d_%d", n+1, i+1)
		emit(map[string]any{"type": "assistant", "session_id": session, "parent_tool_use_id": nil, "message": map[string]any{
			"role": "assistant", "type": "message", "content": []any{map[string]any{"type": "tool_use", "id": id, "name": "mcp__deskbot__" + s.Call, "input": s.Args}}}})
		text, isErr := "", true
		if cs == nil {
			text = "MCP server unavailable"
		} else if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: s.Call, Arguments: s.Args}); err != nil {
			text = err.Error()
			rec.Errors = append(rec.Errors, text)
		} else {
			text, isErr = res.Content[0].(*mcp.TextContent).Text, res.IsError
		}
		rec.Results = append(rec.Results, text)
		emit(map[string]any{"type": "user", "session_id": session, "parent_tool_use_id": nil, "message": map[string]any{
			"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "is_error": isErr, "content": []any{map[string]any{"type": "text", "text": text}}}}}})
		turns++
	}
	if r.Hang {
		save()
		select {}
	}
	if r.Stderr != "" {
		fmt.Fprintln(os.Stderr, r.Stderr)
	}
	if r.Error != "" {
		emit(map[string]any{"type": "result", "subtype": r.Error, "is_error": true, "num_turns": turns, "session_id": session, "errors": r.Errors,
			"usage": map[string]int{"input_tokens": 100, "output_tokens": 7, "cache_read_input_tokens": 20}})
		return
	}
	emit(map[string]any{"type": "assistant", "session_id": session, "message": map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": r.Text}}}})
	emit(map[string]any{"type": "result", "subtype": "success", "is_error": false, "result": r.Text, "num_turns": turns, "session_id": session,
		"total_cost_usd": 0.0123, "usage": map[string]int{"input_tokens": 10, "output_tokens": 5}})
}

// flags maps each --flag to the value after it ("" for -p and switches).
func flags(args []string) map[string]string {
	f := map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch a {
		case "-p", "--verbose", "--strict-mcp-config", "--bare":
			f[a] = ""
		default:
			if strings.HasPrefix(a, "-") && i+1 < len(args) {
				f[a] = args[i+1]
				i++
			}
		}
	}
	return f
}

type headers struct{ h map[string]string }

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func connect(file, token string) (*mcp.ClientSession, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var cfg struct {
		MCPServers map[string]struct {
			Type, URL string
			Headers   map[string]string
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, err
	}
	srv, ok := cfg.MCPServers["deskbot"]
	if !ok || len(cfg.MCPServers) != 1 || srv.Type != "http" {
		return nil, fmt.Errorf("config is not one deskbot http server: %s", raw)
	}
	switch token {
	case "":
	case "none":
		delete(srv.Headers, "Authorization")
	default:
		srv.Headers["Authorization"] = "Bearer " + token
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "claude-code", Version: "2.0.99"}, nil)
	return c.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: srv.URL, HTTPClient: &http.Client{Transport: headers{srv.Headers}}, MaxRetries: -1, DisableStandaloneSSE: true,
	}, nil)
}

func emit(v any) {
	b, _ := json.Marshal(v)
	fmt.Println(string(b))
}

func readAll(f *os.File) (string, error) {
	var sb strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := f.Read(buf)
		sb.Write(buf[:n])
		if err != nil {
			return sb.String(), nil
		}
	}
}

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", a...)
	os.Exit(1)
}
