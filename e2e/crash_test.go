package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/bot"
	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/model/modeltest"
)

// TestCrash kills the service with SIGKILL while it has an open request, a
// held call running, triggers queued and in hand, and desk messages Telegram
// has not accepted yet; then starts it again. The old buttons still work,
// every trigger's turn completes once, every message arrives once, and the
// call that was running is reported interrupted and never run again.
func TestCrash(t *testing.T) {
	w := newWorld(t, map[string]string{
		"DESKS":          "alpha,beta,gamma",
		"APPROVAL_TOOLS": "place_order,bash",
		"MODEL_TIMEOUT":  "60s", // gamma's model is held past the kill
	})
	gammaGate := make(chan struct{}) // holds gamma's model until the restart
	var openGate sync.Once
	release := func() { openGate.Do(func() { close(gammaGate) }) }
	t.Cleanup(release) // before the fake model's cleanup waits for its handlers
	var mu sync.Mutex
	gammaAsked := map[string]int{} // job -> model requests that carried it
	w.model.SetHandler(func(r modeltest.Request) modeltest.Reply {
		last := r.Last()
		switch desk := deskOf(r); {
		case last.Role == "tool" && strings.Contains(last.Text, "needs the user's permission"):
			return modeltest.Text(desk + " waits for the team")
		case desk == "alpha" && strings.Contains(last.Text, "The user allowed place_order"):
			return modeltest.Text("alpha-filled")
		case desk == "alpha" && strings.Contains(last.Text, "buy"):
			return modeltest.Calls(modeltest.ToolCall{Name: "place_order", Arguments: `{"symbol":"INFY","side":"buy","quantity":1,"price":2000}`})
		case desk == "alpha" && strings.Contains(last.Text, "say-"):
			n := last.Text[strings.Index(last.Text, "say-")+4:][:1]
			return modeltest.Text("alpha said " + n)
		case desk == "beta" && strings.Contains(last.Text, "service stopped while it was running"):
			return modeltest.Text("beta-interrupted-noted")
		case desk == "beta" && strings.Contains(last.Text, "run the job"):
			return modeltest.Calls(modeltest.ToolCall{Name: "bash", Arguments: `{"command":"echo started >> started.txt; sleep 4; echo done >> ran.txt"}`})
		case desk == "gamma" && strings.Contains(last.Text, "job-"):
			job := last.Text[strings.Index(last.Text, "job-"):][:5]
			mu.Lock()
			gammaAsked[job]++
			mu.Unlock()
			<-gammaGate
			return modeltest.Text("gamma did " + job)
		}
		return modeltest.Text("ok")
	})

	w.start()
	w.tell("alpha", "buy one INFY")
	w.tell("beta", "run the job")
	isRequest := func(tool string) func(telegramtest.Message) bool {
		return func(m telegramtest.Message) bool { return len(m.Keyboard) > 0 && strings.Contains(m.Plain, tool) }
	}
	alphaMsg := w.botMessage("alpha's held place_order", 20*time.Second, isRequest("place_order"))
	betaMsg := w.botMessage("beta's held bash", 20*time.Second, isRequest("bash"))
	alphaReq, betaReq := requestOf(t, alphaMsg), requestOf(t, betaMsg)

	// Beta's call starts running and is mid-sleep at the kill.
	w.tg.InjectCallback(asha, groupID, betaMsg.ID, button(t, betaMsg, "Allow once"))
	started := filepath.Join(w.data, "desks", "beta", "started.txt")
	deskbottest.EventuallyWithin(t, 15*time.Second, "beta's command to start", func() bool { _, err := os.Stat(started); return err == nil })

	// From here Telegram refuses every message, so what the desks say waits
	// in the outbox.
	w.tg.Fail(telegramtest.Failure{Method: "sendMessage", Code: 502})
	for _, job := range []string{"job-1", "job-2", "job-3"} {
		w.tell("gamma", job)
	}
	w.tell("alpha", "say-1")
	w.tell("alpha", "say-2")
	deskbottest.EventuallyWithin(t, 15*time.Second, "gamma's turn in hand with two triggers queued", func() bool {
		n, err := w.st.PendingTriggers(context.Background(), "gamma")
		mu.Lock()
		defer mu.Unlock()
		return err == nil && n == 3 && len(gammaAsked) == 1
	})
	deskbottest.EventuallyWithin(t, 15*time.Second, "alpha's two messages published", func() bool {
		return countModelReplies(w.model, "alpha", "say-") == 2 && pendingZero(w, "alpha")
	})
	unsent := w.countBot("alpha said")

	killedAt := time.Now()
	w.svc.kill()
	w.tg.ClearFailures()
	release()
	w.start()
	restart := time.Since(killedAt)

	// The running call is reported, not rerun; its process died with the
	// service.
	deskbottest.EventuallyWithin(t, 10*time.Second, "beta's request interrupted", func() bool {
		return w.request(betaReq).State == deskbot.StateInterrupted
	})
	w.botMessage("beta told of the interruption", 60*time.Second, func(m telegramtest.Message) bool {
		return strings.Contains(m.Plain, "beta-interrupted-noted")
	})

	// The old buttons of the open request still work, once.
	q1 := w.tg.InjectCallback(approvers[1], groupID, alphaMsg.ID, button(t, alphaMsg, "Allow once"))
	callbackAnswers(t, w, q1)
	q2 := w.tg.InjectCallback(approvers[2], groupID, alphaMsg.ID, button(t, alphaMsg, "Deny"))
	w.botMessage("alpha's outcome after the restart", 60*time.Second, func(m telegramtest.Message) bool {
		return strings.Contains(m.Plain, "alpha-filled")
	})
	answers := callbackAnswers(t, w, q1, q2)

	deskbottest.EventuallyWithin(t, 90*time.Second, "every message delivered", func() bool {
		for _, s := range []string{"gamma did job-1", "gamma did job-2", "gamma did job-3", "alpha said 1", "alpha said 2"} {
			if w.countBot(s) == 0 {
				return false
			}
		}
		return true
	})
	drain := time.Since(killedAt)
	// (The /tell commands are handled concurrently, so gamma may take its
	// jobs in any order.) A duplicate would show before a later message of
	// the same desk: the outbox delivers in order and a desk handles its
	// triggers one after another.
	w.queue("alpha", "say-9")
	w.queue("gamma", "job-9")
	deskbottest.EventuallyWithin(t, 60*time.Second, "the later messages delivered", func() bool {
		return w.countBot("alpha said 9") == 1 && w.countBot("gamma did job-9") == 1
	})
	for _, s := range []string{"gamma did job-1", "gamma did job-2", "gamma did job-3", "alpha said 1", "alpha said 2", "beta-interrupted-noted", "alpha-filled"} {
		if got := w.countBot(s); got != 1 {
			w.dumpChat()
			t.Errorf("%q appears %d times in the chat, want 1", s, got)
		}
	}
	for _, desk := range []string{"alpha", "beta", "gamma"} {
		deskbottest.EventuallyWithin(t, 20*time.Second, desk+"'s inbox empty", func() bool { return pendingZero(w, desk) })
	}

	if strings.Count(answers, "Allowed; running") != 1 || strings.Count(answers, "Already") != 1 {
		t.Errorf("two taps on the old buttons answered %q: want one allow and one 'Already…'", answers)
	}
	if r := w.request(alphaReq); r.State != deskbot.StateRan {
		t.Errorf("alpha's request is %s after its old button was tapped, want ran", r.State)
	}
	trades := mustTrades(t, w, "alpha")
	if len(trades) != 1 {
		t.Errorf("alpha's broker has %d fills, want 1", len(trades))
	}
	ran, interrupted := 0, 0
	for _, e := range w.audit() {
		if e.RequestID == betaReq && (e.Action == "ran" || e.Action == "failed") {
			ran++
		}
		if e.RequestID == betaReq && e.Action == "interrupted" {
			interrupted++
		}
	}
	if ran != 0 || interrupted != 1 {
		t.Errorf("beta's request: %d runs and %d interruptions in the audit trail, want 0 and 1", ran, interrupted)
	}
	// The command slept 4s: had it survived the kill, or been run again, it
	// would have written ran.txt by now.
	time.Sleep(time.Until(killedAt.Add(5 * time.Second)))
	if b, err := os.ReadFile(filepath.Join(w.data, "desks", "beta", "ran.txt")); err == nil {
		t.Errorf("beta's interrupted command finished after the kill: ran.txt = %q", b)
	}
	if b, _ := os.ReadFile(started); strings.Count(string(b), "started") != 1 {
		t.Errorf("beta's command started %d times, want 1", strings.Count(string(b), "started"))
	}
	mu.Lock()
	redelivered := gammaAsked["job-1"] + gammaAsked["job-2"] + gammaAsked["job-3"] - 3
	mu.Unlock()
	summary(t, "crash", "restart=%v unsent_at_kill=%d(delivered once each) triggers_queued=3(handled once each, %d turn redelivered) open_request=answerable running_call=interrupted(not rerun) delivered_all_after_kill=%v",
		restart.Round(time.Millisecond), 2-unsent, redelivered, drain.Round(time.Millisecond))
}

