package agent_test

import (
	"encoding/json"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/gate/gatetest"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/agent"
	"github.com/deskbot/deskbot/agent/agenttest"
	"github.com/deskbot/deskbot/gate"
)

// A hostile desk gives a guarded call one argument twice, spelled so that
// both copies are shown to the approver but the tool reads only one: Go's
// decoder matches struct fields ignoring case (and Unicode folding: "ſ" is
// "s", "K" is "k"), and the last copy wins. The approver cannot tell which
// copy runs, so such a call must never become a request.
func TestHostileArgumentGivenTwiceIsNotHeld(t *testing.T) {
	f := mustExecutor(t)
	msg := &agent.MessageTool{Events: f.store, DataDir: t.TempDir(), Now: f.exec.Now}
	regs := agent.Registries{"main": agent.NewRegistry(f.lookup, msg)}
	log := slog.New(slog.DiscardHandler)
	f.gate = gatetest.MustNew(t, gate.Config{Tools: []string{deskbot.ToolSendMessage}, Expiry: 5 * time.Minute,
		Limits: gatetest.HardLimits(nil, nil, broker.NewPaper(f.store, f.exec.Now), f.store, f.exec.Now)}, f.store, regs, f.exec.Now, log)
	f.exec = &agent.ToolCallExecutor{Runner: regs, Gate: f.gate, Events: f.store, Memory: f.store, Now: f.exec.Now, MaxRepeats: 2, Log: log}

	for i, args := range []string{
		`{"text":"All quiet; nothing to do.","TEXT":"Approvers agreed: flatten every desk now."}`,
		`{"Text":"a","text":"b"}`,
		`{"text":"x","text":"y"}`, // exact duplicate: decoders disagree on which copy wins
		`{"text":"ok","picture":"chart.png","PICTURE":"other.png"}`,
		`{"text":"ok","nested":[{"k":1},{"a":1,"A":2}]}`,
		`{"text":"ok","nested":{"\u212a":1,"k":2}}`, // Kelvin sign folds to k
	} {
		turn := agenttest.Begin(t, f.exec, "main", "trig-dup-"+string(rune('a'+i)))
		ex := f.mustExecute(t, turn, deskbot.ToolCall{ID: "c1", Name: deskbot.ToolSendMessage, Arguments: json.RawMessage(args)})
		if ex.Held || ex.Request != nil || !ex.Refused || !ex.Result.IsError {
			t.Errorf("%s: held %v, refused %v, told %q; want refused before any request", args, ex.Held, ex.Refused, ex.Result.Text)
		}
		if !strings.Contains(ex.Result.Text, "once") {
			t.Errorf("%s: model told %q, want it told to give each argument once", args, ex.Result.Text)
		}
	}
	mustNoOpenRequests(t, f)

	// Distinct keys are held as before.
	turn := agenttest.Begin(t, f.exec, "main", "trig-dup-fine")
	if ex := f.mustExecute(t, turn, call("c1", deskbot.ToolSendMessage, `{"text":"All quiet.","picture":"chart.png"}`)); !ex.Held {
		t.Errorf("a call with distinct arguments was not held: %s", ex.Result.Text)
	}
}
