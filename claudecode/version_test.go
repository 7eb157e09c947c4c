package claudecode

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deskbot/deskbot"
)

func TestParseVersion(t *testing.T) {
	for _, tc := range []struct {
		in     string
		want   string
		wantOK bool
	}{
		{"2.1.332 (Claude Code)", "2.1.332", true},
		{"2.1.197 (Claude Code)\n", "2.1.197", true},
		{"  v2.10.0", "2.10.0", true},
		{"2.1.332-beta.1 (Claude Code)", "2.1.332-beta.1", true},
		{"2.1.332+build.7", "2.1.332", true},
		{"", "", false},
		{"Claude Code", "", false},
		{"2.1 (Claude Code)", "", false},
		{"2.1.332x", "", false},
		{"99999999999999999999.1.1", "", false},
		{"error: unknown option '--version'", "", false},
	} {
		v, ok := parseVersion(tc.in)
		if got := v.String(); ok != tc.wantOK || (ok && got != tc.want) {
			t.Errorf("parseVersion(%q) = %s, %v; want %s, %v", tc.in, got, ok, tc.want, tc.wantOK)
		}
	}
}

func TestVersionAtLeast(t *testing.T) {
	for _, tc := range []struct {
		v, min string
		want   bool
	}{
		{"2.1.332", "2.1.332", true},
		{"2.1.333", "2.1.332", true},
		{"2.2.0", "2.1.332", true},
		{"3.0.0", "2.1.332", true},
		{"2.1.331", "2.1.332", false},
		{"2.1.257", "2.1.332", false},
		{"2.1.197", "2.1.332", false},
		{"2.0.999", "2.1.332", false},
		{"1.9.999", "2.1.332", false},
		{"2.1.332-beta.1", "2.1.332", false},
		{"2.1.333-beta.1", "2.1.332", true},
		{"2.1.332", "2.1.332-beta.1", true},
	} {
		v, ok1 := parseVersion(tc.v)
		min, ok2 := parseVersion(tc.min)
		if !ok1 || !ok2 {
			t.Fatalf("unparsable %q or %q", tc.v, tc.min)
		}
		if got := v.atLeast(min); got != tc.want {
			t.Errorf("%s at least %s = %v, want %v", tc.v, tc.min, got, tc.want)
		}
	}
}

// The floor itself parses, or every CLI would be refused.
func TestMinVersionParses(t *testing.T) {
	if _, ok := parseVersion(MinVersion); !ok {
		t.Fatalf("MinVersion %q does not parse", MinVersion)
	}
	if !strings.Contains(Install, "@anthropic-ai/claude-code@"+MinVersion) {
		t.Errorf("Install %q does not pin %s", Install, MinVersion)
	}
}

// CheckVersion runs the CLI's --version: it passes the floor and newer,
// and refuses an older CLI, one that prints no version and one that
// cannot run, each time naming what it found and the pinned install.
func TestCheckVersion(t *testing.T) {
	dir := t.TempDir()
	cli := func(name, script string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+script+"\n"), 0o700); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name    string
		bin     string
		wantErr []string // "" when it passes
	}{
		{"the floor", cli("floor", "echo '"+MinVersion+" (Claude Code)'"), nil},
		{"newer", cli("newer", "echo '9.0.0 (Claude Code)'"), nil},
		{"too old for the flags", cli("old", "echo '2.1.197 (Claude Code)'"),
			[]string{"is Claude Code 2.1.197, older than " + MinVersion, Install, Node}},
		{"loses the first prompt", cli("lost", "echo '2.1.257 (Claude Code)'"),
			[]string{"is Claude Code 2.1.257, older than " + MinVersion, Install}},
		{"no version", cli("noversion", "echo 'hello'"), []string{`printed "hello", not a version`, Install}},
		{"fails", cli("fails", "echo 'cannot start' >&2; exit 3"), []string{"cannot run Claude Code", "cannot start", Install}},
		{"missing", filepath.Join(dir, "nope"), []string{"cannot run Claude Code", "nope", Install, Node}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := CheckVersion(t.Context(), tc.bin)
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("CheckVersion: %v", err)
				}
				return
			}
			if deskbot.ErrorCode(err) != deskbot.EINVALID {
				t.Fatalf("CheckVersion: %v; want EINVALID", err)
			}
			for _, want := range tc.wantErr {
				if got := deskbot.ErrorMessage(err); !strings.Contains(got, want) {
					t.Errorf("error %q lacks %q", got, want)
				}
			}
		})
	}
}

