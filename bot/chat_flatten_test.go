package bot_test

import (
	"encoding/json"
	"github.com/deskbot/deskbot/deskbottest"
	"strings"
	"testing"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/bot"
	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/words"
)

// holdFlatten holds the desk's flatten_desk, called with args, and waits
// for its message.
func (h *e2e) holdFlatten(desk, args string) (*deskbot.Request, telegramtest.Message) {
	h.t.Helper()
	r, _, err := h.gate.Hold(h.t.Context(), desk, "trigger-1", deskbot.ToolCall{ID: "call_f", Name: deskbot.ToolFlattenDesk, Arguments: json.RawMessage(args)})
	if err != nil {
		h.t.Fatalf("hold: %v", err)
	}
	m := h.waitMessage(func(m telegramtest.Message) bool {
		return strings.Contains(m.Plain, shortID(r.ID)) && len(m.Keyboard) > 0
	})
	h.waitNote(bot.RequestMessageKey(r.ID))
	return r, m
}

// A held call with no arguments reads as such, with no empty "{}", and is
// named by a short id; its buttons still carry the whole id.
func TestHeldCallWithNoArgumentsAndShortID(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	for _, args := range []string{`{}`, `null`} {
		t.Run(args, func(t *testing.T) {
			r, m := h.holdFlatten("beta", args)
			if !strings.Contains(m.Plain, "beta wants to run flatten_desk with no arguments\n") || strings.Contains(m.Plain, args) {
				t.Errorf("message reads %q; want no arguments said, not %s shown", m.Plain, args)
			}
			if want := "\nRequest " + r.ID[:8] + "\n"; !strings.Contains(m.Plain, want) || strings.Contains(m.Plain, r.ID) {
				t.Errorf("message reads %q; want %q and not the whole id", m.Plain, want)
			}
			for _, row := range m.Keyboard {
				for _, btn := range row {
					if !strings.HasSuffix(btn.Data, r.ID) {
						t.Errorf("button %q carries %q; want the whole id", btn.Text, btn.Data)
					}
				}
			}
			h.answer(h.tap(asha, m, "Deny"))
		})
	}
}

// A decided flatten's message ends as the record of what it closed, not a
// guess that the book could not be read.
func TestDecidedFlattenSaysWhatWasClosed(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	ctx := t.Context()
	for _, o := range []deskbot.Order{
		{Symbol: "RELIANCE", Side: deskbot.Buy, Quantity: 6, Price: 100},
		{Symbol: "INFY", Side: deskbot.Sell, Quantity: 2, Price: 1500},
	} {
		if _, err := h.broker.PlaceOrder(ctx, "alpha", deskbottest.NewKey(), o); err != nil {
			t.Fatal(err)
		}
	}
	r, m := h.holdFlatten("alpha", `{}`)
	if !strings.Contains(m.Plain, "Would close 2:") {
		t.Errorf("held flatten reads %q; want what it would close", m.Plain)
	}
	if got, _ := h.answer(h.tap(asha, m, "Allow once")); got != "Allowed; running…" {
		t.Errorf("allow answered %q", got)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, x := range h.tg.BotMessages(groupID) {
				t.Logf("bot #%d: %q", x.ID, x.Plain)
			}
		}
	})
	done := h.waitMessage(func(x telegramtest.Message) bool {
		return x.ID == m.ID && len(x.Keyboard) == 0 && strings.Contains(x.Plain, "Ran")
	})
	for _, want := range []string{
		"Allowed once by Asha",
		"Flattened 2 positions: bought 2 INFY @ 1,500.00 (realised +₹0.00), sold 6 RELIANCE @ 100.00 (realised +₹0.00). Realised P&L +₹0.00.",
	} {
		if !strings.Contains(done.Plain, want) {
			t.Errorf("decided flatten reads %q; missing %q", done.Plain, want)
		}
	}
	for _, not := range []string{"could not be read", "Would close"} {
		if strings.Contains(done.Plain, not) {
			t.Errorf("decided flatten reads %q; want no %q", done.Plain, not)
		}
	}
	if got, err := h.gate.Request(ctx, r.ID); err != nil || got.State != deskbot.StateRan {
		t.Errorf("request after allow: %v, %v; want ran", got, err)
	}
}

