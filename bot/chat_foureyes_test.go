package bot_test

import (
	"github.com/deskbot/deskbot/gate/gatetest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/agent"
	"github.com/deskbot/deskbot/bot"
	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/gate"
)

// mustFourEyes is the whole bot with desk alpha's place_order needing two
// approvers (above tp's threshold, if it has one).
func mustFourEyes(t *testing.T, tp deskbot.ToolPolicy) *e2e {
	t.Helper()
	h := mustE2E(t)
	h.shutdown()
	h.gate = fourEyesGate(h, deskbot.Policies{"alpha": {"place_order": tp}})
	h.start()
	return h
}

func fourEyesGate(h *e2e, p deskbot.Policies) *gate.Gate {
	regs := agent.Registries{"alpha": agent.NewRegistry(h.tool), "beta": agent.NewRegistry(h.tool)}
	return gatetest.MustNew(h.t, gate.Config{Tools: []string{"place_order"}, Expiry: 5 * time.Minute, DenyReasonWait: 2 * time.Minute, Policies: p, Books: h.broker,
		Limits: gatetest.HardLimits(p, nil, h.broker, h.st, h.clock.Now)},
		h.st, regs, h.clock.Now, quiet())
}

func TestTwoApproversNeededInTheChat(t *testing.T) {
	t.Parallel()
	h := mustFourEyes(t, deskbot.ToolPolicy{Approvals: 2})
	r, m := h.mustHoldShown("alpha")
	if !strings.Contains(m.Plain, "This call needs 2 approvers: 2 more") {
		t.Fatalf("request message does not say what it needs:\n%s", m.Plain)
	}

	if got, _ := h.answer(h.tap(asha, m, "Allow once")); got != "Approved (1 of 2); it needs one more before it runs." {
		t.Errorf("Asha's tap answered %q", got)
	}
	m = h.waitMessage(func(x telegramtest.Message) bool {
		return x.ID == m.ID && strings.Contains(x.Plain, "needs 2 approvers: Asha ✓, one more")
	})
	if got := m.Labels(); len(got) != 5 {
		t.Errorf("after one approval the buttons are %q; want all five (Change… with an order)", got)
	}
	// Asha again, from another device; a stranger; Ravi with a forged
	// callback naming Asha's id: none counts.
	if got := h.grant(asha, m); got != "You already approved; it needs one more." {
		t.Errorf("Asha's second tap answered %q", got)
	}
	if got, _ := h.answer(h.tap(stranger, m, "Allow once")); got != "Only approvers can decide; nothing was changed." {
		t.Errorf("stranger's tap answered %q", got)
	}
	forged := h.tg.InjectCallback(ravi, groupID, m.ID, bot.CallbackData(bot.ActAllowOnce, r.ID)+"|101")
	if got, _ := h.answer(forged); got != "Sorry, I don't recognise that button, so nothing was done." {
		t.Errorf("forged approval answered %q", got)
	}
	if got, err := h.gate.Request(t.Context(), r.ID); err != nil || got.State != deskbot.StateOpen || len(got.Approvals) != 1 || h.tool.Runs() != 0 {
		t.Fatalf("after one person's taps: %+v, %v, runs %d; want open with one approval", got, err, h.tool.Runs())
	}

	if got, _ := h.answer(h.tap(ravi, m, "Allow once")); got != "Allowed; running…" {
		t.Errorf("Ravi's tap answered %q", got)
	}
	done := h.waitMessage(func(x telegramtest.Message) bool { return x.ID == m.ID && strings.Contains(x.Plain, "Ran") })
	if !strings.Contains(done.Plain, "Allowed once by Asha and Ravi at 14:00 IST") || len(done.Keyboard) != 0 {
		t.Errorf("outcome:\n%s", done.Plain)
	}
	want := "The user allowed place_order (request " + r.ID + "), and the harness ran it with the arguments you gave. It was run:\nbought 10 RELIANCE @ 100.00"
	if trs := h.waitTriggers("alpha", 1); trs[0].Text != want {
		t.Errorf("desk told %q; want %q", trs[0].Text, want)
	}
	if got := h.tool.Runs(); got != 1 {
		t.Errorf("tool ran %d times; want 1", got)
	}
}

