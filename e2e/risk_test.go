package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/model/modeltest"
)

// TestHaltSurvivesKillAndTwoInstances runs two deskbot processes on one
// Redis with a desk whose models may spend 40 tokens a day (the fake
// model reports 15 an answer): the desk is halted once, by the leader
// alone; a kill -9 of the leader and a hand-over keep it halted, nothing
// of it runs, and only a confirmed /resume on the new leader lifts it.
func TestHaltSurvivesKillAndTwoInstances(t *testing.T) {
	desks := filepath.Join(t.TempDir(), "desks.toml")
	if err := os.WriteFile(desks, []byte("[[desk]]\nname = \"main\"\n[desk.risk]\nmax_model_tokens_per_day = 40\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w := newWorld(t, map[string]string{"DESKS_FILE": desks, "LEADER_LEASE": drillLease.String(), "RISK_CHECK_EVERY": "200ms"})
	w.model.SetHandler(func(modeltest.Request) modeltest.Reply { return modeltest.Text("Thinking.") })
	a := w.startInstance("a")
	deskbottest.EventuallyWithin(t, 30*time.Second, "a leads", func() bool { return a.role() == "leader" })
	b := w.startInstance("b")
	deskbottest.EventuallyWithin(t, 30*time.Second, "b stands by", func() bool { return b.role() == "standby" })

	for _, s := range []string{"one", "two", "three", "four"} {
		w.tell("main", "think "+s)
	}
	w.botMessage("the halt", 30*time.Second, func(m telegramtest.Message) bool {
		return strings.Contains(m.Plain, "halted") && strings.Contains(m.Plain, "max_model_tokens_per_day")
	})
	time.Sleep(time.Second) // both instances had time to check
	if got := w.countBot("halted at"); got != 1 {
		t.Errorf("the group was told of %d halts, want 1", got)
	}
	halts := 0
	for _, e := range w.audit() {
		if e.Action == "halt" && e.By == "risk" {
			halts++
		}
	}
	if halts != 1 {
		t.Errorf("halts audited: %d, want 1", halts)
	}

	a.kill()
	deskbottest.EventuallyWithin(t, 30*time.Second, "b takes over", func() bool { return b.role() == "leader" })
	st, err := w.st.DeskStatus(t.Context(), "main")
	if err != nil {
		t.Fatal(err)
	}
	if st.Halt == nil || !st.Paused {
		t.Fatalf("after kill -9 and the hand-over: %+v", st)
	}
	calls := len(w.model.Requests())
	w.tell("main", "think five")
	time.Sleep(time.Second)
	if got := len(w.model.Requests()); got != calls {
		t.Errorf("a halted desk's model was called %d times after the hand-over", got-calls)
	}
	w.tg.InjectText(asha, groupID, "/resume main", 0)
	ask := w.botMessage("the resume's confirmation on the new leader", 30*time.Second, func(m telegramtest.Message) bool {
		return strings.Contains(m.Plain, "Resume it?") && strings.Contains(m.Plain, "max_model_tokens_per_day")
	})
	w.tg.InjectCallback(asha, groupID, ask.ID, button(t, ask, "Yes, resume main"))
	w.botMessage("the resume", 30*time.Second, func(m telegramtest.Message) bool {
		return m.ID == ask.ID && strings.Contains(m.Plain, "Resumed main by Asha")
	})
	deskbottest.EventuallyWithin(t, 30*time.Second, "the resumed desk reads why it was halted", func() bool {
		for _, r := range w.model.Requests() {
			if strings.Contains(lastUser(r), "The harness halted this desk at") {
				return true
			}
		}
		return false
	})
	summary(t, "halt", "two instances, a halt by max_model_tokens_per_day: halted once (told %d, audited %d); kill -9 of the leader and the hand-over kept it halted; a confirmed /resume on the new leader lifted it", w.countBot("halted at"), halts)
}
