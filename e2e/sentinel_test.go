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
	"github.com/deskbot/deskbot/store"
	"github.com/deskbot/deskbot/store/storetest"
)

// TestSentinelFailover runs the service on a primary, its replica and
// three sentinels, and kills the primary (SIGKILL: a dead host) in the
// middle of activity: requests held and open, a decision tapped just
// before, a tap and a desk's new order just after. Sentinel promotes the
// replica; the service follows it without a restart. Every decision a
// person was told of is there after the failover (WAIT put it on the
// replica first), every open request is answerable, nothing ran twice, and
// the taps during the failover were answered without anyone repeating one.
func TestSentinelFailover(t *testing.T) {
	set := storetest.StartSentinel(t)
	w := newWorld(t, map[string]string{"DESKS": "alpha", "APPROVAL_TOOLS": "place_order",
		"REDIS_URL": "", "REDIS_SENTINELS": strings.Join(set.Addrs(), ","), "REDIS_MASTER_NAME": set.MasterName,
		"REDIS_PASSWORD": set.Password,
		// The failover (a few seconds) must fit in the three quarters of the
		// lease within which a leader renews, as it does with the default
		// 10 s; the harness's short 3 s lease would make the leader step down.
		"LEADER_LEASE": "15s"})
	st, err := store.Open(t.Context(), store.Options{SentinelAddrs: set.Addrs(), MasterName: set.MasterName,
		Password: set.Password, Prefix: w.env["REDIS_PREFIX"]})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	w.st = st // the drill reads what the service wrote, through Sentinel too

	// told counts, per symbol, the turns that told the desk its allowed
	// order's outcome although its history already held that outcome: the
	// desk told twice. A turn is delivered at least once: when its end
	// could not be saved during the failover (the words, the history and
	// the acknowledgement are one write), the trigger stays in hand and the
	// turn runs again, its call replayed, not run. That second asking of
	// the model is not a second telling: the desk's history has it once.
	var mu sync.Mutex
	told, asked := map[string]int{}, map[string]int{}
	w.model.SetHandler(func(r modeltest.Request) modeltest.Reply {
		last := r.Last()
		switch {
		case last.Role == "tool" && strings.Contains(last.Text, "needs the user's permission"):
			return modeltest.Text("alpha waits for the team")
		case strings.Contains(last.Text, "The user allowed place_order"):
			msgs := r.Messages()
			for _, sym := range []string{"SYM1", "SYM2", "SYM3", "SYM4", "SYM5"} {
				if strings.Contains(last.Text, sym) {
					mu.Lock()
					defer mu.Unlock()
					asked[sym]++
					if slices.ContainsFunc(msgs[:len(msgs)-1], func(m modeltest.Message) bool {
						return strings.Contains(m.Text, "The user allowed place_order") && strings.Contains(m.Text, sym)
					}) {
						told[sym]++
					}
					return modeltest.Text("alpha-filled " + sym)
				}
			}
			return modeltest.Text("alpha-filled")
		case strings.Contains(last.Text, "buy "):
			sym := strings.Fields(last.Text[strings.Index(last.Text, "buy "):])[1]
			return modeltest.Calls(modeltest.ToolCall{Name: "place_order", Arguments: `{"symbol":"` + sym + `","side":"buy","quantity":1,"price":10000}`})
		}
		return modeltest.Text("ok")
	})
	w.start()

	held := map[string]telegramtest.Message{}
	for _, sym := range []string{"SYM1", "SYM2", "SYM3", "SYM4"} {
		w.tell("alpha", "buy "+sym)
		held[sym] = w.botMessage("the held order "+sym, 30*time.Second, func(m telegramtest.Message) bool {
			return len(m.Keyboard) > 0 && strings.Contains(m.Plain, sym)
		})
	}
	// SYM1 decided and run before the failover; SYM2 tapped just before
	// the kill, its answer told to the person.
	q1 := w.tg.InjectCallback(asha, groupID, held["SYM1"].ID, button(t, held["SYM1"], "Allow once"))
	if a := callbackAnswers(t, w, q1); !strings.Contains(a, "Allowed") {
		t.Fatalf("tap on SYM1 answered %q", a)
	}
	w.botMessage("SYM1 filled", 30*time.Second, func(m telegramtest.Message) bool { return strings.Contains(m.Plain, "alpha-filled SYM1") })
	q2 := w.tg.InjectCallback(asha, groupID, held["SYM2"].ID, button(t, held["SYM2"], "Allow once"))
	answer2 := callbackAnswers(t, w, q2)
	auditBefore := w.audit()

	old := set.Master(t)
	killedAt := time.Now()
	old.Kill()

	// During the failover: a tap on SYM3 and a new order from the desk.
	q3 := w.tg.InjectCallback(approvers[1], groupID, held["SYM3"].ID, button(t, held["SYM3"], "Allow once"))
	w.tell("alpha", "buy SYM5")
	answer3 := callbackAnswers(t, w, q3)
	tapAnswered := time.Since(killedAt)
	deskbottest.EventuallyWithin(t, 30*time.Second, "the sentinels to promote the replica", func() bool { return set.Master(t) != old })
	promoted := time.Since(killedAt)
	w.botMessage("SYM3 filled", 30*time.Second, func(m telegramtest.Message) bool { return strings.Contains(m.Plain, "alpha-filled SYM3") })
	held5 := w.botMessage("the order held during the failover", 30*time.Second, func(m telegramtest.Message) bool {
		return len(m.Keyboard) > 0 && strings.Contains(m.Plain, "SYM5")
	})
	recovered := time.Since(killedAt)

	// After: the untouched SYM4 and the new SYM5 are answerable.
	q4 := w.tg.InjectCallback(asha, groupID, held["SYM4"].ID, button(t, held["SYM4"], "Deny"))
	q5 := w.tg.InjectCallback(asha, groupID, held5.ID, button(t, held5, "Allow once"))
	if a := callbackAnswers(t, w, q4, q5); !strings.Contains(a, "Denied") || !strings.Contains(a, "Allowed") {
		t.Errorf("taps after the failover answered %q", a)
	}
	w.botMessage("SYM5 filled", 30*time.Second, func(m telegramtest.Message) bool { return strings.Contains(m.Plain, "alpha-filled SYM5") })

	if !strings.Contains(answer2, "Allowed") || !strings.Contains(answer3, "Allowed") {
		t.Errorf("taps around the kill answered %q and %q; want both Allowed (the retry waits out the failover)", answer2, answer3)
	}
	want := map[string]deskbot.RequestState{"SYM1": deskbot.StateRan, "SYM2": deskbot.StateRan, "SYM3": deskbot.StateRan, "SYM4": deskbot.StateDenied}
	for sym, state := range want {
		if r := w.request(requestOf(t, held[sym])); r.State != state {
			t.Errorf("%s is %s after the failover, want %s", sym, r.State, state)
		}
	}
	var symbols []string
	for _, f := range mustTrades(t, w, "alpha") {
		symbols = append(symbols, f.Symbol)
	}
	slices.Sort(symbols)
	if !slices.Equal(symbols, []string{"SYM1", "SYM2", "SYM3", "SYM5"}) {
		t.Errorf("fills %v; want SYM1, SYM2, SYM3 and SYM5 once each", symbols)
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
		t.Errorf("%d of %d audit entries acknowledged before the kill are gone", lost, len(auditBefore))
	}
	mu.Lock()
	twice := 0
	for _, n := range told {
		twice += n
	}
	for sym, n := range asked {
		if n > 1 {
			t.Logf("the model was asked %d times for %s's outcome: a turn whose end was not saved in the failover ran again", n, sym)
		}
	}
	mu.Unlock()
	// What the team reads: each allowed order's outcome once in the chat.
	for _, sym := range symbols {
		n := 0
		for _, m := range w.tg.BotMessages(groupID) {
			if strings.Contains(m.Plain, "alpha-filled "+sym) {
				n++
			}
		}
		if n > 1 {
			t.Errorf("the desk's words on %s's outcome reached the chat %d times; want once", sym, n)
		}
	}
	if twice > 0 || !w.svc.alive() {
		t.Errorf("calls told twice: %d; service alive: %v", twice, w.svc.alive())
	}
	summary(t, "sentinel-failover", "primary_killed=SIGKILL replica_promoted_in=%v tap_during_failover_answered_in=%v(taps_repeated=0) desk_order_held_again_in=%v acknowledged_decisions_lost=0/%d audit_entries_kept=%d/%d fills=%d double_runs=%d",
		promoted.Round(100*time.Millisecond), tapAnswered.Round(100*time.Millisecond), recovered.Round(100*time.Millisecond),
		2, len(auditBefore)-lost, len(auditBefore), len(symbols), twice)
}