// Both approvers tap at once, each on two devices: one approval is
// counted, one runs the call, and the call runs once.
func TestTwoApproversAtOnceInTheChat(t *testing.T) {
	t.Parallel()
	h := mustFourEyes(t, deskbot.ToolPolicy{Approvals: 2})
	_, m := h.mustHoldShown("alpha")
	var qs []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, u := range []telegramtest.User{asha, ravi, asha, ravi} {
		wg.Go(func() {
			q := h.tap(u, m, "Allow once")
			mu.Lock()
			qs = append(qs, q)
			mu.Unlock()
		})
	}
	wg.Wait()
	n := map[string]int{}
	for _, q := range qs {
		text, _ := h.answer(q)
		switch {
		case text == "Allowed; running…", strings.HasPrefix(text, "Approved (1 of 2)"):
			n[text]++
		case text == "You already approved; it needs one more.", strings.HasPrefix(text, "Already allowed by"):
			n["refused"]++
		default:
			t.Errorf("unexpected answer %q", text)
		}
	}
	if n["Allowed; running…"] != 1 || n["refused"] != 2 {
		t.Errorf("answers %v; want one running, one counted, two refused", n)
	}
	h.waitMessage(func(x telegramtest.Message) bool { return x.ID == m.ID && strings.Contains(x.Plain, "Ran") })
	if got := h.tool.Runs(); got != 1 {
		t.Errorf("tool ran %d times; want 1", got)
	}
}

// A restart between the two approvals, into a service whose policy no
// longer asks for two: Asha's taps still never run the call.
func TestRestartBetweenApprovalsInTheChat(t *testing.T) {
	t.Parallel()
	h := mustFourEyes(t, deskbot.ToolPolicy{Approvals: 2})
	_, m := h.mustHoldShown("alpha")
	h.answer(h.tap(asha, m, "Allow once"))
	m = h.waitMessage(func(x telegramtest.Message) bool { return x.ID == m.ID && strings.Contains(x.Plain, "Asha ✓") })
	h.shutdown()
	h.gate = fourEyesGate(h, nil)
	h.start()
	if got, _ := h.answer(h.tap(asha, m, "Allow once")); got != "You already approved; it needs one more." {
		t.Errorf("Asha after the restart: %q", got)
	}
	if h.tool.Runs() != 0 {
		t.Fatal("the call ran on one person's taps")
	}
	if got, _ := h.answer(h.tap(ravi, m, "Allow once")); got != "Allowed; running…" {
		t.Errorf("Ravi after the restart: %q", got)
	}
	h.waitMessage(func(x telegramtest.Message) bool { return x.ID == m.ID && strings.Contains(x.Plain, "Ran") })
	if got := h.tool.Runs(); got != 1 {
		t.Errorf("tool ran %d times; want 1", got)
	}
}

// An "Always allow" under four eyes needs both, and /grants shows the
// grant's scope.
func TestGrantThatNeededTwoInTheChat(t *testing.T) {
	t.Parallel()
	h := mustFourEyes(t, deskbot.ToolPolicy{Approvals: 2, TwoApproversAbove: 500000})
	_, m := h.mustHoldShown("alpha") // no price: its size cannot be read, so it needs two
	if got := h.grant(asha, m); !strings.HasPrefix(got, "Approved (1 of 2)") {
		t.Fatalf("Asha's always allow answered %q", got)
	}
	if gs, _ := h.gate.Grants(t.Context()); len(gs) != 0 {
		t.Fatalf("one person's always allow granted %+v", gs)
	}
	if got := h.grant(ravi, m); got != "Always allowed; running…" {
		t.Fatalf("Ravi's always allow answered %q", got)
	}
	grants := h.replyTo(groupID, h.say(ravi, "/grants", 0))
	want := "alpha may use place_order without asking, for orders up to ₹5,00,000.00 notional (given by 2 approvers); granted by Asha (101) and Ravi (102) at 14:00 IST"
	if !strings.Contains(grants.Plain, want) {
		t.Errorf("/grants:\n%s\nwant a line %q", grants.Plain, want)
	}
}