// The lines of the CLI's stream deskbot judges a run by: an error
// result's reasons, and the init line's link to the desk's tools.
func TestStreamLines(t *testing.T) {
	desk := []string{ToolName("get_quote"), ToolName("place_order")}
	for _, tc := range []struct {
		name     string
		line     string
		tools    []string
		wantWhy  string
		wantLink string
	}{
		{"max turns", `{"type":"result","subtype":"error_max_turns","is_error":true,"result":"","errors":["Reached maximum number of turns (1)"]}`,
			nil, "Reached maximum number of turns (1)", "deskbot's MCP server is not among the CLI's"},
		{"api error in result", `{"type":"result","subtype":"success","is_error":true,"result":"API Error: 529 overloaded"}`,
			nil, "API Error: 529 overloaded", "deskbot's MCP server is not among the CLI's"},
		{"errors over result", `{"type":"result","subtype":"error_during_execution","result":"x","errors":["a","b"]}`,
			nil, "a; b", "deskbot's MCP server is not among the CLI's"},
		{"connected", `{"type":"system","subtype":"init","tools":["mcp__deskbot__get_quote","mcp__deskbot__place_order"],"mcp_servers":[{"name":"deskbot","status":"connected"}]}`,
			desk, "", ""},
		{"connected, some tools", `{"type":"system","subtype":"init","tools":["mcp__deskbot__get_quote"],"mcp_servers":[{"name":"deskbot","status":"connected"}]}`,
			desk, "", ""},
		{"failed", `{"type":"system","subtype":"init","tools":[],"mcp_servers":[{"name":"deskbot","status":"failed"}]}`,
			desk, "", "deskbot's MCP server has status failed"},
		{"needs auth", `{"type":"system","subtype":"init","tools":[],"mcp_servers":[{"name":"deskbot","status":"needs-auth"}]}`,
			desk, "", "deskbot's MCP server has status needs-auth"},
		{"no status", `{"type":"system","subtype":"init","tools":["mcp__deskbot__get_quote"],"mcp_servers":[{"name":"deskbot"}]}`,
			desk, "", "deskbot's MCP server has no status"},
		{"other server only", `{"type":"system","subtype":"init","tools":["mcp__evil__get_quote"],"mcp_servers":[{"name":"evil","status":"connected"}]}`,
			desk, "", "deskbot's MCP server is not among the CLI's"},
		{"no servers", `{"type":"system","subtype":"init","tools":[]}`, desk, "", "deskbot's MCP server is not among the CLI's"},
		{"none of the tools", `{"type":"system","subtype":"init","tools":["Bash","mcp__deskbot__other"],"mcp_servers":[{"name":"deskbot","status":"connected"}]}`,
			desk, "", "none of the desk's tools is offered"},
		{"a turn without tools", `{"type":"system","subtype":"init","tools":[],"mcp_servers":[{"name":"deskbot","status":"connected"}]}`,
			nil, "", ""},
		{"a turn without tools, server failed", `{"type":"system","subtype":"init","tools":[],"mcp_servers":[{"name":"deskbot","status":"failed"}]}`,
			nil, "", "deskbot's MCP server has status failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ev event
			if err := json.Unmarshal([]byte(tc.line), &ev); err != nil {
				t.Fatal(err)
			}
			if got, want := ev.why(), tc.wantWhy; got != want {
				t.Errorf("why = %q, want %q", got, want)
			}
			if got, want := linkProblem(&ev, tc.tools), tc.wantLink; got != want {
				t.Errorf("linkProblem = %q, want %q", got, want)
			}
		})
	}
}
