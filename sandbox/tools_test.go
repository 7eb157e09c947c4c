package sandbox_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/sandbox"
)

func TestToolsDescribeThemselves(t *testing.T) {
	m := mustManager(t, testConfig(t, sandbox.ModeNone))
	tools := m.Tools("main")
	wantArgs := map[string]string{"bash": "command", "bash_background": "command", "check_background": "job_id"}
	if len(tools) != len(wantArgs) {
		t.Fatalf("%d tools, want %d", len(tools), len(wantArgs))
	}
	for _, tl := range tools {
		var schema struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		}
		if err := json.Unmarshal(tl.Schema(), &schema); err != nil {
			t.Fatalf("%s schema: %v", tl.Name(), err)
		}
		arg := wantArgs[tl.Name()]
		if schema.Type != "object" || schema.Properties[arg] == nil || len(schema.Required) != 1 || schema.Required[0] != arg {
			t.Errorf("%s schema %s, want an object requiring %q", tl.Name(), tl.Schema(), arg)
		}
	}
	desc := tools[0].Description()
	for _, want := range []string{"persistent", "carry over", "/dev/null", "bash_background", "20000 characters", "Asia/Kolkata", "exit status"} {
		if !strings.Contains(desc, want) {
			t.Errorf("bash description lacks %q", want)
		}
	}
}

func runTool(t *testing.T, tl deskbot.Tool, args string) deskbot.ToolResult {
	t.Helper()
	r, err := tl.Run(t.Context(), "main", json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s(%s): %v", tl.Name(), args, err)
	}
	return r
}

func TestToolsRun(t *testing.T) {
	m := mustManager(t, testConfig(t, sandbox.ModeNone))
	tools := map[string]deskbot.Tool{}
	for _, tl := range m.Tools("main") {
		tools[tl.Name()] = tl
	}
	bash, bg, check := tools["bash"], tools["bash_background"], tools["check_background"]

	if r := runTool(t, bash, `{"command": "echo hi; exit 2"}`); r.IsError || !strings.HasPrefix(r.Text, "hi\nexit status 2\n") {
		t.Errorf("bash: got %q, want the output and exit status 2", r.Text)
	}
	r := runTool(t, bg, `{"command": "echo from-job"}`)
	_, rest, _ := strings.Cut(r.Text, "Started background job ")
	id, _, _ := strings.Cut(rest, ".")
	if r.IsError || len(id) != 8 {
		t.Fatalf("bash_background: got %q", r.Text)
	}
	deskbottest.Eventually(t, "the job finishes", func() bool {
		r := runTool(t, check, `{"job_id": "`+id+`"}`)
		return !r.IsError && strings.Contains(r.Text, "exit status 0") && strings.Contains(r.Text, "from-job")
	})

	for _, tt := range []struct {
		tool deskbot.Tool
		args string
	}{
		{bash, `not json`}, {bash, `{}`}, {bash, `{"command": 5}`}, {bash, `{"command": ""}`}, {bash, `null`},
		{bg, `{"cmd": "ls"}`}, {bg, `{"command": " "}`},
		{check, `{"job_id": "nope"}`}, {check, `[]`},
	} {
		if r := runTool(t, tt.tool, tt.args); !r.IsError {
			t.Errorf("%s(%s): got %q, want an error result", tt.tool.Name(), tt.args, r.Text)
		}
	}
	if _, err := bash.Run(t.Context(), "other", json.RawMessage(`{"command": "pwd"}`)); err == nil {
		t.Error("a tool bound to desk main ran for desk other")
	}
}
