package gate_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/deskbot/deskbot/gate/gatetest"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/argtext"
	"github.com/deskbot/deskbot/gate"
	"github.com/deskbot/deskbot/words"
)

// A hostile desk pads a guarded call until the approver could only be shown
// part of it, or with whitespace the approver is never shown (the canonical
// form drops it) until the request is too large for the store's script to
// save: the gate refuses to hold it with words for the model, whoever calls
// Hold, rather than failing as if Redis were down, and no request, audit
// entry or event exists.
func TestHoldRefusesArgumentsItCannotShowOrKeep(t *testing.T) {
	f := mustFixture(t)
	fits := strings.Repeat("a", argtext.MaxArguments-len(`{"note":""}`))
	padded := func(n int) string { return `{"note":"x"` + strings.Repeat(" ", n) + `}` }
	tooLong := func(args string) string {
		return words.TooLongToShowMessage("place_order", utf8.RuneCountInString(argtext.Arguments(json.RawMessage(args))))
	}
	tooLarge := func(args string) string { return words.TooLargeToKeepMessage("place_order", len(args)) }
	tests := []struct {
		name string
		args string
		want func(args string) string // the refusal's words; nil: held
	}{
		{"fits exactly", `{"note":"` + fits + `"}`, nil},
		{"one character over", `{"note":"` + fits + `a"}`, tooLong},
		{"short raw, long shown (zero-width spaces escape to 6 characters)", `{"note":"` + strings.Repeat("\u200b", 600) + `"}`, tooLong},
		{"spaces the canonical form drops do not count", `{"note":"` + fits + `"}` + strings.Repeat(" ", 5000), nil},
		{"padded up to what a request keeps", padded(argtext.MaxRawArguments - len(padded(0))), nil},
		{"padded one byte over what a request keeps", padded(argtext.MaxRawArguments - len(padded(0)) + 1), tooLarge},
		{"padded past what the store's script can take", padded(300 << 10), tooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, err := f.store.OpenRequests(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			call := deskbot.ToolCall{ID: "c1", Name: "place_order", Arguments: json.RawMessage(tt.args)}
			r, res, err := f.Hold(t.Context(), "main", "trigger-1", call)
			if tt.want == nil {
				if err != nil || r == nil {
					t.Fatalf("hold of %d bytes: %v", len(tt.args), err)
				}
				return
			}
			if r != nil || res.Text != "" || deskbot.ErrorCode(err) != deskbot.EINVALID {
				t.Fatalf("hold = request %v, %q, %v; want EINVALID and nothing held", r != nil, res.Text, err)
			}
			if got, want := deskbot.ErrorMessage(err), tt.want(tt.args); got != want {
				t.Errorf("message\n got %q\nwant %q", got, want)
			}
			after, err := f.store.OpenRequests(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if len(after) != len(before) {
				t.Errorf("open requests %d -> %d: a request was created", len(before), len(after))
			}
		})
	}
}

// A deny reason is trimmed by the gate itself, whoever typed it: what is
// stored, audited and told to the desk carries no padding, and a reason of
// spaces only is no reason.
func TestReasonTrimmedByGate(t *testing.T) {
	f := mustFixture(t)
	r := gatetest.MustHold(t, f, "main", "flatten_desk", `{}`)
	resp, err := gatetest.Resolve(t.Context(), f.gate, r.ID, deskbot.Deny, "  padded \n", asha)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := resp.Request.Reason, "padded"; got != want {
		t.Errorf("stored reason %q, want %q", got, want)
	}
	inbox := f.mustInbox(t, "main")
	if len(inbox) != 1 || !strings.Contains(inbox[0].Text, "Their reason: padded Do not") {
		t.Errorf("desk told %+v, want the trimmed reason", inbox)
	}

	f = mustFixture(t, func(c *gate.Config) { c.DenyReasonWait = time.Minute })
	for _, tt := range []struct{ typed, want string }{{"\t too risky  ", "too risky"}, {"   ", ""}} {
		r := gatetest.MustHold(t, f, "main", "flatten_desk", `{}`)
		if _, err := gatetest.Resolve(t.Context(), f.gate, r.ID, deskbot.Deny, "", asha); err != nil {
			t.Fatal(err)
		}
		after, err := f.gate.AddReason(t.Context(), r.ID, tt.typed, asha)
		if err != nil {
			t.Fatal(err)
		}
		if after.Reason != tt.want {
			t.Errorf("AddReason(%q) stored %q, want %q", tt.typed, after.Reason, tt.want)
		}
		inbox := f.mustInbox(t, "main")
		if len(inbox) != 1 || strings.Contains(inbox[0].Text, "Their reason") != (tt.want != "") {
			t.Errorf("AddReason(%q): desk told %+v", tt.typed, inbox)
		}
	}
}

// An allowed call that produced no result did not run, and the desk must
// never read that it ran: it is told in the words of a denial.
func TestAllowedWithoutResultIsToldNotRun(t *testing.T) {
	r := &deskbot.Request{ID: "R1", Content: deskbot.PermissionContent{ToolName: "flatten_desk"}}
	want := "The user denied flatten_desk (request R1), so it was not run. Do not try to reach the same result another way; ask them if it still matters."
	for _, d := range []deskbot.Decision{deskbot.AllowOnce, deskbot.AlwaysAllow} {
		got := gate.ResponseMessage(deskbot.PermissionResponse{Request: r, Decision: d, Reason: "fine for today"}, nil)
		if got != want {
			t.Errorf("%s without a result:\n got %q\nwant %q", d, got, want)
		}
	}
}

// recordFails is a store whose every transition fails as if Redis were
// down; the first failure cancels the caller's context (a stop).
type recordFails struct {
	gate.Store
	tries  atomic.Int32
	cancel context.CancelFunc
}

// Note finds nothing: no message showed the request.
func (s *recordFails) Note(context.Context, string) (string, error) {
	return "", deskbot.Errorf(deskbot.ENOTFOUND, "no note")
}

func (s *recordFails) Transition(ctx context.Context, id string, t deskbot.Transition) (*deskbot.Request, deskbot.Outcome, error) {
	s.tries.Add(1)
	s.cancel()
	return nil, 0, deskbot.Errorf(deskbot.EUNAVAILABLE, "Redis is unavailable")
}

// When the record of a run cannot be written, Run retries with a backoff,
// but a stop (the context ending) ends the waiting at once instead of
// holding the service up for the remaining tries.
func TestRunRetryEndsWithContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		st := &recordFails{cancel: cancel}
		g := gatetest.MustNew(t, gate.Config{Tools: []string{"flatten_desk"}, Limits: &market{}}, st, &runner{}, time.Now, quietLog())
		r := &deskbot.Request{ID: "R1", Desk: "main", State: deskbot.StateRunning, Decision: deskbot.AllowOnce,
			Content: deskbot.PermissionContent{ToolName: "flatten_desk", Arguments: json.RawMessage(`{}`)}}
		start := time.Now()
		_, err := g.RunDecided(ctx, &deskbot.PermissionResponse{Request: r, Decision: deskbot.AllowOnce})
		if deskbot.ErrorCode(err) != deskbot.EUNAVAILABLE && !errors.Is(err, context.Canceled) {
			t.Errorf("Run = %v, want the store's failure", err)
		}
		if got := st.tries.Load(); got != 1 {
			t.Errorf("tries after the context ended = %d, want 1", got)
		}
		if waited := time.Since(start); waited != 0 {
			t.Errorf("Run waited %v after the context ended", waited)
		}
	})
}

