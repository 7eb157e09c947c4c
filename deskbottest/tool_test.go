package deskbottest_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/deskbottest"
)

// The fake tool answers as told, counts its runs, checks its arguments
// only when given a check, and holds a run until released.
func TestToolAnswersCountsAndHolds(t *testing.T) {
	ctx := t.Context()
	args := json.RawMessage(`{"symbol":"INFY"}`)
	for _, tc := range []struct {
		name string
		tool *deskbottest.Tool
		want []string
	}{
		{"echo", &deskbottest.Tool{ToolName: "bash"}, []string{`bash ran with {"symbol":"INFY"}`, `bash ran with {"symbol":"INFY"}`}},
		{"result", &deskbottest.Tool{ToolName: "flatten_desk", Result: deskbot.ToolResult{Text: "flat"}}, []string{"flat", "flat"}},
		{"quote", deskbottest.QuoteTool(), []string{`quote #1 for {"symbol":"INFY"}: 1500.00`, `quote #2 for {"symbol":"INFY"}: 1500.00`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for range tc.want {
				res, err := tc.tool.Run(ctx, "alpha", args)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, res.Text)
			}
			if len(got) != len(tc.want) || got[0] != tc.want[0] || got[1] != tc.want[1] {
				t.Errorf("answers = %q; want %q", got, tc.want)
			}
			if n := tc.tool.Runs(); n != 2 {
				t.Errorf("Runs = %d; want 2", n)
			}
			if err := tc.tool.CheckArguments(args); err != nil {
				t.Errorf("CheckArguments without a check = %v; want nil", err)
			}
		})
	}

	refused := errors.New("no")
	checked := &deskbottest.Tool{ToolName: "place_order", Check: func(json.RawMessage) error { return refused }}
	if err := checked.CheckArguments(args); err != refused {
		t.Errorf("CheckArguments = %v; want the check's error", err)
	}
	if got, want := checked.Description(), "A fake tool."; got != want {
		t.Errorf("Description = %q; want %q", got, want)
	}

	held := &deskbottest.Tool{ToolName: "run_job", Started: make(chan struct{}, 1), Release: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		held.Run(context.Background(), "alpha", args)
		close(done)
	}()
	<-held.Started
	select {
	case <-done:
		t.Fatal("the run answered before its release")
	default:
	}
	close(held.Release)
	<-done
}
