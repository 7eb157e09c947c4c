package bot_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/bot"
	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/deskbottest"
	tele "gopkg.in/telebot.v3"
)

func TestDenyThenReasonReachesTheDesk(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	r, m := h.mustHoldShown("alpha")
	if got, _ := h.answer(h.tap(asha, m, "Deny")); got != "Denied; it will not run." {
		t.Errorf("deny answered %q", got)
	}
	prompt := h.reasonPrompt()
	if !prompt.ForceReply || !slicesHas(prompt.Labels(), "Skip") {
		t.Errorf("prompt: force reply %v, buttons %q; want a forced reply with Skip", prompt.ForceReply, prompt.Labels())
	}
	// Denied at once: no decision after it can run the call.
	if got, _ := h.gate.Request(t.Context(), r.ID); got.State != deskbot.StateDenied {
		t.Fatalf("state after Deny = %v, want denied", got.State)
	}
	if trs := h.triggers("alpha"); len(trs) != 0 {
		t.Fatalf("desk told before the reason came: %+v", trs)
	}

	id := h.say(asha, "Too big before the results; <b>wait</b> till Monday", prompt.ID)
	h.replyTo(groupID, id)
	trs := h.waitTriggers("alpha", 1)
	if !strings.Contains(trs[0].Text, "denied") || !strings.Contains(trs[0].Text, "Their reason: Too big before the results; <b>wait</b> till Monday") {
		t.Errorf("desk was told %q, want the denial with the reason", trs[0].Text)
	}
	h.waitMessage(func(x telegramtest.Message) bool {
		return x.ID == m.ID && len(x.Keyboard) == 0 && strings.Contains(x.Plain, "Denied by Asha")
	})
	if h.tool.Runs() != 0 {
		t.Errorf("a denied call ran")
	}
}

func TestSkipTellsTheDeskWithoutAReason(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	_, m := h.mustHoldShown("beta")
	h.answer(h.tap(ravi, m, "Deny"))
	prompt := h.reasonPrompt()
	if got, _ := h.answer(h.tap(stranger, prompt, "Skip")); got != "Only approvers can decide; nothing was changed." {
		t.Errorf("stranger's skip answered %q", got)
	}
	if got, _ := h.answer(h.tap(ravi, prompt, "Skip")); got != "Skipped; beta is told now." {
		t.Errorf("skip answered %q", got)
	}
	trs := h.waitTriggers("beta", 1)
	if strings.Contains(trs[0].Text, "reason") {
		t.Errorf("desk was told %q, want no reason", trs[0].Text)
	}
	if got, _ := h.answer(h.tap(ravi, prompt, "Skip")); got != "The desk was already told of this denial." {
		t.Errorf("second skip answered %q", got)
	}
	if trs := h.triggers("beta"); len(trs) != 0 {
		t.Errorf("desk told twice: %+v", trs)
	}
}

func TestTellAndReplyToADeskMessageQueueTriggers(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	ctx := t.Context()
	id := h.say(asha, "/tell alpha Keep it under 1 lakh today\nand log it", 0)
	h.waitReaction(groupID, id)
	trs := h.waitTriggers("alpha", 1)
	if trs[0].Kind != deskbot.TriggerMessage || trs[0].From != "Asha" || trs[0].Text != "Keep it under 1 lakh today\nand log it" {
		t.Errorf("trigger = %+v", trs[0])
	}

	if err := h.st.Publish(ctx, deskbot.Event{Kind: deskbot.EventDeskMessage, Desk: "beta", Time: h.clock.Now(), Text: "Bought 10 RELIANCE."}); err != nil {
		t.Fatal(err)
	}
	dm := h.waitMessage(func(x telegramtest.Message) bool { return strings.Contains(x.Plain, "Bought 10 RELIANCE.") })
	h.waitNote(bot.DeskMessageKey(groupID, dm.ID))
	h.waitReaction(groupID, h.say(ravi, "Why RELIANCE?", dm.ID))
	trs = h.waitTriggers("beta", 1)
	if trs[0].Text != "Why RELIANCE?" || trs[0].From != "Ravi" {
		t.Errorf("reply trigger = %+v", trs[0])
	}

	h.replyTo(groupID, h.say(stranger, "/tell alpha buy everything", 0))
	if trs := h.triggers("alpha"); len(trs) != 0 {
		t.Errorf("a stranger's /tell reached the desk: %+v", trs)
	}
}