// A gate built without a logger discards its lines: the package-level
// logger ignores LOG_FORMAT, LOG_LEVEL and the secret scrubber.
func TestNilLoggerDiscards(t *testing.T) {
	var buf strings.Builder
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	t.Cleanup(func() { slog.SetDefault(old) })
	f := mustFixture(t)
	g, err := gate.New(f.cfg, f.store, f.runner, f.clock.Now, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := g.Hold(t.Context(), "main", "trigger-1", deskbot.ToolCall{ID: "c1", Name: "flatten_desk", Arguments: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if buf.Len() != 0 {
		t.Errorf("the package-level logger got %q", buf.String())
	}
}

// A configuration that forgot the desks' hard limits builds no gate: a
// gate without them would run every desk's order unlimited.
func TestNewRefusesAGateWithoutLimits(t *testing.T) {
	f := mustFixture(t)
	var none *gate.HardLimits
	for _, tt := range []struct {
		name   string
		limits gate.Limits
	}{
		{"no limits", nil},
		{"a nil HardLimits", none},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := f.cfg
			cfg.Limits = tt.limits
			g, err := gate.New(cfg, f.store, f.runner, f.clock.Now, quietLog())
			if deskbot.ErrorCode(err) != deskbot.EINVALID || !strings.Contains(deskbot.ErrorMessage(err), "no hard limits") {
				t.Errorf("New = %v, want EINVALID saying the gate has no hard limits", err)
			}
			if g != nil {
				t.Errorf("New built a gate without limits")
			}
		})
	}
}

// A gate not started yet decides nothing: an allowed call runs only on
// the lifetime the gate was started with, never in the tapper's
// goroutine, so a tap before the start changes nothing and says so (a
// standby's, as a standby's tap always does: another instance is in
// charge).
func TestDecideBeforeStartDecidesNothing(t *testing.T) {
	for _, tt := range []struct {
		name string
		lead bool // the gate's process holds the lease
		want string
	}{
		{"leader", true, "still starting"},
		{"standby", false, "not the one in charge"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var tm term
			f := mustFixture(t, func(c *gate.Config) { c.Leader = &tm })
			if tt.lead {
				f.mustLead(t, &tm)
			}
			g, err := gate.New(f.cfg, f.store, f.runner, f.clock.Now, quietLog())
			if err != nil {
				t.Fatal(err)
			}
			r := gatetest.MustHold(t, g, "main", "flatten_desk", "")
			if _, err := gatetest.Resolve(t.Context(), g, r.ID, deskbot.AllowOnce, "", asha); deskbot.ErrorCode(err) != deskbot.EUNAVAILABLE || !strings.Contains(deskbot.ErrorMessage(err), tt.want) {
				t.Errorf("allow before start = %v, want EUNAVAILABLE saying %q", err, tt.want)
			}
			if _, err := g.Change(t.Context(), r.ID, "quantity 1", 0, asha); deskbot.ErrorCode(err) != deskbot.EUNAVAILABLE || !strings.Contains(deskbot.ErrorMessage(err), tt.want) {
				t.Errorf("change before start = %v, want EUNAVAILABLE saying %q", err, tt.want)
			}
			got, err := f.store.Request(t.Context(), r.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.State != deskbot.StateOpen || len(f.runner.runs()) != 0 {
				t.Errorf("after a tap before start: state %s, %d runs; want open, none", got.State, len(f.runner.runs()))
			}
		})
	}
}
