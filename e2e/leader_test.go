package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/model/modeltest"
)

// The leader drills run two deskbot processes on one Redis, the fake Bot
// API and the fake model, with LEADER_LEASE=5s.
const drillLease = 5 * time.Second

// instance is one of several deskbot processes of a drill, with its own
// HTTP address and log file.
type instance struct {
	*service
	name, addr, logs string
}

// startInstance runs another deskbot process on the world's Redis and
// fakes and waits until it started (as leader or standby).
func (w *world) startInstance(name string) *instance {
	w.t.Helper()
	in := &instance{name: name, addr: fmt.Sprintf("127.0.0.1:%d", freePort(w.t)), logs: filepath.Join(w.t.TempDir(), name+".log")}
	cmd := exec.Command(binPath)
	for k, v := range w.env {
		if k != "HTTP_ADDR" {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	cmd.Env = append(cmd.Env, "HTTP_ADDR="+in.addr)
	out := logFile(w.t, in.logs)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		w.t.Fatalf("start %s: %v", name, err)
	}
	in.service = &service{cmd: cmd, done: make(chan struct{})}
	go func() { in.err = cmd.Wait(); close(in.done) }()
	w.t.Cleanup(func() {
		in.cmd.Process.Signal(syscall.SIGCONT)
		in.kill()
		if b, _ := os.ReadFile(in.logs); strings.Contains(string(b), token) {
			w.t.Errorf("the bot token reached %s's logs", name)
		}
		if w.t.Failed() {
			b, _ := os.ReadFile(in.logs)
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			w.t.Logf("last lines of %s's log:\n%s", name, strings.Join(lines[max(0, len(lines)-40):], "\n"))
		}
	})
	deskbottest.EventuallyWithin(w.t, 30*time.Second, name+" started", func() bool {
		if !in.alive() {
			w.t.Fatalf("%s exited at start: %v", name, in.err)
		}
		return in.logHas("deskbot started")
	})
	return in
}

func (in *instance) logHas(s string) bool {
	b, _ := os.ReadFile(in.logs)
	return strings.Contains(string(b), s)
}

// role is what /healthz says: leader or standby ("" when it does not
// answer).
func (in *instance) role() string {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get("http://" + in.addr + "/healthz")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var body struct{ Role string }
	json.NewDecoder(resp.Body).Decode(&body)
	return body.Role
}

// echoDesk answers "u-N" with "echo u-N" and counts the turns per N: an
// update lost is a count of 0, one handled twice a count of 2.
type echoDesk struct {
	mu    sync.Mutex
	turns map[string]int
}

func (e *echoDesk) reply(text string) (modeltest.Reply, bool) {
	i := strings.Index(text, "u-")
	if i < 0 {
		return modeltest.Reply{}, false
	}
	n := strings.Fields(text[i:])[0]
	e.mu.Lock()
	e.turns[n]++
	e.mu.Unlock()
	return modeltest.Text("echo " + n), true
}

// lostDoubled counts the updates u-1..u-n never handled, and handled more
// than once.
func (e *echoDesk) lostDoubled(n int) (lost, doubled int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := 1; i <= n; i++ {
		switch c := e.turns[fmt.Sprintf("u-%d", i)]; {
		case c == 0:
			lost++
		case c > 1:
			doubled++
		}
	}
	return lost, doubled
}

// sendUpdates injects "/tell echo u-N" for N from..to, gap apart.
func (w *world) sendUpdates(from, to int, gap time.Duration) {
	for i := from; i <= to; i++ {
		w.tell("echo", fmt.Sprintf("u-%d", i))
		time.Sleep(gap)
	}
}

func (w *world) conflicts() int {
	n := 0
	for _, c := range w.tg.Calls("getUpdates") {
		if c.Status == http.StatusConflict {
			n++
		}
	}
	return n
}

// TestLeaderKill kills the leader (SIGKILL) while a standby runs, with an
// open request, an allowed call running, a desk's turn in hand with
// triggers queued behind it, desk messages Telegram has not accepted yet,
// and people typing throughout. The standby takes over within the lease;
// every request is answerable, every message arrives once, nothing runs
// twice, and no update is lost or handled twice.
func TestLeaderKill(t *testing.T) {
	w := newWorld(t, map[string]string{
		"DESKS": "alpha,beta,gamma,echo", "APPROVAL_TOOLS": "place_order,bash",
		"MODEL_TIMEOUT": "60s", "LEADER_LEASE": drillLease.String(),
	})
	gammaGate := make(chan struct{})
	var openGate sync.Once
	release := func() { openGate.Do(func() { close(gammaGate) }) }
	t.Cleanup(release)
	echo := &echoDesk{turns: map[string]int{}}
	var mu sync.Mutex
	gammaAsked := map[string]int{}
	w.model.SetHandler(func(r modeltest.Request) modeltest.Reply {
		last := r.Last()
		desk := deskOf(r)
		if desk == "echo" {
			if rep, ok := echo.reply(last.Text); ok {
				return rep
			}
			return modeltest.Text("ok")
		}
		switch {
		case last.Role == "tool" && strings.Contains(last.Text, "needs the user's permission"):
			return modeltest.Text(desk + " waits for the team")
		case desk == "alpha" && strings.Contains(last.Text, "The user allowed place_order"):
			return modeltest.Text("alpha-filled")
		case desk == "alpha" && strings.Contains(last.Text, "buy"):
			return modeltest.Calls(modeltest.ToolCall{Name: "place_order", Arguments: `{"symbol":"INFY","side":"buy","quantity":1,"price":2000}`})
		case desk == "alpha" && strings.Contains(last.Text, "say-"):
			return modeltest.Text("alpha said " + last.Text[strings.Index(last.Text, "say-")+4:][:1])
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

	a := w.startInstance("a")
	b := w.startInstance("b")
	if ra, rb := a.role(), b.role(); ra != "leader" || rb != "standby" {
		t.Fatalf("roles: a %q, b %q; want leader and standby", ra, rb)
	}
	w.sendUpdates(1, 10, 20*time.Millisecond)
	w.tell("alpha", "buy one INFY")
	w.tell("beta", "run the job")
	isRequest := func(tool string) func(telegramtest.Message) bool {
		return func(m telegramtest.Message) bool { return len(m.Keyboard) > 0 && strings.Contains(m.Plain, tool) }
	}
	alphaMsg := w.botMessage("alpha's held place_order", 20*time.Second, isRequest("place_order"))
	betaMsg := w.botMessage("beta's held bash", 20*time.Second, isRequest("bash"))
	alphaReq, betaReq := requestOf(t, alphaMsg), requestOf(t, betaMsg)
	w.tg.InjectCallback(asha, groupID, betaMsg.ID, button(t, betaMsg, "Allow once"))
	started := filepath.Join(w.data, "desks", "beta", "started.txt")
	deskbottest.EventuallyWithin(t, 15*time.Second, "beta's command to start", func() bool { _, err := os.Stat(started); return err == nil })

	w.tg.Fail(telegramtest.Failure{Method: "sendMessage", Code: 502})
	for _, job := range []string{"job-1", "job-2", "job-3"} {
		w.tell("gamma", job)
	}
	w.tell("alpha", "say-1")
	w.tell("alpha", "say-2")
	deskbottest.EventuallyWithin(t, 15*time.Second, "gamma's turn in hand with two triggers queued", func() bool {
		n, err := w.st.PendingTriggers(t.Context(), "gamma")
		mu.Lock()
		defer mu.Unlock()
		return err == nil && n == 3 && len(gammaAsked) == 1
	})
	deskbottest.EventuallyWithin(t, 15*time.Second, "alpha's two messages published", func() bool {
		return countModelReplies(w.model, "alpha", "say-") == 2 && pendingZero(w, "alpha")
	})

	killedAt := time.Now()
	a.kill()
	w.tg.ClearFailures()
	release()
	w.sendUpdates(11, 20, 100*time.Millisecond) // typed while nobody leads
	deskbottest.EventuallyWithin(t, drillLease+10*time.Second, "b to take over", func() bool { return b.logHas("this instance now leads") })
	takeover := time.Since(killedAt)

	deskbottest.EventuallyWithin(t, 15*time.Second, "beta's request interrupted", func() bool {
		return w.request(betaReq).State == deskbot.StateInterrupted
	})
	q1 := w.tg.InjectCallback(approvers[1], groupID, alphaMsg.ID, button(t, alphaMsg, "Allow once"))
	callbackAnswers(t, w, q1)
	q2 := w.tg.InjectCallback(approvers[2], groupID, alphaMsg.ID, button(t, alphaMsg, "Deny"))
	answers := callbackAnswers(t, w, q1, q2)
	want := []string{"gamma did job-1", "gamma did job-2", "gamma did job-3", "alpha said 1", "alpha said 2", "beta-interrupted-noted", "alpha-filled"}
	for i := 1; i <= 20; i++ {
		want = append(want, fmt.Sprintf("echo u-%d", i))
	}
	deskbottest.EventuallyWithin(t, 120*time.Second, "every message delivered", func() bool {
		for _, s := range want {
			if w.countBot(s) == 0 {
				return false
			}
		}
		return true
	})
	delivered := time.Since(killedAt)
	time.Sleep(2 * time.Second) // room for a duplicate to show
	for _, s := range want {
		// "echo u-1" is inside "echo u-10": count whole words.
		if got := countWord(w, s); got != 1 {
			t.Errorf("%q appears %d times in the chat, want 1", s, got)
		}
	}
	if strings.Count(answers, "Allowed; running") != 1 || strings.Count(answers, "Already") != 1 {
		t.Errorf("two taps on the old buttons answered %q: want one allow and one 'Already…'", answers)
	}
	if r := w.request(alphaReq); r.State != deskbot.StateRan {
		t.Errorf("alpha's request is %s after its old button was tapped, want ran", r.State)
	}
	if n := len(mustTrades(t, w, "alpha")); n != 1 {
		t.Errorf("alpha's broker has %d fills, want 1", n)
	}
	if b, _ := os.ReadFile(started); strings.Count(string(b), "started") != 1 {
		t.Errorf("beta's command started %d times, want 1", strings.Count(string(b), "started"))
	}
	lost, doubled := echo.lostDoubled(20)
	if lost != 0 || doubled != 0 {
		t.Errorf("updates: %d lost, %d handled twice; want none", lost, doubled)
	}
	if takeover > drillLease+5*time.Second {
		t.Errorf("take-over took %v, want under LEADER_LEASE + 5s", takeover)
	}
	summary(t, "leader-kill", "lease=%v takeover=%v updates=20(lost %d, doubled %d) open_request=answerable(1 fill) running_call=interrupted(started 1x) unsent=2+3 triggers(each once) all_delivered_after_kill=%v",
		drillLease, takeover.Round(10*time.Millisecond), lost, doubled, delivered.Round(100*time.Millisecond))
}

// countWord counts the bot's messages' occurrences of s not followed by a
// digit.
func countWord(w *world, s string) int {
	n := 0
	for _, m := range w.tg.BotMessages(groupID) {
		text := m.Plain
		for i := strings.Index(text, s); i >= 0; {
			end := i + len(s)
			if end >= len(text) || text[end] < '0' || text[end] > '9' {
				n++
			}
			j := strings.Index(text[end:], s)
			if j < 0 {
				break
			}
			i = end + j
		}
	}
	return n
}

// TestRollingRestart stops the leader gracefully (SIGTERM) while a standby
// runs, with an allowed call running and people typing throughout: the call
// finishes and is recorded as ran, the standby takes over once the leader
// released the lease, and no update is lost or handled twice. The old
// leader, started again, stands by.
func TestRollingRestart(t *testing.T) {
	w := newWorld(t, map[string]string{"DESKS": "beta,echo", "APPROVAL_TOOLS": "bash", "LEADER_LEASE": drillLease.String()})
	echo := &echoDesk{turns: map[string]int{}}
	w.model.SetHandler(func(r modeltest.Request) modeltest.Reply {
		last := r.Last()
		if rep, ok := echo.reply(last.Text); ok && deskOf(r) == "echo" {
			return rep
		}
		switch {
		case last.Role == "tool" && strings.Contains(last.Text, "needs the user's permission"):
			return modeltest.Text("beta waits")
		case strings.Contains(last.Text, "The user allowed bash"):
			return modeltest.Text("beta-job-reported")
		case strings.Contains(last.Text, "run the job"):
			return modeltest.Calls(modeltest.ToolCall{Name: "bash", Arguments: `{"command":"sleep 2; echo done >> ran.txt"}`})
		}
		return modeltest.Text("ok")
	})
	a := w.startInstance("a")
	b := w.startInstance("b")
	w.tell("beta", "run the job")
	held := w.botMessage("beta's held bash", 20*time.Second, func(m telegramtest.Message) bool { return len(m.Keyboard) > 0 })
	req := requestOf(t, held)
	w.tg.InjectCallback(asha, groupID, held.ID, button(t, held, "Allow once"))
	deskbottest.EventuallyWithin(t, 10*time.Second, "the call running", func() bool { return w.request(req).State == deskbot.StateRunning })

	typing := make(chan struct{})
	go func() { defer close(typing); w.sendUpdates(1, 40, 100*time.Millisecond) }()
	time.Sleep(300 * time.Millisecond)
	stopAt := time.Now()
	a.cmd.Process.Signal(syscall.SIGTERM)
	<-a.done
	exited := time.Since(stopAt)
	deskbottest.EventuallyWithin(t, drillLease+5*time.Second, "b to take over", func() bool { return b.logHas("this instance now leads") })
	takeover := time.Since(stopAt) - exited
	<-typing
	a2 := w.startInstance("a-again")
	if r := a2.role(); r != "standby" {
		t.Errorf("the restarted instance is %q, want standby", r)
	}
	deskbottest.EventuallyWithin(t, 90*time.Second, "every update answered", func() bool {
		for i := 1; i <= 40; i++ {
			if countWord(w, fmt.Sprintf("echo u-%d", i)) == 0 {
				return false
			}
		}
		return true
	})
	time.Sleep(2 * time.Second)
	if r := w.request(req); r.State != deskbot.StateRan {
		t.Errorf("the call running at the stop is %s, want ran", r.State)
	}
	if b, _ := os.ReadFile(filepath.Join(w.data, "desks", "beta", "ran.txt")); strings.Count(string(b), "done") != 1 {
		t.Errorf("the call ran %d times, want 1", strings.Count(string(b), "done"))
	}
	lost, doubled := echo.lostDoubled(40)
	if lost != 0 || doubled != 0 {
		t.Errorf("updates: %d lost, %d handled twice; want none", lost, doubled)
	}
	for i := 1; i <= 40; i++ {
		if n := countWord(w, fmt.Sprintf("echo u-%d", i)); n != 1 {
			t.Errorf("echo u-%d appears %d times", i, n)
		}
	}
	summary(t, "rolling-restart", "lease=%v graceful_stop=%v(running call finished: ran) takeover_after_exit=%v updates=40(lost %d, doubled %d) restarted_instance=standby 409s=%d",
		drillLease, exited.Round(10*time.Millisecond), takeover.Round(10*time.Millisecond), lost, doubled, w.conflicts())
}

// TestSecondInstanceAndPausedLeader starts a second instance by mistake
// beside a leader with a call running: it interrupts nothing and duplicates
// nothing. Then the leader is paused (SIGSTOP) past its lease: the standby
// takes over; the old leader, resumed, must not act: it exits, and nothing
// it had is said or run twice.
func TestSecondInstanceAndPausedLeader(t *testing.T) {
	w := newWorld(t, map[string]string{"DESKS": "beta,echo", "APPROVAL_TOOLS": "bash", "LEADER_LEASE": drillLease.String()})
	echo := &echoDesk{turns: map[string]int{}}
	w.model.SetHandler(func(r modeltest.Request) modeltest.Reply {
		last := r.Last()
		if rep, ok := echo.reply(last.Text); ok && deskOf(r) == "echo" {
			return rep
		}
		switch {
		case last.Role == "tool" && strings.Contains(last.Text, "needs the user's permission"):
			return modeltest.Text("beta waits")
		case strings.Contains(last.Text, "The user allowed bash"):
			return modeltest.Text("beta-job-reported")
		case strings.Contains(last.Text, "run the job"):
			return modeltest.Calls(modeltest.ToolCall{Name: "bash", Arguments: `{"command":"sleep 3; echo done >> ran.txt"}`})
		}
		return modeltest.Text("ok")
	})
	a := w.startInstance("a")
	w.tell("beta", "run the job")
	held := w.botMessage("beta's held bash", 20*time.Second, func(m telegramtest.Message) bool { return len(m.Keyboard) > 0 })
	req := requestOf(t, held)
	w.tg.InjectCallback(asha, groupID, held.ID, button(t, held, "Allow once"))
	deskbottest.EventuallyWithin(t, 10*time.Second, "the call running", func() bool { return w.request(req).State == deskbot.StateRunning })

	mistake := w.startInstance("mistake")
	if r := mistake.role(); r != "standby" {
		t.Fatalf("the second instance is %q, want standby", r)
	}
	w.sendUpdates(1, 10, 50*time.Millisecond)
	w.botMessage("the call's outcome", 20*time.Second, func(m telegramtest.Message) bool { return strings.Contains(m.Plain, "beta-job-reported") })
	if r := w.request(req); r.State != deskbot.StateRan {
		t.Errorf("with a second instance started, the leader's call is %s, want ran", r.State)
	}
	conflictsBefore := w.conflicts()

	// The leader freezes past its lease.
	a.cmd.Process.Signal(syscall.SIGSTOP)
	pausedAt := time.Now()
	w.sendUpdates(11, 20, 100*time.Millisecond)
	deskbottest.EventuallyWithin(t, drillLease+10*time.Second, "the standby to take over", func() bool { return mistake.logHas("this instance now leads") })
	takeover := time.Since(pausedAt)
	time.Sleep(time.Second)
	a.cmd.Process.Signal(syscall.SIGCONT)
	select {
	case <-a.done:
	case <-time.After(10 * time.Second):
		t.Errorf("the resumed old leader is still running %v after it lost its lease", 10*time.Second)
	}
	w.sendUpdates(21, 30, 50*time.Millisecond)
	defer func() {
		if t.Failed() {
			w.dumpChat()
			echo.mu.Lock()
			t.Logf("echo turns: %v", echo.turns)
			echo.mu.Unlock()
		}
	}()
	deskbottest.EventuallyWithin(t, 60*time.Second, "every update answered", func() bool {
		for i := 1; i <= 30; i++ {
			if countWord(w, fmt.Sprintf("echo u-%d", i)) == 0 {
				return false
			}
		}
		return true
	})
	time.Sleep(2 * time.Second)
	lost, doubled := echo.lostDoubled(30)
	if lost != 0 || doubled != 0 {
		t.Errorf("updates: %d lost, %d handled twice; want none", lost, doubled)
	}
	for _, s := range []string{"beta-job-reported"} {
		if n := countWord(w, s); n != 1 {
			t.Errorf("%q appears %d times, want 1", s, n)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(w.data, "desks", "beta", "ran.txt")); strings.Count(string(b), "done") != 1 {
		t.Errorf("the call ran %d times, want 1", strings.Count(string(b), "done"))
	}
	if conflictsBefore != 0 {
		t.Errorf("with a standby running Telegram saw %d conflicting polls, want 0", conflictsBefore)
	}
	summary(t, "second-instance", "lease=%v mistake_instance=standby(interrupted 0, 409s %d) paused_leader: takeover=%v, resumed and exited, updates=30(lost %d, doubled %d), 409s after resume=%d",
		drillLease, conflictsBefore, takeover.Round(10*time.Millisecond), lost, doubled, w.conflicts()-conflictsBefore)
}
