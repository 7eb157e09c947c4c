package gate_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot/agent/agenttest"
	"github.com/deskbot/deskbot/gate/gatetest"

	"github.com/alicebob/miniredis/v2"
	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/agent"
	"github.com/deskbot/deskbot/gate"
	"github.com/deskbot/deskbot/store"
)

func TestSweepLapsesOnlyWhatIsDue(t *testing.T) {
	f := mustFixture(t)
	early := gatetest.MustHold(t, f, "main", "flatten_desk", `{}`) // lapses 14:05 IST
	f.clock.Add(3 * time.Minute)
	late := gatetest.MustHold(t, f, "main", "place_order", `{"symbol":"TCS"}`) // lapses 14:08 IST

	f.clock.Add(2 * time.Minute) // 14:05: early is due, late is not
	rep, err := f.gate.Sweep(t.Context())
	if err != nil || rep.Lapsed != 1 {
		t.Fatalf("sweep = %+v, %v; want 1 lapsed", rep, err)
	}
	for _, c := range []struct {
		r    *deskbot.Request
		want deskbot.RequestState
	}{{early, deskbot.StateLapsed}, {late, deskbot.StateOpen}} {
		got, err := f.gate.Request(t.Context(), c.r.ID)
		if err != nil || got.State != c.want {
			t.Errorf("request %s: state %v (%v), want %s", c.r.Content.ToolName, got, err, c.want)
		}
	}
	want := "Request " + early.ID + " for flatten_desk lapsed at 14:05 India time without an answer, so it was not run. Ask the user again only if it still matters."
	if inbox := f.mustInbox(t, "main"); len(inbox) != 1 || inbox[0].Text != want || inbox[0].Kind != deskbot.TriggerLapse {
		t.Fatalf("inbox = %+v, want %q", inbox, want)
	}

	// A decision after the lapse is refused with the time it lapsed.
	_, err = gatetest.Resolve(t.Context(), f.gate, early.ID, deskbot.AllowOnce, "", asha)
	if got, want := deskbot.ErrorMessage(err), "This request lapsed at 14:05 IST."; got != want {
		t.Errorf("late decision: %q, want %q", got, want)
	}
	// A second sweep finds nothing new.
	if rep, _ := f.gate.Sweep(t.Context()); rep.Lapsed != 0 {
		t.Errorf("second sweep lapsed %d", rep.Lapsed)
	}
	if got := f.runner.runs(); len(got) != 0 {
		t.Fatalf("lapsed call ran: %v", got)
	}
}

func TestDecisionAfterExpiryBeforeSweepIsRefused(t *testing.T) {
	f := mustFixture(t)
	r := gatetest.MustHold(t, f, "main", "flatten_desk", `{}`)
	f.clock.Add(5 * time.Minute) // due, not yet swept
	_, err := gatetest.Resolve(t.Context(), f.gate, r.ID, deskbot.AllowOnce, "", asha)
	if got, want := deskbot.ErrorMessage(err), "This request lapsed at 14:05 IST."; got != want {
		t.Fatalf("decision at expiry: %q, want %q", got, want)
	}
	if got := f.runner.runs(); len(got) != 0 {
		t.Fatalf("ran after expiry: %v", got)
	}
	// The refused decision lapsed it, so the desk hears now, once.
	if inbox := f.mustInbox(t, "main"); len(inbox) != 1 || inbox[0].Kind != deskbot.TriggerLapse {
		t.Fatalf("inbox = %+v, want one lapse", inbox)
	}
	if rep, _ := f.gate.Sweep(t.Context()); rep.Lapsed != 0 {
		t.Errorf("sweep lapsed it again")
	}
}

