package e2e

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/model/modeltest"
)

// leadsWithin polls in's /healthz until it says leader, and returns how long
// that took from since; it fails the drill after within.
func leadsWithin(t *testing.T, in *instance, since time.Time, within time.Duration) time.Duration {
	t.Helper()
	deskbottest.EventuallyWithin(t, within, in.name+" to lead", func() bool { return in.role() == "leader" })
	return time.Since(since)
}

// TestLeaseLostWrite makes Redis lose the leadership write (the lease's keys
// put back as they were before the leader took them, as a restart without
// persistence, the last second of an append-only file or a replica that
// lacked it would serve them), so that the standby takes the lease with the
// term number the leader holds. The leader renews after the standby's take
// (it is paused across the loss, to fix the order that a standby retrying
// every tenth of the lease and a leader renewing every quarter most often
// come in): its renewal must be refused, and it must stop leading, so that
// only one process leads.
func TestLeaseLostWrite(t *testing.T) {
	w := newWorld(t, map[string]string{"DESKS": "echo", "LEADER_LEASE": drillLease.String()})
	echo := &echoDesk{turns: map[string]int{}}
	w.model.SetHandler(func(r modeltest.Request) modeltest.Reply {
		if rep, ok := echo.reply(r.Last().Text); ok {
			return rep
		}
		return modeltest.Text("ok")
	})
	ctx := context.Background()
	before := w.leaseTerms()
	a := w.startInstance("a")
	b := w.startInstance("b")
	if ra, rb := a.role(), b.role(); ra != "leader" || rb != "standby" {
		t.Fatalf("roles: a %q, b %q; want leader and standby", ra, rb)
	}
	old, err := w.st.LeaseHolder(ctx)
	if err != nil || old == 0 {
		t.Fatalf("the leader's token = %d, %v", old, err)
	}
	w.sendUpdates(1, 5, 20*time.Millisecond)

	a.cmd.Process.Signal(syscall.SIGSTOP)
	w.loseLeaseWrites(before)
	lostAt := time.Now()
	deskbottest.EventuallyWithin(t, drillLease, "b to take the lost lease", func() bool { return b.logHas("this instance now leads") })
	cur, err := w.st.LeaseHolder(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a.cmd.Process.Signal(syscall.SIGCONT)
	resumedAt := time.Now()

	// a's next renewal comes within a quarter lease of its resumption; it
	// must find the lease another term's and stop.
	var stepDown time.Duration
	deskbottest.EventuallyWithin(t, drillLease, "a to stop leading", func() bool {
		stepDown = time.Since(resumedAt)
		return a.logHas("no longer the leader")
	})
	select {
	case <-a.done:
	case <-time.After(drillLease):
		t.Errorf("a still runs %v after it stopped leading", drillLease)
	}
	w.sendUpdates(6, 10, 50*time.Millisecond)
	deskbottest.EventuallyWithin(t, 30*time.Second, "every update answered", func() bool {
		for i := 1; i <= 10; i++ {
			if countWord(w, fmt.Sprintf("echo u-%d", i)) == 0 {
				return false
			}
		}
		return true
	})
	if r := b.role(); r != "leader" {
		t.Errorf("b is %q after a stopped, want leader", r)
	}
	if got, _ := w.st.LeaseHolder(ctx); got != cur {
		t.Errorf("the lease holds %d, want b's %d", got, cur)
	}
	summary(t, "lease-lost-write", "lease=%v term_number=%d (a %d, b %d: one number, two tokens) b_took_after_loss=%v a_stepped_down_after_resume=%v(renewal refused) only_b_leads=%v",
		drillLease, cur/1e10, old, cur, resumedAt.Sub(lostAt).Round(10*time.Millisecond), stepDown.Round(10*time.Millisecond), b.role() == "leader" && !a.alive())
}

// TestLoneLeaderRestart kills the one instance (SIGKILL) a second after a
// request was held, and starts it again on the same host and DATA_DIR: it
// proves its predecessor dead (it holds the DATA_DIR lock the dead one held)
// and leads at once, well within the lease, instead of waiting the dead
// one's lease out; the request, which expires before that lease would have
// lapsed, is still answerable from its old buttons and runs once.
func TestLoneLeaderRestart(t *testing.T) {
	const lease = 10 * time.Second // the default
	w := newWorld(t, map[string]string{
		"DESKS": "alpha", "APPROVAL_TOOLS": "place_order",
		"LEADER_LEASE": lease.String(), "APPROVAL_EXPIRY": "8s",
	})
	w.model.SetHandler(func(r modeltest.Request) modeltest.Reply {
		last := r.Last()
		switch {
		case last.Role == "tool" && strings.Contains(last.Text, "needs the user's permission"):
			return modeltest.Text("alpha waits for the team")
		case strings.Contains(last.Text, "The user allowed place_order"):
			return modeltest.Text("alpha-filled")
		case strings.Contains(last.Text, "buy"):
			return modeltest.Calls(modeltest.ToolCall{Name: "place_order", Arguments: `{"symbol":"INFY","side":"buy","quantity":1,"price":2000}`})
		}
		return modeltest.Text("ok")
	})
	first := w.startInstance("first")
	if r := first.role(); r != "leader" {
		t.Fatalf("the lone instance is %q, want leader", r)
	}
	w.tell("alpha", "buy one INFY")
	held := w.botMessage("alpha's held place_order", 20*time.Second, func(m telegramtest.Message) bool {
		return len(m.Keyboard) > 0 && strings.Contains(m.Plain, "place_order")
	})
	req := requestOf(t, held)
	time.Sleep(time.Second)
	first.kill()

	startedAt := time.Now()
	again := w.startInstance("again")
	restart := leadsWithin(t, again, startedAt, lease+5*time.Second)
	if restart > lease/4 {
		t.Errorf("the restarted instance led %v after its start, want within a quarter of the %v lease", restart, lease)
	}
	if !again.logHas("took over the leader lease at once") {
		t.Errorf("the restarted instance did not log taking the lease over from its predecessor")
	}
	q := w.tg.InjectCallback(approvers[1], groupID, held.ID, button(t, held, "Allow once"))
	answer := callbackAnswers(t, w, q)
	w.botMessage("alpha's outcome", 30*time.Second, func(m telegramtest.Message) bool { return strings.Contains(m.Plain, "alpha-filled") })
	if !strings.Contains(answer, "Allowed; running") {
		t.Errorf("the old Allow button answered %q after the restart, want it allowed", answer)
	}
	if r := w.request(req); r.State != deskbot.StateRan {
		t.Errorf("the request held before the kill is %s, want ran", r.State)
	}
	if n := len(mustTrades(t, w, "alpha")); n != 1 {
		t.Errorf("alpha's broker has %d fills, want 1", n)
	}
	summary(t, "lone-leader-restart", "lease=%v restart_to_leading=%v request_held_1s_before_kill(expiry 8s)=%s",
		lease, restart.Round(10*time.Millisecond), w.request(req).State)
}
