package gate_test

import (
	"context"
	"encoding/json"
	"github.com/deskbot/deskbot/gate/gatetest"
	"strings"
	"sync"
	"testing"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/gate"
)

// books is a desk's book as a test sets it.
type books struct {
	mu   sync.Mutex
	book deskbot.Book
}

func (b *books) Book(context.Context, string) (deskbot.Book, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.book, nil
}

func (b *books) set(p ...deskbot.Position) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.book = deskbot.Book{Positions: p}
}

// An allowed call runs only while what the chat showed of its effect still
// holds: for an order, the position it adds to; for a flatten, what it
// closes. The book moving between the message and the allow refuses the
// allow (nothing decided); moving between the allow and the run runs
// nothing, and the desk is told it did not run.
func TestAllowRunsOnlyWhatWasShown(t *testing.T) {
	order := deskbot.ToolCall{ID: "c1", Name: deskbot.ToolPlaceOrder, Arguments: json.RawMessage(`{"symbol":"TCS","side":"buy","quantity":10,"price":4000}`)}
	flatten := deskbot.ToolCall{ID: "c2", Name: deskbot.ToolFlattenDesk, Arguments: json.RawMessage(`{}`)}
	tcs10 := deskbot.Position{Symbol: "TCS", Quantity: 10, AvgPrice: 4000, LastPrice: 4000}
	tcs20 := deskbot.Position{Symbol: "TCS", Quantity: 20, AvgPrice: 4000, LastPrice: 4010}
	infy := deskbot.Position{Symbol: "INFY", Quantity: 5, AvgPrice: 1500, LastPrice: 1500}
	for _, tc := range []struct {
		name          string
		call          deskbot.ToolCall
		shown         []deskbot.Position
		atAllow       []deskbot.Position // the book when the approver taps
		atRun         []deskbot.Position // the book once the allow applied
		wantAllowErr  bool
		wantRan       bool
		wantStateText string
	}{
		{"order, book as shown", order, []deskbot.Position{tcs10}, []deskbot.Position{tcs10}, []deskbot.Position{tcs10}, false, true, ""},
		{"order, only the price moved", order, []deskbot.Position{tcs10}, []deskbot.Position{{Symbol: "TCS", Quantity: 10, AvgPrice: 4000, LastPrice: 4100}}, []deskbot.Position{tcs10}, false, true, ""},
		{"order, position grew before the allow", order, []deskbot.Position{tcs10}, []deskbot.Position{tcs20}, nil, true, false, ""},
		{"flatten, another position before the allow", flatten, []deskbot.Position{tcs10}, []deskbot.Position{tcs10, infy}, nil, true, false, ""},
		{"flatten, another position after the allow", flatten, []deskbot.Position{tcs10}, []deskbot.Position{tcs10}, []deskbot.Position{tcs10, infy}, false, false, "Not run: what this call would do changed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &books{}
			f := mustFixture(t, func(c *gate.Config) {
				c.Tools = []string{deskbot.ToolPlaceOrder, deskbot.ToolFlattenDesk}
				c.Books = b
			})
			ctx := t.Context()
			r, _, err := f.Hold(ctx, "main", "trig", tc.call)
			if err != nil {
				t.Fatal(err)
			}
			// The chat shows the request with the book as it is now.
			b.set(tc.shown...)
			shown := deskbot.ShownState(tc.call, deskbot.Book{Positions: tc.shown})
			if err := f.gate.Shown(ctx, r.ID, shown); err != nil {
				t.Fatal(err)
			}
			b.set(tc.atAllow...)
			resp, err := f.gate.DecideOnly(ctx, r.ID, deskbot.AllowOnce, "", asha)
			if got := err != nil; got != tc.wantAllowErr {
				t.Fatalf("Decide error = %v; want an error %v", err, tc.wantAllowErr)
			}
			if err != nil {
				if got, _ := f.gate.Request(ctx, r.ID); got.State != deskbot.StateOpen {
					t.Errorf("after a refused allow the request is %s; want open", got.State)
				}
				if n := len(f.runner.runs()); n != 0 {
					t.Errorf("%d runs after a refused allow; want none", n)
				}
				return
			}
			b.set(tc.atRun...)
			if _, err := f.gate.RunDecided(ctx, resp); err != nil {
				t.Fatal(err)
			}
			if got := len(f.runner.runs()) == 1; got != tc.wantRan {
				t.Errorf("ran = %v; want %v", got, tc.wantRan)
			}
			after, _ := f.gate.Request(ctx, r.ID)
			if tc.wantStateText != "" && (after.State != deskbot.StateFailed || after.Result == nil || !strings.Contains(after.Result.Text, tc.wantStateText)) {
				t.Errorf("request after the run = %s %+v; want failed with %q", after.State, after.Result, tc.wantStateText)
			}
		})
	}
}

// Another process's gate (the page on a standby) that did not hold the
// request checks the same: it reads what the chat showed from its note.
func TestAllowElsewhereChecksWhatWasShown(t *testing.T) {
	b := &books{}
	f := mustFixture(t, func(c *gate.Config) { c.Books = b })
	ctx := t.Context()
	flatten := deskbot.ToolCall{ID: "c2", Name: deskbot.ToolFlattenDesk, Arguments: json.RawMessage(`{}`)}
	r, _, err := f.Hold(ctx, "main", "trig", flatten)
	if err != nil {
		t.Fatal(err)
	}
	tcs := deskbot.Position{Symbol: "TCS", Quantity: 10, AvgPrice: 4000, LastPrice: 4000}
	if err := f.gate.Shown(ctx, r.ID, deskbot.ShownState(flatten, deskbot.Book{Positions: []deskbot.Position{tcs}})); err != nil {
		t.Fatal(err)
	}
	b.set(tcs, deskbot.Position{Symbol: "INFY", Quantity: 5, AvgPrice: 1500, LastPrice: 1500})
	other := gatetest.MustNew(t, f.cfg, f.store, f.runner, f.clock.Now, quietLog())
	if _, err := other.DecideOnly(ctx, r.ID, deskbot.AllowOnce, "", asha); deskbot.ErrorCode(err) != deskbot.ECONFLICT {
		t.Fatalf("allow elsewhere of a changed flatten = %v; want refused", err)
	}
	b.set(tcs)
	resp, err := other.DecideOnly(ctx, r.ID, deskbot.AllowOnce, "", asha)
	if err != nil {
		t.Fatalf("allow elsewhere of the flatten as shown = %v", err)
	}
	if _, err := other.RunDecided(ctx, resp); err != nil {
		t.Fatal(err)
	}
	if got := len(f.runner.runs()); got != 1 {
		t.Errorf("runs = %d; want 1", got)
	}
}