func TestRecoverReportsInterruptedAndNeverReruns(t *testing.T) {
	f := mustFixture(t)
	r := gatetest.MustHold(t, f, "main", "flatten_desk", `{}`)
	// Decide wins, then the process "dies" before Run.
	if _, err := f.gate.DecideOnly(t.Context(), r.ID, deskbot.AllowOnce, "", asha); err != nil {
		t.Fatal(err)
	}
	restarted := gatetest.MustNew(t, f.cfg, f.store, f.runner, f.clock.Now, quietLog())
	n, err := restarted.Recover(t.Context())
	if err != nil || n != 1 {
		t.Fatalf("recover = %d, %v; want 1", n, err)
	}
	got, _ := restarted.Request(t.Context(), r.ID)
	if got.State != deskbot.StateInterrupted {
		t.Fatalf("state = %s, want interrupted", got.State)
	}
	if _, err := gatetest.Resolve(t.Context(), restarted, r.ID, deskbot.AllowOnce, "", ravi); deskbot.ErrorCode(err) != deskbot.ECONFLICT {
		t.Errorf("resolve after interruption: %v, want conflict", err)
	}
	if runs := f.runner.runs(); len(runs) != 0 {
		t.Fatalf("interrupted call ran: %v", runs)
	}
	inbox := f.mustInbox(t, "main")
	if len(inbox) != 1 || !strings.Contains(inbox[0].Text, "outcome is unknown") {
		t.Fatalf("inbox = %+v", inbox)
	}
	if n, _ := restarted.Recover(t.Context()); n != 0 {
		t.Errorf("second recover found %d", n)
	}
}

