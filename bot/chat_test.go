package bot_test

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/bot"
	"github.com/deskbot/deskbot/bot/telegramtest"
)

func TestHeldCallShowsThreeButtonsAndAllowRunsItOnce(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	r, m := h.mustHoldShown("alpha")
	// The held call is an order (at market), so it may be changed too.
	if got, want := m.Labels(), []string{"Allow once", "Always allow", "Deny", "Why?", "Change…"}; !slices.Equal(got, want) {
		t.Fatalf("labels = %q, want %q", got, want)
	}

	q := h.tap(asha, m, "Allow once")
	if got, alert := h.answer(q); got != "Allowed; running…" || alert {
		t.Errorf("answer = %q (alert %v), want %q as a toast", got, alert, "Allowed; running…")
	}
	edited := h.waitMessage(func(x telegramtest.Message) bool {
		return x.ID == m.ID && len(x.Keyboard) == 0 && strings.Contains(x.Plain, "Ran")
	})
	if !strings.Contains(edited.Plain, "Asha") || !strings.Contains(edited.Plain, "14:00 IST") {
		t.Errorf("outcome %q does not say who allowed it and when", edited.Plain)
	}
	if got := h.tool.Runs(); got != 1 {
		t.Errorf("tool ran %d times, want 1", got)
	}
	got, err := h.gate.Request(t.Context(), r.ID)
	if err != nil || got.State != deskbot.StateRan {
		t.Errorf("request state = %v (err %v), want ran", got.State, err)
	}
}

func TestStrangersTapChangesNothing(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	r, m := h.mustHoldShown("alpha")
	for _, label := range []string{"Allow once", "Always allow", "Deny", "Why?"} {
		q := h.tap(stranger, m, label)
		if got, alert := h.answer(q); got != "Only approvers can decide; nothing was changed." || !alert {
			t.Errorf("%s by a stranger answered %q (alert %v), want the approvers-only alert", label, got, alert)
		}
	}
	got, err := h.gate.Request(t.Context(), r.ID)
	if err != nil || got.State != deskbot.StateOpen {
		t.Fatalf("request state = %v (err %v), want still open", got.State, err)
	}
	if cur, _ := h.tg.Message(groupID, m.ID); len(cur.Keyboard) == 0 || cur.Edits != 0 {
		t.Errorf("message changed after a stranger's taps: %+v", cur)
	}
	if h.tool.Runs() != 0 {
		t.Errorf("tool ran after a stranger's tap")
	}
}

func TestTwoApproversTappingAtOnceRunTheCallOnce(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	_, m := h.mustHoldShown("alpha")
	var qs []string
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, u := range []telegramtest.User{asha, ravi, asha, ravi} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q := h.tap(u, m, "Allow once")
			mu.Lock()
			qs = append(qs, q)
			mu.Unlock()
		}()
	}
	wg.Wait()
	var running, already int
	for _, q := range qs {
		text, _ := h.answer(q)
		switch {
		case text == "Allowed; running…":
			running++
		case strings.HasPrefix(text, "Already allowed by "):
			already++
		default:
			t.Errorf("unexpected answer %q", text)
		}
	}
	if running != 1 || already != 3 {
		t.Errorf("answers: %d running, %d already allowed; want 1 and 3", running, already)
	}
	h.waitMessage(func(x telegramtest.Message) bool { return x.ID == m.ID && strings.Contains(x.Plain, "Ran") })
	if got := h.tool.Runs(); got != 1 {
		t.Errorf("tool ran %d times, want 1", got)
	}
}

func TestLateTapsAnswerWhatAlreadyHappened(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	_, m := h.mustHoldShown("alpha")
	h.answer(h.tap(asha, m, "Allow once"))
	h.waitMessage(func(x telegramtest.Message) bool { return x.ID == m.ID && strings.Contains(x.Plain, "Ran") })

	// The keyboard is gone from the chat, but an old client can still send
	// the tap.
	q := h.tg.InjectCallback(ravi, groupID, m.ID, bot.CallbackData(bot.ActDeny, strings.TrimPrefix(m.Keyboard[0][0].Data, "\fa1|")))
	if got, _ := h.answer(q); got != "Already allowed by Asha at 14:00 IST; it ran." {
		t.Errorf("late deny answered %q", got)
	}

	_, m2 := h.mustHoldShown("beta")
	h.clock.Add(6 * time.Minute) // past the 5-minute expiry, before any sweep
	q = h.tap(asha, m2, "Allow once")
	if got, _ := h.answer(q); got != "This request lapsed at 14:05 IST." {
		t.Errorf("tap on a lapsed request answered %q", got)
	}
	h.waitMessage(func(x telegramtest.Message) bool {
		return x.ID == m2.ID && len(x.Keyboard) == 0 && strings.Contains(x.Plain, "Lapsed at 14:05 IST, not run")
	})
	if got := h.tool.Runs(); got != 1 {
		t.Errorf("tool ran %d times, want 1 (the lapsed call must not run)", got)
	}
}

func TestForgedOrMalformedCallbackDataIsRefused(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	r, m := h.mustHoldShown("alpha")
	for name, data := range map[string]string{
		"unknown request": bot.CallbackData(bot.ActAllowOnce, "6f1c2a9e-3b4d-4e5f-8a7b-1c2d3e4f5a6b"),
		"not a uuid":      "\fa1|../../etc",
		"unknown action":  "\fzz|" + r.ID,
		"no separator":    "a1" + r.ID,
		"unknown desk":    bot.CallbackData(bot.ActFlattenConfirm, "gamma"),
		"revoke unknown":  bot.CallbackData(bot.ActRevoke, "gamma/place_order"),
	} {
		q := h.tg.InjectCallback(asha, groupID, m.ID, data)
		got, _ := h.answer(q)
		if !strings.HasPrefix(got, "Sorry, I don't") {
			t.Errorf("%s: answered %q, want a polite refusal", name, got)
		}
	}
	if got, _ := h.gate.Request(t.Context(), r.ID); got.State != deskbot.StateOpen || h.tool.Runs() != 0 {
		t.Errorf("forged taps changed something: state %v, runs %d", got.State, h.tool.Runs())
	}
}

func TestButtonsKeepWorkingAfterRestart(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	_, m1 := h.mustHoldShown("alpha")
	_, m2 := h.mustHoldShown("beta")
	h.restart()
	h.answer(h.tap(ravi, m2, "Deny"))
	h.grant(asha, m1)
	h.waitMessage(func(x telegramtest.Message) bool {
		// "Ran", not the allow alone: the message says "running…" once
		// allowed, before the call has run on the gate's lifetime.
		return x.ID == m1.ID && len(x.Keyboard) == 0 && strings.Contains(x.Plain, "Always allowed by Asha") && strings.Contains(x.Plain, "Ran")
	})
	h.waitMessage(func(x telegramtest.Message) bool {
		return x.ID == m2.ID && len(x.Keyboard) == 0 && strings.Contains(x.Plain, "Denied by Ravi")
	})
	if got := h.tool.Runs(); got != 1 {
		t.Errorf("tool ran %d times, want 1", got)
	}
}