// requestOf reads the request id from a request message's Allow button.
func requestOf(t *testing.T, m telegramtest.Message) string {
	t.Helper()
	_, id, err := bot.ParseCallback(button(t, m, "Allow once"))
	if err != nil {
		t.Fatalf("request message %d: %v", m.ID, err)
	}
	return id
}

func button(t *testing.T, m telegramtest.Message, label string) string {
	t.Helper()
	for _, row := range m.Keyboard {
		for _, b := range row {
			if b.Text == label {
				return b.Data
			}
		}
	}
	t.Fatalf("message %d has no %q button (has %v)", m.ID, label, m.Labels())
	return ""
}

// callbackAnswers waits for the queries' answers and joins them.
func callbackAnswers(t *testing.T, w *world, ids ...string) string {
	t.Helper()
	var out []string
	for _, id := range ids {
		deskbottest.EventuallyWithin(t, 20*time.Second, "callback answer "+id, func() bool { _, _, ok := w.tg.CallbackAnswer(id); return ok })
		a, _, _ := w.tg.CallbackAnswer(id)
		out = append(out, a)
	}
	return strings.Join(out, " | ")
}

// countModelReplies counts the model requests from desk whose last message
// mentions s: how often the model was asked about it.
func countModelReplies(m *modeltest.Server, desk, s string) int {
	n := 0
	for _, r := range m.Requests() {
		if deskOf(r) == desk && strings.Contains(r.Last().Text, s) {
			n++
		}
	}
	return n
}

func pendingZero(w *world, desk string) bool {
	n, err := w.st.PendingTriggers(context.Background(), desk)
	return err == nil && n == 0
}
