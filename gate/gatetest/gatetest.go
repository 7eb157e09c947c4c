// Package gatetest helps tests hold and decide calls the way the service
// does, through the gate's own entries.
package gatetest

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/gate"
	"github.com/deskbot/deskbot/sizing"
)

// MustNew builds a gate as the service does (gate.New, which refuses one
// without hard limits) and starts it (gate.Gate.Start) on a lifetime of
// its own, as the service does: the test's end waits for the calls it
// runs (gate.Gate.Stop).
func MustNew(t testing.TB, cfg gate.Config, st gate.Store, runner deskbot.ToolRunner, now deskbot.Now, log *slog.Logger) *gate.Gate {
	t.Helper()
	g, err := gate.New(cfg, st, runner, now, log)
	if err != nil {
		t.Fatalf("gate.New: %v", err)
	}
	g.Start(context.Background())
	t.Cleanup(g.Stop)
	return g
}

// LimitsStore is what the desks' hard limits keep in the store.
type LimitsStore interface {
	gate.PendingRequests
	deskbot.OrderCounter
	deskbot.Auditor
	DeskStatus(ctx context.Context, desk string) (deskbot.DeskStatus, error)
}

// HardLimits is the desks' hard limits as the service builds them
// (gate.HardLimits), over br and st: policies' limits and rules checked,
// a changed order sized against br's market.
func HardLimits(policies deskbot.Policies, rules map[string]deskbot.RiskRules, br deskbot.Broker, st LimitsStore, now deskbot.Now) *gate.HardLimits {
	return &gate.HardLimits{Policies: policies, Risk: rules, Desks: st, Broker: br,
		Sizer:    &sizing.Sizer{Market: br, Check: br.Check, Orders: br, Now: now},
		Requests: st, Counter: st, Audit: st, Now: now}
}

// Resolve decides request id on g as a person who saw the call whole, as
// it stands, and confirmed the grant's terms g offers now (an always
// allow). An allow that starts the call (the gate runs it on its own
// lifetime) is waited for, so the answer's request is as it ran.
func Resolve(ctx context.Context, g deskbot.Gate, id string, d deskbot.Decision, reason string, by deskbot.Person) (*deskbot.Answer, error) {
	seen := deskbot.Seen{Changes: -1, Whole: true}
	if d == deskbot.AlwaysAllow {
		if _, key, _, err := g.GrantTerms(ctx, id); err == nil {
			seen.Terms = key
		}
	}
	ans, err := g.Decide(ctx, id, seen, d, reason, by)
	if err != nil || ans.Counted || !ans.Decision.Allows() || ans.Request.State != deskbot.StateRunning {
		return ans, err
	}
	ans.Request, err = Ran(ctx, g, id)
	return ans, err
}

// Ran waits until request id is no longer running and returns it (an
// error when the wait ends first: ctx, or deskbottest.DefaultWait).
func Ran(ctx context.Context, g deskbot.Gate, id string) (*deskbot.Request, error) {
	deadline := time.Now().Add(deskbottest.DefaultWait)
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		r, err := g.Request(ctx, id)
		if err != nil || r.State != deskbot.StateRunning {
			return r, err
		}
		if time.Now().After(deadline) {
			return r, deskbot.Errorf(deskbot.EUNAVAILABLE, "request %s still running after %v", id, deskbottest.DefaultWait)
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// Holder holds a desk's call: a *gate.Gate, or a test's fixture that
// reads the call first as the service does where it enters.
type Holder interface {
	Hold(ctx context.Context, desk, triggerID string, call deskbot.ToolCall) (*deskbot.Request, deskbot.ToolResult, error)
}

var _ Holder = (*gate.Gate)(nil)

// MustHold holds desk's call of tool with args (JSON; "" is {}) through
// h, as the desk's turn trigger-1 does, or fails the test; the desk's
// model must be told the request's id.
func MustHold(t testing.TB, h Holder, desk, tool, args string) *deskbot.Request {
	t.Helper()
	if args == "" {
		args = "{}"
	}
	r, res, err := h.Hold(t.Context(), desk, "trigger-1", deskbot.ToolCall{ID: "call_1", Name: tool, Arguments: json.RawMessage(args)})
	if err != nil {
		t.Fatalf("hold %s for %s: %v", tool, desk, err)
	}
	if !strings.Contains(res.Text, r.ID) {
		t.Fatalf("hold message %q does not name request %s", res.Text, r.ID)
	}
	return r
}