// Telegram delivers the last batch of updates again after a crash; the same
// /tell delivered twice (even at once) tells the desk once.
func TestRedeliveredTellIsDoneOnce(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	u := tele.Update{ID: 4242, Message: &tele.Message{
		ID: 77, Chat: &tele.Chat{ID: groupID, Type: tele.ChatSuperGroup},
		Sender: &tele.User{ID: asha.ID, FirstName: asha.FirstName}, Text: "/tell alpha sell half",
		Entities: tele.Entities{{Type: tele.EntityCommand, Offset: 0, Length: 5}},
	}}
	h.bot.Deliver(u)
	h.bot.Deliver(u)
	h.replyTo(groupID, 77)
	h.shutdown() // waits for both handlers
	if trs := h.triggers("alpha"); len(trs) != 1 {
		t.Errorf("desk got %d triggers from one redelivered /tell, want 1", len(trs))
	}
	if n := len(h.tg.BotMessages(groupID)); n != 1 {
		t.Errorf("bot answered %d times, want once: %+v", n, h.tg.BotMessages(groupID))
	}
}

func TestFlattenAsksThenCloses(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	ctx := t.Context()
	if _, err := h.broker.PlaceOrder(ctx, "alpha", deskbottest.NewKey(), deskbot.Order{Symbol: "RELIANCE", Side: deskbot.Buy, Quantity: 10, Price: 100}); err != nil {
		t.Fatal(err)
	}
	h.replyTo(groupID, h.say(asha, "/flatten", 0))
	choices := h.waitMessage(func(x telegramtest.Message) bool { return x.Plain == "Flatten which desk?" })
	if got := choices.Labels(); !slicesEqual(got, []string{"alpha", "beta", "all"}) {
		t.Errorf("/flatten offers %q", got)
	}
	h.answer(h.tap(asha, choices, "alpha"))
	confirm := h.waitMessage(func(x telegramtest.Message) bool { return strings.HasPrefix(x.Plain, "Flatten desk alpha?") })
	if book, _ := h.broker.Book(ctx, "alpha"); len(book.Positions) != 1 {
		t.Fatalf("positions closed before the confirmation tap: %+v", book)
	}
	q1 := h.tap(ravi, confirm, "Yes, flatten alpha")
	q2 := h.tap(asha, confirm, "Yes, flatten alpha")
	h.answer(q1)
	h.answer(q2)
	done := h.waitMessage(func(x telegramtest.Message) bool {
		return x.ID == confirm.ID && strings.Contains(x.Plain, "Flattened 1 position")
	})
	if len(done.Keyboard) != 0 {
		t.Errorf("flatten report still has buttons: %q", done.Labels())
	}
	if book, _ := h.broker.Book(ctx, "alpha"); len(book.Positions) != 0 {
		t.Errorf("positions left after flatten: %+v", book)
	}
	trs := h.waitTriggers("alpha", 1)
	if want := "The user flattened this desk at 14:00 India time: Flattened 1 position"; !strings.HasPrefix(trs[0].Text, want) || trs[0].Kind != deskbot.TriggerFlatten {
		t.Errorf("desk told %q (%s), want it to start %q", trs[0].Text, trs[0].Kind, want)
	}
	if trs := h.triggers("alpha"); len(trs) != 0 {
		t.Errorf("two confirmation taps flattened twice: %+v", trs)
	}
}

func TestPauseAndResume(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	ctx := t.Context()
	if got := h.replyTo(groupID, h.say(asha, "/pause all", 0)).Plain; got != "Paused alpha, beta." {
		t.Errorf("/pause all answered %q", got)
	}
	for _, d := range []string{"alpha", "beta"} {
		if st, _ := h.st.DeskStatus(ctx, d); !st.Paused {
			t.Errorf("%s not paused", d)
		}
	}
	if got := h.replyTo(groupID, h.say(asha, "/desks", 0)).Plain; !strings.Contains(got, "alpha – paused") {
		t.Errorf("/desks shows %q, want alpha paused", got)
	}
	if got := h.replyTo(groupID, h.say(ravi, "/resume@"+telegramtest.BotUser.Username+" beta", 0)).Plain; got != "Resumed beta." {
		t.Errorf("/resume@bot answered %q", got)
	}
	if st, _ := h.st.DeskStatus(ctx, "beta"); st.Paused {
		t.Errorf("beta still paused")
	}
	if got := h.replyTo(groupID, h.say(stranger, "/resume alpha", 0)).Plain; got != "Only approvers can resume a desk." {
		t.Errorf("stranger's /resume answered %q", got)
	}
	if st, _ := h.st.DeskStatus(ctx, "alpha"); !st.Paused {
		t.Errorf("a stranger resumed alpha")
	}
}

