package e2e

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/model/modeltest"
)

// TestRedisRestart stops Redis in the middle of a desk's turn and starts it
// again from its append-only file. The service keeps running and
// reconnects; the guarded call the model made while Redis was down is not
// run and the model is told why; what was recorded before the restart (an
// open request, the audit trail) is all there, and the old buttons work.
func TestRedisRestart(t *testing.T) {
	// A leader rides out a Redis outage shorter than three quarters of its
	// lease and steps down after a longer one (package leader); this outage
	// lasts about 12 s (5 s of retries before the model is told), so the
	// lease is long enough for the service to stay the leader throughout.
	w := newWorld(t, map[string]string{"DESKS": "alpha", "APPROVAL_TOOLS": "place_order", "LEADER_LEASE": "30s"})
	asked, down := make(chan struct{}), make(chan struct{})
	var once, downOnce sync.Once
	t.Cleanup(func() { downOnce.Do(func() { close(down) }) })
	var mu sync.Mutex
	var toldWhy string
	duringCalls := 0
	w.model.SetHandler(func(r modeltest.Request) modeltest.Reply {
		last := r.Last()
		switch {
		case last.Role == "tool" && strings.Contains(last.Text, "could not be recorded"):
			mu.Lock()
			toldWhy = last.Text
			mu.Unlock()
			return modeltest.Text("alpha could not ask the team")
		case last.Role == "tool" && strings.Contains(last.Text, "needs the user's permission"):
			return modeltest.Text("alpha waits for the team")
		case strings.Contains(last.Text, "The user allowed place_order"):
			return modeltest.Text("alpha-filled")
		case strings.Contains(last.Text, "buy one"):
			return modeltest.Calls(modeltest.ToolCall{Name: "place_order", Arguments: `{"symbol":"INFY","side":"buy","quantity":1,"price":2000}`})
		case strings.Contains(last.Text, "during"):
			once.Do(func() { close(asked) })
			<-down
			mu.Lock()
			duringCalls++
			first := duringCalls == 1
			mu.Unlock()
			if first {
				return modeltest.Calls(modeltest.ToolCall{Name: "place_order", Arguments: `{"symbol":"TCS","side":"buy","quantity":1,"price":5000}`})
			}
			return modeltest.Text("alpha tried during the outage already")
		case strings.Contains(last.Text, "before"), strings.Contains(last.Text, "after"):
			word := "before"
			if strings.Contains(last.Text, "after") {
				word = "after"
			}
			return modeltest.Text("ack " + word)
		}
		return modeltest.Text("ok")
	})

	w.start()
	w.tell("alpha", "buy one INFY")
	held := w.botMessage("the held order", 20*time.Second, func(m telegramtest.Message) bool {
		return len(m.Keyboard) > 0 && strings.Contains(m.Plain, "place_order")
	})
	id := requestOf(t, held)
	w.tell("alpha", "before")
	w.botMessage("ack before", 20*time.Second, func(m telegramtest.Message) bool { return strings.Contains(m.Plain, "ack before") })
	auditBefore := w.audit()

	w.tell("alpha", "during")
	deskbottest.EventuallyWithin(t, 20*time.Second, "the model asked mid-turn", func() bool {
		select {
		case <-asked:
			return true
		default:
			return false
		}
	})
	stoppedAt := time.Now()
	w.redis.Stop()
	downOnce.Do(func() { close(down) })
	deskbottest.EventuallyWithin(t, 30*time.Second, "the model told why its call was not run", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return toldWhy != ""
	})
	time.Sleep(2 * time.Second) // the service lives through some outage
	if !w.svc.alive() {
		t.Fatal("the service exited while Redis was down")
	}
	w.redis.Start()
	outage := time.Since(stoppedAt)
	restartedAt := time.Now()

	// The first command after the restart may still meet the client's
	// closed pool (go-redis probes a dead server about once a second); the
	// bot then says it could not record the message, and a person repeats
	// it. The drill does the same.
	tries := 0
	deskbottest.EventuallyWithin(t, 60*time.Second, "a desk answers after the restart", func() bool {
		tries++
		w.tell("alpha", "after")
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) {
			if w.countBot("ack after") > 0 {
				return true
			}
			time.Sleep(50 * time.Millisecond)
		}
		return false
	})
	recovered := time.Since(restartedAt)

	q := w.tg.InjectCallback(approvers[3], groupID, held.ID, button(t, held, "Allow once"))
	w.botMessage("alpha's order filled", 30*time.Second, func(m telegramtest.Message) bool { return strings.Contains(m.Plain, "alpha-filled") })
	if a := callbackAnswers(t, w, q); !strings.Contains(a, "Allowed") {
		t.Errorf("tap on the old button after the restart answered %q", a)
	}
	if !w.svc.alive() {
		t.Fatal("the service exited")
	}

	if r := w.request(id); r.State != deskbot.StateRan {
		t.Errorf("the request held before the restart is %s, want ran", r.State)
	}
	fills := mustTrades(t, w, "alpha")
	var symbols []string
	for _, f := range fills {
		symbols = append(symbols, f.Symbol)
	}
	if !slices.Equal(symbols, []string{"INFY"}) {
		t.Errorf("fills %v, want only INFY (the call made while Redis was down must not run)", symbols)
	}
	after := w.audit()
	lost := 0
	for _, e := range auditBefore {
		if !slices.ContainsFunc(after, func(a deskbot.AuditEntry) bool {
			return a.Action == e.Action && a.RequestID == e.RequestID && a.At.Equal(e.At)
		}) {
			lost++
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d audit entries written before the restart are gone", lost, len(auditBefore))
	}
	for _, e := range after {
		if e.Action == "hold" && strings.Contains(e.Detail, "TCS") {
			t.Errorf("the call made while Redis was down was held after all: %+v", e)
		}
	}
	mu.Lock()
	why := toldWhy
	mu.Unlock()
	if !strings.Contains(why, "was not run") {
		t.Errorf("the model was told %q; want it to say the call was not run", why)
	}
	summary(t, "redis-restart", "outage=%v service_alive=yes reconnected_and_answered_in=%v(tells_needed=%d) guarded_call_during_outage=not_run(model told) audit_entries_kept=%d/%d open_request=answerable_after",
		outage.Round(time.Millisecond), recovered.Round(time.Millisecond), tries, len(auditBefore)-lost, len(auditBefore))
}