// Yes to exactly what runs: a held flatten shows its plan; the desk then
// trades (an unguarded order) and the plan the approver read is no longer
// what would run. Their Allow runs nothing: the tap says so, the old
// message loses its buttons, and the request is shown again at the bottom
// with the new plan; an Allow there runs that plan.
func TestHostileFlattenWhosePlanChangedIsAskedAgain(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	ctx := t.Context()
	if _, err := h.broker.PlaceOrder(ctx, "alpha", deskbottest.NewKey(), deskbot.Order{Symbol: "TCS", Side: deskbot.Buy, Quantity: 10, Price: 4000}); err != nil {
		t.Fatal(err)
	}
	r, m := h.holdFlatten("alpha", `{}`)
	if !strings.Contains(m.Plain, "Would close 1:") {
		t.Fatalf("held flatten reads %q; want its plan", m.Plain)
	}
	// The desk buys more while the flatten waits: flattening now would
	// close a position nobody was shown.
	if _, err := h.broker.PlaceOrder(ctx, "alpha", deskbottest.NewKey(), deskbot.Order{Symbol: "INFY", Side: deskbot.Buy, Quantity: 100001, Price: 1500}); err != nil {
		t.Fatal(err)
	}
	if got, _ := h.answer(h.tap(asha, m, "Allow once")); got != words.ChangedSinceShown {
		t.Errorf("allow of a changed plan answered %q; want %q", got, words.ChangedSinceShown)
	}
	if cur, _ := h.gate.Request(ctx, r.ID); cur.State != deskbot.StateOpen {
		t.Errorf("request after the refused allow is %s; want open", cur.State)
	}
	if book, _ := h.broker.Book(ctx, "alpha"); len(book.Positions) != 2 {
		t.Errorf("book after the refused allow = %+v; want both positions untouched", book)
	}
	h.waitMessage(func(x telegramtest.Message) bool {
		return x.ID == m.ID && len(x.Keyboard) == 0 && strings.Contains(x.Plain, "shown again below")
	})
	again := h.waitMessage(func(x telegramtest.Message) bool {
		return x.ID > m.ID && strings.Contains(x.Plain, "Would close 2:") && len(x.Keyboard) > 0
	})
	if got, _ := h.answer(h.tap(asha, again, "Allow once")); got != "Allowed; running…" {
		t.Errorf("allow of the plan shown again answered %q", got)
	}
	h.waitMessage(func(x telegramtest.Message) bool {
		return x.ID == again.ID && strings.Contains(x.Plain, "Flattened 2 positions")
	})
	if book, _ := h.broker.Book(ctx, "alpha"); len(book.Positions) != 0 {
		t.Errorf("book after the allow of the plan shown = %+v; want flat", book)
	}
}

// /flatten's confirmation lists what it will close, desk by desk, before
// anyone taps Yes.
func TestFlattenConfirmationListsWhatItCloses(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	ctx := t.Context()
	for _, o := range []deskbot.Order{
		{Symbol: "RELIANCE", Side: deskbot.Buy, Quantity: 6, Price: 100},
		{Symbol: "INFY", Side: deskbot.Sell, Quantity: 2, Price: 1500},
	} {
		if _, err := h.broker.PlaceOrder(ctx, "alpha", deskbottest.NewKey(), o); err != nil {
			t.Fatal(err)
		}
	}
	got := h.replyTo(groupID, h.say(asha, "/flatten all", 0))
	for _, want := range []string{
		"alpha would close 2:\n",
		"• SELL 6 RELIANCE MARKET (closes long 6 at about ₹100.00, open +\u2060₹0.00)",
		"• BUY 2 INFY MARKET (closes short 2 at about ₹1,500.00, open +\u2060₹0.00)",
		"beta: no open positions.",
	} {
		if !strings.Contains(got.Plain, want) {
			t.Errorf("/flatten all asks:\n%s\nwant %q", got.Plain, want)
		}
	}
	if trs := h.triggers("alpha"); len(trs) != 0 {
		t.Errorf("asking to confirm flattened: %+v", trs)
	}
}

// A flatten's P&L keeps its sign on the line of its ₹ in the chat (joined
// where the chat's text goes out); the same words told to the desk's
// model carry no joiner, which it would read as a stray character.
func TestFlattenSignsAreJoinedInTheChatOnly(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	ctx := t.Context()
	if _, err := h.broker.PlaceOrder(ctx, "alpha", deskbottest.NewKey(), deskbot.Order{Symbol: "RELIANCE", Side: deskbot.Buy, Quantity: 6, Price: 100}); err != nil {
		t.Fatal(err)
	}
	confirm := h.replyTo(groupID, h.say(asha, "/flatten alpha", 0))
	h.answer(h.tap(asha, confirm, "Yes, flatten alpha"))
	done := h.waitMessage(func(x telegramtest.Message) bool {
		return x.ID == confirm.ID && strings.HasPrefix(x.Plain, "Flattened by Asha")
	})
	if !strings.Contains(done.Plain, "Realised P&L +\u2060₹0.00.") {
		t.Errorf("the chat reads %q; want the sign joined to its ₹", done.Plain)
	}
	trs := h.waitTriggers("alpha", 1)
	if text := trs[0].Text; !strings.Contains(text, "Realised P&L +₹0.00.") || strings.ContainsRune(text, '\u2060') {
		t.Errorf("the desk's model reads %q; want its money as words writes it, with no joiner", text)
	}
}
