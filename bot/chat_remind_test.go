package bot_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/bot"
	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/deskbottest"
)

// holdOwn holds a call of its own (callID) on desk and waits for its
// message in the group, as mustHoldShown does for one call.
func (h *e2e) holdOwn(desk, callID string) (*deskbot.Request, telegramtest.Message) {
	h.t.Helper()
	r, _, err := h.gate.Hold(h.t.Context(), desk, "trigger-"+callID, deskbot.ToolCall{ID: callID, Name: "place_order",
		Arguments: json.RawMessage(`{"symbol":"RELIANCE","side":"buy","quantity":10}`)})
	if err != nil {
		h.t.Fatalf("hold: %v", err)
	}
	m := h.waitMessage(func(m telegramtest.Message) bool {
		return strings.Contains(m.Text, shortID(r.ID)) && len(m.Keyboard) > 0
	})
	deskbottest.Eventually(h.t, "the outbox to record the message of request "+r.ID, func() bool {
		_, err := h.st.Note(h.t.Context(), bot.RequestMessageKey(r.ID))
		return err == nil
	})
	return r, m
}

// reminders are the bot's reminders in the group replying to message id.
func (h *e2e) reminders(id int) []telegramtest.Message {
	var out []telegramtest.Message
	for _, m := range h.tg.BotMessages(groupID) {
		if strings.HasPrefix(m.Plain, "⏰") && m.ReplyTo == id {
			out = append(out, m)
		}
	}
	return out
}

// waitReminder waits for the reminder replying to message id.
func (h *e2e) waitReminder(id int) telegramtest.Message {
	h.t.Helper()
	var got telegramtest.Message
	deskbottest.Eventually(h.t, "a reminder replying to the request's message", func() bool {
		rs := h.reminders(id)
		if len(rs) > 0 {
			got = rs[0]
		}
		return len(rs) > 0
	})
	return got
}

// scans lets the reminders' scan (every 10ms) run many times over.
func scans() { time.Sleep(150 * time.Millisecond) }