func TestRevokingAGrantBringsTheGateBack(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	ctx := t.Context()
	_, m := h.mustHoldShown("alpha")
	h.grant(asha, m)
	h.waitMessage(func(x telegramtest.Message) bool { return x.ID == m.ID && strings.Contains(x.Plain, "Ran") })
	sized := deskbot.ToolCall{Name: "place_order", Order: &deskbot.SizedOrder{Exposure: 25000}}
	if need, _, _ := h.gate.Permission(ctx, "alpha", sized); need {
		t.Fatalf("always allow left the gate closed")
	}
	grants := h.replyTo(groupID, h.say(ravi, "/grants", 0))
	if got := grants.Labels(); !slicesEqual(got, []string{"Revoke alpha/place_order"}) {
		t.Fatalf("/grants buttons = %q", got)
	}
	if got, _ := h.answer(h.tap(ravi, grants, "Revoke alpha/place_order")); !strings.HasPrefix(got, "Revoked") {
		t.Errorf("revoke answered %q", got)
	}
	if need, _, _ := h.gate.Permission(ctx, "alpha", sized); !need {
		t.Errorf("the gate does not hold place_order again after the revoke")
	}
	h.waitMessage(func(x telegramtest.Message) bool {
		return x.ID == grants.ID && strings.HasPrefix(x.Plain, "No standing grants")
	})
}

func TestWhoamiAnswersAnyoneOtherChatsAreIgnored(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	const otherGroup = int64(-100999)
	got := h.replyTo(otherGroup, h.tg.InjectText(stranger, otherGroup, "/whoami", 0)).Plain
	if want := "Your user id: 999\nThis chat's id: -100999"; got != want {
		t.Errorf("/whoami answered %q, want %q", got, want)
	}
	// A stranger's private chat, and an approver's command in a foreign group.
	h.tg.InjectText(stranger, stranger.ID, "/desks", 0)
	h.tg.InjectText(asha, otherGroup, "/tell alpha hello", 0)
	h.tg.InjectText(stranger, otherGroup, "/pause all", 0)
	// An approver's private chat is served: its answer comes after the
	// ignored updates, so by then they were handled.
	h.replyTo(asha.ID, h.tg.InjectText(asha, asha.ID, "/help", 0))
	h.shutdown() // waits for every handler
	if n := len(h.tg.BotMessages(otherGroup)); n != 1 {
		t.Errorf("bot sent %d messages to a foreign group, want only the /whoami answer", n)
	}
	if n := len(h.tg.BotMessages(stranger.ID)); n != 0 {
		t.Errorf("bot answered a stranger's private chat %d times", n)
	}
	if trs := h.triggers("alpha"); len(trs) != 0 {
		t.Errorf("a /tell from a foreign group reached the desk: %+v", trs)
	}
}

func TestUnknownDeskAndMissingArgumentsGetUsage(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	for _, tc := range []struct{ text, want string }{
		{"/tell gamma hello", "There is no desk named gamma. Usage: /tell <desk> <text>. Desks: alpha, beta."},
		{"/tell alpha", "Usage: /tell <desk> <text>. Desks: alpha, beta."},
		{"/flatten gamma", "There is no desk named gamma. Usage: /flatten <desk|all>. Desks: alpha, beta."},
		{"/pause", "Usage: /pause <desk|all>. Desks: alpha, beta."},
		{"/resume <b>x</b>", "There is no desk named <b>x</b>. Usage: /resume <desk|all>. Desks: alpha, beta."},
	} {
		if got := h.replyTo(groupID, h.say(asha, tc.text, 0)).Plain; got != tc.want {
			t.Errorf("%s answered %q, want %q", tc.text, got, tc.want)
		}
	}
}

// reasonPrompt waits for the bot's reason prompt and for the note that
// routes a reply to it: the bot writes the note once Telegram has given the
// prompt its id, so a reply sent the moment the prompt shows could come
// before it (a person is never that fast).
func (h *e2e) reasonPrompt() telegramtest.Message {
	h.t.Helper()
	prompt := h.waitMessage(func(x telegramtest.Message) bool { return strings.HasPrefix(x.Plain, bot.ReasonPrompt) })
	h.waitNote(bot.ReasonPromptKey(groupID, prompt.ID))
	return prompt
}

// waitNote waits until the outbox wrote key.
func (h *e2e) waitNote(key string) {
	h.t.Helper()
	deskbottest.Eventually(h.t, "the note "+key, func() bool {
		_, err := h.st.Note(context.Background(), key)
		return err == nil
	})
}

func slicesHas(ss []string, s string) bool { return slices.Contains(ss, s) }
func slicesEqual(a, b []string) bool       { return slices.Equal(a, b) }

// Telegram failing (a refused send, a wrong token) leaves no trace of the
// token: every test's logs and chat are checked for it at cleanup, and here
// the failures that quote URLs are provoked on purpose.
func TestTokenNeverShown(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	h.tg.Fail(telegramtest.Failure{Method: "sendMessage", Code: 400, Description: "Bad Request: chat not found", Times: 1})
	h.say(asha, "/help", 0)
	deskbottest.Eventually(t, "Telegram to refuse a send", func() bool {
		for _, c := range h.tg.Calls("sendMessage") {
			if c.Status == 400 {
				return true
			}
		}
		return false
	})
	h.replyTo(groupID, h.say(asha, "/help", 0))

	_, err := bot.New(bot.Config{Token: "999:wrong-token-kept-secret", APIURL: h.tg.URL, ChatID: groupID, Approvers: []int64{asha.ID}}, bot.Deps{}, quiet())
	if err == nil || strings.Contains(err.Error(), "wrong-token-kept-secret") {
		t.Errorf("New with a wrong token: %v; want an error that does not quote the token", err)
	}
}