func TestAuditTrailRecordsEveryStep(t *testing.T) {
	f := mustFixture(t)
	a := gatetest.MustHold(t, f, "main", "flatten_desk", `{}`)
	b := gatetest.MustHold(t, f, "main", "place_order", `{}`)
	c := gatetest.MustHold(t, f, "fno", "flatten_desk", `{}`)
	gatetest.Resolve(t.Context(), f.gate, a.ID, deskbot.AlwaysAllow, "", asha)
	gatetest.Resolve(t.Context(), f.gate, b.ID, deskbot.Deny, "no", ravi)
	f.gate.Revoke(t.Context(), "main", "flatten_desk", ravi)
	f.clock.Add(10 * time.Minute)
	f.gate.Sweep(t.Context())

	trail, err := f.store.AuditTrail(t.Context(), 100)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range trail {
		if e.At.IsZero() || e.By == "" {
			t.Errorf("audit entry without who or when: %+v", e)
		}
		got = append(got, e.Action+" "+e.RequestID+" "+e.By)
	}
	want := []string{
		"hold " + a.ID + " desk main",
		"hold " + b.ID + " desk main",
		"hold " + c.ID + " desk fno",
		"always_allow " + a.ID + " Asha (101)",
		"ran " + a.ID + " system",
		"deny " + b.ID + " Ravi (102)",
		"revoke  Ravi (102)",
		"lapse " + c.ID + " system",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("audit trail:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestRedisDownAtHoldMeansNotRun(t *testing.T) {
	mr := miniredis.RunT(t)
	s, err := store.Open(t.Context(), store.Options{URL: "redis://" + mr.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	run := &runner{}
	clk := newClock()
	g := gatetest.MustNew(t, gate.Config{Tools: []string{"flatten_desk"}, Expiry: time.Minute, Limits: &market{}}, s, run, clk.Now, quietLog())
	ex := &agent.ToolCallExecutor{Runner: run, Gate: g, Events: s, Memory: s, Now: clk.Now, Log: quietLog()}
	turn := agenttest.Begin(t, ex, "main", "t1")
	mr.Close() // Redis goes away between the turn's start and the call

	got, err := ex.Execute(t.Context(), turn, deskbot.ToolCall{ID: "c1", Name: "flatten_desk", Arguments: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatalf("execute: %v", err)
	}
	if !got.Result.IsError || got.Held || !strings.Contains(got.Result.Text, "could not be recorded") || !strings.Contains(got.Result.Text, "so it was not run") {
		t.Fatalf("result = %+v, want a tool error saying the request could not be recorded", got)
	}
	if runs := run.runs(); len(runs) != 0 {
		t.Fatalf("call ran with Redis down: %v", runs)
	}
}

func TestSweeperRunsInIndiaTime(t *testing.T) {
	f := mustFixture(t)
	tests := []struct {
		spec string
		from time.Time
		want time.Time
	}{
		{"@every 1m", time.Date(2026, 11, 30, 8, 30, 0, 0, time.UTC), time.Date(2026, 11, 30, 8, 31, 0, 0, time.UTC)},
		// 09:15 IST is 03:45 UTC.
		{"15 9 * * *", time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 30, 3, 45, 0, 0, time.UTC)},
	}
	for _, tt := range tests {
		s, err := gate.NewSweeper(t.Context(), f.gate, tt.spec, quietLog())
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Next(tt.from); !got.Equal(tt.want) {
			t.Errorf("%q: next after %s = %s, want %s", tt.spec, tt.from, got.UTC(), tt.want)
		}
	}
	if _, err := gate.NewSweeper(t.Context(), f.gate, "every minute", quietLog()); deskbot.ErrorCode(err) != deskbot.EINVALID {
		t.Errorf("bad schedule: %v, want invalid", err)
	}
}

func TestMessagesWordForWord(t *testing.T) {
	r := &deskbot.Request{ID: "R1", Content: deskbot.PermissionContent{ToolName: "flatten_desk"}, ExpiresAt: time.Date(2026, 11, 30, 8, 35, 0, 0, time.UTC)}
	ran := &deskbot.ToolResult{Text: "closed"}
	failed := &deskbot.ToolResult{Text: "no positions", IsError: true}
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"hold", gate.HoldMessage(r), "flatten_desk needs the user's permission, so it was not run. Request R1 was sent to them and lapses at 14:05 India time. End this turn now; do not retry flatten_desk or reach the same result another way. If they allow it, the harness runs exactly this call and tells you the result in a new message."},
		{"deny", gate.ResponseMessage(deskbot.PermissionResponse{Request: r, Decision: deskbot.Deny}, nil), "The user denied flatten_desk (request R1), so it was not run. Do not try to reach the same result another way; ask them if it still matters."},
		{"deny reason", gate.ResponseMessage(deskbot.PermissionResponse{Request: r, Decision: deskbot.Deny, Reason: "too late"}, nil), "The user denied flatten_desk (request R1), so it was not run. Their reason: too late Do not try to reach the same result another way; ask them if it still matters."},
		{"allow ran", gate.ResponseMessage(deskbot.PermissionResponse{Request: r, Decision: deskbot.AllowOnce}, ran), "The user allowed flatten_desk (request R1), and the harness ran it with the arguments you gave. It was run:\nclosed"},
		{"allow failed", gate.ResponseMessage(deskbot.PermissionResponse{Request: r, Decision: deskbot.AllowOnce}, failed), "The user allowed flatten_desk (request R1), and the harness ran it with the arguments you gave. It failed:\nno positions"},
		{"always reason", gate.ResponseMessage(deskbot.PermissionResponse{Request: r, Decision: deskbot.AlwaysAllow, Reason: "ok"}, ran), "The user allowed flatten_desk (request R1), and the harness ran it with the arguments you gave. It was run:\nclosed\nThey also allowed you to use flatten_desk without asking from now on.\nThey added: ok"},
		{"lapse", gate.LapseMessage(r), "Request R1 for flatten_desk lapsed at 14:05 India time without an answer, so it was not run. Ask the user again only if it still matters."},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, tt.got, tt.want)
		}
	}
	_, err := deskbot.ParseDecision("maybe")
	if got, want := deskbot.ErrorMessage(err), "Permission is allow_once, always_allow or deny, not 'maybe'"; got != want {
		t.Errorf("unknown decision: %q, want %q", got, want)
	}
}