func mention(u telegramtest.User) string {
	return `<a href="tg://user?id=` + itoa(u.ID) + `">` + u.FirstName + `</a>`
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// A reminder names exactly the approvers who have not answered (under four
// eyes, not the one who approved), with mentions that notify them, as a
// reply to the request's message, once: a rescan or a restart in the
// reminder's window sends none again. TELEGRAM_QUIET never hushes it.
func TestReminderNamesWhoHasNotAnsweredOnceAcrossARestart(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	h.shutdown()
	h.remind, h.hush = 100*time.Second, bot.Quiet{DeskMessages: true, Fills: true, Reports: true}
	h.gate = fourEyesGate(h, deskbot.Policies{"alpha": {"place_order": {Approvals: 2}}})
	h.tg.AddUser(asha)
	h.tg.AddUser(ravi)
	h.start()

	r1, m1 := h.holdOwn("alpha", "call_r1")
	if got, _ := h.answer(h.tap(asha, m1, "Allow once")); !strings.HasPrefix(got, "Approved (1 of 2)") {
		t.Fatalf("Asha's tap answered %q", got)
	}
	h.clock.Add(10 * time.Second)
	_, m2 := h.holdOwn("alpha", "call_r2")

	// Before the window (expiry 5m, reminded 100s before): nothing.
	h.clock.Add(3*time.Minute + 9*time.Second) // r1 held 3m19s ago
	scans()
	if got := h.reminders(m1.ID); len(got) != 0 {
		t.Fatalf("reminded 101s before the lapse: %q", got[0].Plain)
	}

	h.clock.Add(2 * time.Second) // r1: 99s left; r2: 109s left
	rem := h.waitReminder(m1.ID)
	if !strings.Contains(rem.Text, mention(ravi)) || strings.Contains(rem.Text, "id=101") {
		t.Errorf("reminder of r1 is %q; want Ravi mentioned, not Asha (she approved)", rem.Text)
	}
	want := "⏰ Ravi: alpha's call to place_order (request " + shortID(r1.ID) + ") lapses at 14:05 IST unless it is decided. It needs one more."
	if rem.Plain != want {
		t.Errorf("reminder reads %q; want %q", rem.Plain, want)
	}
	if _, err := h.st.Note(t.Context(), bot.RemindKey(r1.ID)); err != nil {
		t.Errorf("no note of r1's reminder (what keeps it once across a restart): %v", err)
	}
	if rem.Silent || rem.ParseMode != "HTML" {
		t.Errorf("reminder silent=%v, parse mode %q; want a sound, in HTML", rem.Silent, rem.ParseMode)
	}
	scans()
	if got := h.reminders(m2.ID); len(got) != 0 {
		t.Errorf("r2 reminded before its window: %q", got[0].Plain)
	}

	h.restart()
	h.clock.Add(10 * time.Second) // r1: 89s left, still in its window; r2: 99s
	rem2 := h.waitReminder(m2.ID)
	if !strings.Contains(rem2.Text, mention(asha)) || !strings.Contains(rem2.Text, mention(ravi)) {
		t.Errorf("reminder of r2 is %q; want both approvers mentioned (neither answered)", rem2.Text)
	}
	scans()
	if got := h.reminders(m1.ID); len(got) != 1 {
		t.Errorf("r1 reminded %d times across a restart; want once", len(got))
	}
	if got := h.reminders(m2.ID); len(got) != 1 {
		t.Errorf("r2 reminded %d times; want once", len(got))
	}
}

// A reminder goes out within a quarter of its window of falling due, however
// seldom RemindEvery asks the scan to run: with APPROVAL_EXPIRY 15s (a 5s
// window) a scan every 5s reminded in the second before the lapse, or,
// on a busy machine, not at all.
func TestReminderGoesOutEarlyInItsWindowHoweverSeldomTheScan(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	h.shutdown()
	h.remind, h.remindEvery = 2*time.Second, time.Hour
	h.start()

	r, m := h.holdOwn("alpha", "call_soon")
	h.clock.Set(r.ExpiresAt.Add(-1500 * time.Millisecond)) // in the window; the clock stands still
	deskbottest.EventuallyWithin(t, 5*time.Second, "a reminder while the request is in its window", func() bool {
		return len(h.reminders(m.ID)) == 1
	})
}

// A request decided before its reminder's time gets none; nor does one
// whose expiry passed, even before the sweep lapsed it, nor one of a desk
// a risk rule halted (it cannot be allowed).
func TestNoReminderForADecidedOrLapsedRequestOrAHaltedDesk(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	h.shutdown()
	h.remind = 100 * time.Second
	h.start()

	_, denied := h.holdOwn("alpha", "call_denied")
	_, allowed := h.holdOwn("alpha", "call_allowed")
	r, lapsed := h.holdOwn("beta", "call_lapsed")
	h.answer(h.tap(asha, denied, "Deny"))
	h.answer(h.tap(ravi, allowed, "Allow once"))
	// Past the expiry in one step, the window jumped over; no sweep runs here.
	h.clock.Add(5*time.Minute + time.Second)
	if got, err := h.gate.Request(t.Context(), r.ID); err != nil || got.State != deskbot.StateOpen {
		t.Fatalf("the unswept request: %+v, %v; want still open", got, err)
	}
	// A halted desk's request cannot be allowed: no reminder asks for it.
	_, halted := h.holdOwn("alpha", "call_halted")
	if won, err := h.st.HaltDesk(t.Context(), "alpha", deskbot.Halt{Rule: deskbot.RuleMaxDailyLoss, Figures: "P&L today -₹6,000.00", At: h.clock.Now()}, deskbot.AuditEntry{Action: "halt", Desk: "alpha", By: "risk", At: h.clock.Now()}); err != nil || !won {
		t.Fatalf("halt: %v %v", won, err)
	}
	// A request in its window now shows that the scans run.
	_, control := h.holdOwn("beta", "call_control")
	h.clock.Add(3*time.Minute + 30*time.Second)
	h.waitReminder(control.ID)
	scans()
	for name, m := range map[string]telegramtest.Message{"denied": denied, "allowed": allowed, "lapsed": lapsed, "halted desk's": halted} {
		if got := h.reminders(m.ID); len(got) != 0 {
			t.Errorf("the %s request was reminded of: %q", name, got[0].Plain)
		}
	}
}

// With TELEGRAM_PIN a held call's message is pinned, without a sound, while
// its request is open, and unpinned when it is decided or lapses.
func TestPinnedWhileOpen(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	h.shutdown()
	h.pin = true
	h.tg.SetBotRights(groupID, true)
	h.start()

	_, m1 := h.holdOwn("alpha", "call_p1")
	_, m2 := h.holdOwn("alpha", "call_p2")
	pinned := func(want ...int) {
		t.Helper()
		deskbottest.Eventually(t, "the pinned messages to be "+itoaAll(want), func() bool {
			return slices.Equal(h.tg.Pinned(groupID), want)
		})
	}
	pinned(m1.ID, m2.ID)
	for _, c := range h.tg.Sent("pinChatMessage") {
		if !c.Silent {
			t.Errorf("pin of message %d sounded; the held call's own message already did", c.MessageID)
		}
	}
	h.answer(h.tap(asha, m1, "Allow once"))
	pinned(m2.ID)

	h.clock.Add(5*time.Minute + time.Second)
	if _, err := h.gate.Sweep(t.Context()); err != nil {
		t.Fatal(err)
	}
	h.waitMessage(func(m telegramtest.Message) bool { return m.ID == m2.ID && len(m.Keyboard) == 0 })
	pinned()
}

func itoaAll(ns []int) string { b, _ := json.Marshal(ns); return string(b) }

// A bot without the right to pin still shows the held call, unpinned, and
// says why in the log.
func TestPinWithoutTheRight(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	h.shutdown()
	h.pin = true
	h.tg.SetBotRights(groupID, false)
	h.start()

	_, m := h.holdOwn("alpha", "call_p")
	deskbottest.Eventually(t, "the refused pin to be logged", func() bool {
		return strings.Contains(h.logs.String(), "could not pin")
	})
	if got := h.tg.Pinned(groupID); len(got) != 0 {
		t.Errorf("pinned %v without the right", got)
	}
	if got := m.Labels(); len(got) != 5 {
		t.Errorf("the held call's buttons are %q; want all five (Change… with an order)", got)
	}
}

// TELEGRAM_QUIET sends what it lists without a sound (desk messages, an
// allowed call's outcome sent as a message of its own, the day's report);
// held calls and halts always sound.
func TestQuietListedKindsGoWithoutASound(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	h.shutdown()
	h.hush = bot.Quiet{DeskMessages: true, Fills: true, Reports: true}
	h.start()

	if m := h.sayAs("alpha", "Bought 10 RELIANCE."); !m.Silent {
		t.Errorf("desk message sounded under TELEGRAM_QUIET=desk_messages")
	}
	r, held := h.holdOwn("alpha", "call_q")
	if held.Silent {
		t.Errorf("held call went without a sound")
	}
	if err := h.st.Publish(t.Context(), deskbot.Event{Kind: deskbot.EventRisk, Desk: "alpha", Time: h.clock.Now(), Text: "Halted alpha: the day's loss passed its limit."}); err != nil {
		t.Fatal(err)
	}
	if halt := h.waitMessage(func(m telegramtest.Message) bool { return strings.Contains(m.Plain, "Halted alpha") }); halt.Silent {
		t.Errorf("halt went without a sound")
	}
	// The held call's message is gone for the outcome's edit, so the
	// allowed call's outcome comes as a message of its own.
	if err := h.st.PutNote(t.Context(), bot.RequestMessageKey(r.ID), itoa(groupID)+":99999", time.Hour); err != nil {
		t.Fatal(err)
	}
	h.answer(h.tap(asha, held, "Allow once"))
	fill := h.waitMessage(func(m telegramtest.Message) bool { return m.ID != held.ID && strings.Contains(m.Plain, shortID(r.ID)) })
	if !fill.Silent {
		t.Errorf("an allowed call's outcome sounded under TELEGRAM_QUIET=fills:\n%s", fill.Plain)
	}
	h.mustPnLDay()
	if err := h.bot.SendDayReport(t.Context()); err != nil {
		t.Fatal(err)
	}
	if rep := h.waitMessage(func(m telegramtest.Message) bool { return m.Photo }); !rep.Silent {
		t.Errorf("the day's report sounded under TELEGRAM_QUIET=reports")
	}
	for _, c := range h.tg.Sent("sendMessage") {
		if c.Markup != nil && len(c.Markup.Inline) > 0 && c.Silent {
			t.Errorf("message %d with buttons (a held call) went without a sound", c.MessageID)
		}
	}
}

// A request shown again at the bottom (what it would do changed) moves its
// pin to the new message: the old one, without buttons, is unpinned.
func TestPinMovesWhenARequestIsShownAgain(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	h.shutdown()
	h.pin = true
	h.tg.SetBotRights(groupID, true)
	h.start()
	ctx := t.Context()
	if _, err := h.broker.PlaceOrder(ctx, "alpha", deskbottest.NewKey(), deskbot.Order{Symbol: "TCS", Side: deskbot.Buy, Quantity: 10, Price: 4000}); err != nil {
		t.Fatal(err)
	}
	_, m := h.holdFlatten("alpha", `{}`)
	deskbottest.Eventually(t, "the held flatten pinned", func() bool { return slices.Equal(h.tg.Pinned(groupID), []int{m.ID}) })
	if _, err := h.broker.PlaceOrder(ctx, "alpha", deskbottest.NewKey(), deskbot.Order{Symbol: "INFY", Side: deskbot.Buy, Quantity: 100001, Price: 1500}); err != nil {
		t.Fatal(err)
	}
	h.answer(h.tap(asha, m, "Allow once"))
	again := h.waitMessage(func(x telegramtest.Message) bool {
		return x.ID > m.ID && strings.Contains(x.Plain, "Would close 2:") && len(x.Keyboard) > 0
	})
	deskbottest.Eventually(t, "the pin moved to the request shown again", func() bool {
		return slices.Equal(h.tg.Pinned(groupID), []int{again.ID})
	})
}

// The calls shown in a desk's digest are reminded of together: once the
// first is due, one reply to the digest names every row that lapses soon,
// with both approvers mentioned; a rescan as the others fall due sends
// nothing more. A flood is one reminder per digest, not one per call.
func TestDigestRowsAreRemindedInOneReply(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		apart time.Duration // between one hold and the next
	}{
		{"held at once", 0},
		{"held ten seconds apart", 10 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := mustE2E(t)
			h.shutdown()
			h.remind = 100 * time.Second
			h.tg.AddUser(asha)
			h.tg.AddUser(ravi)
			var rs []*deskbot.Request
			for i := range 5 {
				args := fmt.Sprintf(`{"symbol":"S%d","side":"buy","quantity":%d}`, i, i+1)
				r, _, err := h.gate.Hold(t.Context(), "alpha", fmt.Sprintf("trigger-%d", i), deskbot.ToolCall{ID: fmt.Sprintf("call_%d", i), Name: "place_order", Arguments: json.RawMessage(args)})
				if err != nil {
					t.Fatalf("hold: %v", err)
				}
				rs = append(rs, r)
				h.clock.Add(tt.apart)
			}
			h.start()
			digest := h.waitMessage(func(m telegramtest.Message) bool {
				return strings.Contains(m.Plain, "5 held calls waiting") && len(m.Keyboard) == 5
			})

			h.clock.Add(rs[0].ExpiresAt.Add(-h.remind + time.Second).Sub(h.clock.Now())) // the first is due
			rem := h.waitReminder(digest.ID)
			scans()
			h.clock.Add(4*tt.apart + time.Second) // and the last
			scans()

			var got []telegramtest.Message
			for _, m := range h.tg.BotMessages(groupID) {
				if strings.HasPrefix(m.Plain, "⏰") {
					got = append(got, m)
				}
			}
			if len(got) != 1 {
				for _, m := range got {
					t.Logf("reminder, a reply to #%d: %q", m.ReplyTo, m.Plain)
				}
				t.Fatalf("%d reminders; want one reply to the digest (#%d)", len(got), digest.ID)
			}
			for _, r := range rs {
				if !strings.Contains(rem.Plain, shortID(r.ID)) {
					t.Errorf("the reminder does not name request %s: %q", shortID(r.ID), rem.Plain)
				}
			}
			if !strings.Contains(rem.Text, mention(asha)) || !strings.Contains(rem.Text, mention(ravi)) {
				t.Errorf("reminder is %q; want both approvers mentioned", rem.Text)
			}
		})
	}
}
