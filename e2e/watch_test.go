package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/model/modeltest"
)

// TestWatchAcrossKillAndHandOver sets a price watch through a desk's
// watch_price, kills the service with SIGKILL, starts it again, then
// kills that leader too with a standby waiting, and only then moves the
// fake Kite's price across the level: the new leader fires the watch, and
// the desk is woken exactly once, with the price and its note.
func TestWatchAcrossKillAndHandOver(t *testing.T) {
	kw := newKiteWorld(t, map[string]string{"LEADER_LEASE": drillLease.String()})
	kw.model.SetHandler(func(r modeltest.Request) modeltest.Reply {
		last := r.Last()
		kw.mu.Lock()
		kw.told = append(kw.told, last.Text)
		kw.mu.Unlock()
		if last.Role == "user" && strings.Contains(last.Text, "watch {") {
			args := last.Text[strings.Index(last.Text, "watch {")+len("watch "):]
			return modeltest.Calls(modeltest.ToolCall{Name: deskbot.ToolWatchPrice, Arguments: args[:strings.LastIndex(args, "}")+1]})
		}
		return modeltest.Text("noted")
	})
	kw.start()
	kw.login()
	deskbottest.EventuallyWithin(t, 30*time.Second, "the day's instrument list loaded", func() bool {
		return strings.Contains(readFile(kw.logs), "the day's instrument list is loaded")
	})
	kw.tell("main", `watch {"symbol":"NSE:INFY","direction":"above","level":1550,"note":"breakout: think about buying"}`)
	deskbottest.EventuallyWithin(t, 30*time.Second, "the watch kept", func() bool {
		ws, err := kw.st.Watches(t.Context(), "main")
		return err == nil && len(ws) == 1
	})

	kw.svc.kill() // kill -9
	kw.start()
	restarted := &instance{addr: kw.env["HTTP_ADDR"]}
	deskbottest.EventuallyWithin(t, 30*time.Second, "the restarted service leading", func() bool { return restarted.role() == "leader" })
	standby := kw.startInstance("b")
	if r := standby.role(); r != "standby" {
		t.Fatalf("the second instance is %q; want standby", r)
	}
	kw.svc.kill() // the leader dies: b takes over when the lease lapses
	deskbottest.EventuallyWithin(t, 30*time.Second, "b leading", func() bool { return standby.role() == "leader" })

	kw.kt.SetLTP("NSE:INFY", 1551.5)
	kw.sawWords("Your watch", 60*time.Second)
	time.Sleep(3 * time.Second) // ticks and polls more: nothing fires again
	kw.kt.SetLTP("NSE:INFY", 1560)
	time.Sleep(3 * time.Second)
	kw.mu.Lock()
	var woken []string
	for _, s := range kw.told {
		if strings.Contains(s, "Your watch") {
			woken = append(woken, s)
		}
	}
	kw.mu.Unlock()
	if len(woken) != 1 {
		t.Fatalf("the desk was woken %d times; want once: %q", len(woken), woken)
	}
	if !strings.Contains(woken[0], "1,551.50") || !strings.Contains(woken[0], "Your note: breakout: think about buying") {
		t.Errorf("the desk was woken with %q; want the price and its note", woken[0])
	}
	if ws, _ := kw.st.Watches(t.Context(), "main"); len(ws) != 0 {
		t.Errorf("watches left after firing: %v", ws)
	}
}