// panicky is a broker whose Book panics, as a bug in a dependency would.
type panicky struct{ deskbot.Broker }

func (panicky) Book(context.Context, string) (deskbot.Book, error) { panic("book exploded") }

// telebot runs each handler in its own goroutine without recovery: one
// panic would end the service. The bot recovers it, logs it, and goes on.
func TestHandlerPanicIsRecovered(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	h.brokerFor = func(b deskbot.Broker) deskbot.Broker { return panicky{b} }
	h.restart()
	if got := h.replyTo(groupID, h.say(asha, "/desks", 0)).Plain; !strings.HasPrefix(got, "Something went wrong on our side") {
		t.Errorf("/desks that panicked answered %q", got)
	}
	if got := h.replyTo(groupID, h.say(asha, "/whoami", 0)).Plain; !strings.HasPrefix(got, "Your user id: 101") {
		t.Errorf("after a panic /whoami answered %q", got)
	}
	h.shutdown()
	if !strings.Contains(h.logs.String(), "panic in a Telegram handler") || !strings.Contains(h.logs.String(), "book exploded") {
		t.Errorf("the panic was not logged")
	}
}

func TestDesksAndRequestsShowTheState(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	ctx := t.Context()
	if _, err := h.broker.PlaceOrder(ctx, "alpha", deskbottest.NewKey(), deskbot.Order{Symbol: "RELIANCE", Side: deskbot.Buy, Quantity: 10, Price: 100}); err != nil {
		t.Fatal(err)
	}
	if err := h.st.AnnounceDeskState(ctx, "alpha", deskbot.DeskWaiting, h.clock.Now()); err != nil {
		t.Fatal(err)
	}
	r, _ := h.mustHoldShown("alpha")
	desks := h.replyTo(groupID, h.say(ravi, "/desks", 0))
	for _, want := range []string{"alpha – waiting for approval; 1 open request; last activity 14:00 IST", "RELIANCE: long 10", "beta – idle; no open requests; no activity yet"} {
		if !strings.Contains(desks.Plain, want) {
			t.Errorf("/desks shows %q; want it to contain %q", desks.Plain, want)
		}
	}
	if got := desks.Labels(); !slices.Equal(got, []string{"Flatten alpha", "Flatten beta"}) {
		t.Errorf("/desks buttons = %q", got)
	}

	again := h.replyTo(groupID, h.say(ravi, "/requests", 0))
	if !strings.Contains(again.Plain, shortID(r.ID)) || !slices.Equal(again.Labels(), []string{"Allow once", "Always allow", "Deny", "Why?", "Change…"}) {
		t.Fatalf("/requests showed %q with %q", again.Plain, again.Labels())
	}
	if got, _ := h.answer(h.tap(ravi, again, "Allow once")); got != "Allowed; running…" {
		t.Errorf("tap on the /requests copy answered %q", got)
	}
	h.waitTriggers("alpha", 1)
	if h.tool.Runs() != 1 {
		t.Errorf("tool ran %d times, want 1", h.tool.Runs())
	}
}

// slowNotes is a Redis slow to write a note: the routing note of a prompt
// is written well after the prompt shows in the chat.
type slowNotes struct {
	deskbot.FencedNotes
	wait time.Duration
}

func (n slowNotes) PutNote(ctx context.Context, key, value string, ttl time.Duration) error {
	time.Sleep(n.wait)
	return n.FencedNotes.PutNote(ctx, key, value, ttl)
}

// A reply typed the moment the reason prompt shows is the reason, however
// slowly the note that routes it is written: it is read once the prompt is
// set up, never taken for chatter.
func TestReplyToAPromptJustShownIsRouted(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	h.notesFor = func(n deskbot.FencedNotes) deskbot.FencedNotes { return slowNotes{n, 300 * time.Millisecond} }
	h.restart()
	_, m := h.mustHoldShown("alpha")
	h.answer(h.tap(asha, m, "Deny"))
	prompt := h.waitMessage(func(x telegramtest.Message) bool { return strings.HasPrefix(x.Plain, bot.ReasonPrompt) })
	h.replyTo(groupID, h.say(asha, "Too big today.", prompt.ID))
	trs := h.waitTriggers("alpha", 1)
	if len(trs) != 1 || !strings.Contains(trs[0].Text, "Their reason: Too big today.") {
		t.Errorf("desk alpha got %+v, want the denial with Asha's reason", trs)
	}
}
