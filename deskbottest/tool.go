package deskbottest

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"

	"github.com/deskbot/deskbot"
)

// Tool is the one fake tool of the tests: a deskbot.Tool named as a test
// needs, with the description and schema it is given (defaults: "A fake
// tool." and any object), that counts its runs and answers with Answer
// (default: Result, else "<name> ran with <arguments>"). A test that must
// catch a run half-way gets word of each start on Started and holds the
// runs until Release is closed. Safe for concurrent use; the fields are
// set before the tool is handed out.
type Tool struct {
	ToolName  string
	About     string
	ArgSchema json.RawMessage
	// Check, when set, is the tool's own check of its arguments (nil: any
	// arguments pass).
	Check func(args json.RawMessage) error
	// Answer, when set, answers run n (from 1).
	Answer func(ctx context.Context, n int, desk string, args json.RawMessage) (deskbot.ToolResult, error)
	// Result is the answer when Answer is nil and Result has text.
	Result deskbot.ToolResult
	// Started, when set, is told of each run as it starts (without
	// waiting: a full channel misses the word, not the run).
	Started chan struct{}
	// Release, when set, is waited for by each run before it answers.
	Release chan struct{}

	mu   sync.Mutex
	runs int
}

var _ deskbot.Tool = (*Tool)(nil)

// QuoteTool is a side-effect-free get_quote that counts its runs in its
// answers ("quote #n for <arguments>: 1500.00"), so a test sees that a call
// was not repeated.
func QuoteTool() *Tool {
	return &Tool{
		ToolName: deskbot.ToolGetQuote, About: "Quote a symbol.",
		ArgSchema: json.RawMessage(`{"type":"object","properties":{"symbol":{"type":"string"}}}`),
		Answer: func(_ context.Context, n int, _ string, args json.RawMessage) (deskbot.ToolResult, error) {
			return deskbot.ToolResult{Text: "quote #" + strconv.Itoa(n) + " for " + string(args) + ": 1500.00"}, nil
		},
	}
}

func (t *Tool) Name() string { return t.ToolName }

func (t *Tool) Description() string {
	if t.About == "" {
		return "A fake tool."
	}
	return t.About
}

func (t *Tool) Schema() json.RawMessage {
	if t.ArgSchema == nil {
		return json.RawMessage(`{"type":"object"}`)
	}
	return t.ArgSchema
}

func (t *Tool) CheckArguments(args json.RawMessage) error {
	if t.Check == nil {
		return nil
	}
	return t.Check(args)
}

func (t *Tool) Run(ctx context.Context, desk string, args json.RawMessage) (deskbot.ToolResult, error) {
	t.mu.Lock()
	t.runs++
	n := t.runs
	t.mu.Unlock()
	if t.Started != nil {
		select {
		case t.Started <- struct{}{}:
		default:
		}
	}
	if t.Release != nil {
		<-t.Release
	}
	switch {
	case t.Answer != nil:
		return t.Answer(ctx, n, desk, args)
	case t.Result.Text != "":
		return t.Result, nil
	}
	return deskbot.ToolResult{Text: t.ToolName + " ran with " + string(args)}, nil
}

// Runs is how many times the tool ran.
func (t *Tool) Runs() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.runs
}
