package bot_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/agent"
	"github.com/deskbot/deskbot/bot"
	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/broker/brokertest"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/gate"
	"github.com/deskbot/deskbot/gate/gatetest"
	"github.com/deskbot/deskbot/store"
	"github.com/deskbot/deskbot/store/storetest"
)

// The cast: two approvers and a stranger in the team's group.
var (
	asha     = telegramtest.User{ID: 101, FirstName: "Asha", Username: "asha_k"}
	ravi     = telegramtest.User{ID: 102, FirstName: "Ravi"}
	stranger = telegramtest.User{ID: 999, FirstName: "Mallory"}
)

const (
	groupID   = int64(-100200300)
	testToken = "123456:TEST-token-never-shown"
)

// e2e is the whole service in-process: real Redis, the real gate with a
// real registry, the paper broker, the fake Bot API and the real telebot
// client under the bot.
type e2e struct {
	t      testing.TB
	tg     *telegramtest.Server
	st     *store.Store
	gate   *gate.Gate
	broker atMarket
	tool   *deskbottest.Tool  // a guarded place_order that counts its runs and says when one starts
	clock  *deskbottest.Clock // the service's injected clock; it starts at 14:00 IST
	bot    *bot.Bot
	stop   context.CancelFunc
	done   chan error
	logs   *logBuffer
	// brokerFor, when set, replaces the broker the next start gives the bot.
	brokerFor func(deskbot.Broker) deskbot.Broker
	// topics turns forum topics per desk on for the next start.
	topics bool
	// inboxFor, when set, replaces the desks' inbox the next start gives the bot.
	inboxFor func(deskbot.Inbox) deskbot.Inbox
	// notesFor, when set, replaces the notes the next start gives the bot.
	notesFor func(deskbot.FencedNotes) deskbot.FencedNotes
	// remind, pin and hush are the next start's APPROVAL_REMIND,
	// TELEGRAM_PIN and TELEGRAM_QUIET; reminders are scanned for every
	// 10ms of real time, or every remindEvery when set.
	remind      time.Duration
	remindEvery time.Duration
	pin         bool
	hush        bot.Quiet
	// policies are the next start's desk policies (a held order's product).
	policies deskbot.Policies
	// market is the next start's market (the hub) for positions' prices.
	market deskbot.Market
}

// atMarket is the paper broker over a market that the harness's own
// trades move to their price just before they fill: the tests set up
// books at the prices they choose, and the desks here trade through a
// counting tool, never through this broker.
type atMarket struct {
	*broker.Paper
	market *brokertest.Quotes
}

func (b atMarket) PlaceOrder(ctx context.Context, desk, key string, o deskbot.Order) (deskbot.PlacedOrder, error) {
	b.market.Set(o.Symbol, o.Price)
	return b.Paper.PlaceOrder(ctx, desk, key, o)
}

// logBuffer collects the bot's logs, to check that the token never reaches them.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if os.Getenv("BOT_TEST_LOG") != "" {
		os.Stderr.Write(p)
	}
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func mustE2E(t testing.TB) *e2e {
	t.Helper()
	h := &e2e{
		t:  t,
		tg: telegramtest.New(t, testToken),
		st: storetest.MustOpen(t),
		tool: &deskbottest.Tool{ToolName: deskbot.ToolPlaceOrder, About: "Places an order.",
			Result: deskbot.ToolResult{Text: "bought 10 RELIANCE @ 100.00"}, Started: make(chan struct{}, 16)},
		clock: deskbottest.NewClock(time.Date(2026, 11, 30, 8, 30, 0, 0, time.UTC)),
		logs:  &logBuffer{},
	}
	t.Cleanup(h.checkToken)
	market := &brokertest.Quotes{}
	h.broker = atMarket{Paper: broker.NewPaperMarket(h.st, h.clock.Now, market), market: market}
	// The broker's own flatten_desk runs beside the counting place_order,
	// so a held flatten closes real paper positions.
	var flatten deskbot.Tool
	for _, tl := range broker.Tools(h.broker, nil, nil) {
		if tl.Name() == deskbot.ToolFlattenDesk {
			flatten = tl
		}
	}
	regs := agent.Registries{"alpha": agent.NewRegistry(h.tool, flatten), "beta": agent.NewRegistry(h.tool, flatten)}
	h.gate = gatetest.MustNew(t, gate.Config{Tools: []string{"place_order", "flatten_desk"}, Expiry: 5 * time.Minute, DenyReasonWait: 2 * time.Minute, Books: h.broker,
		GrantTTL: 2 * time.Hour, GrantMaxNotional: 50000, Limits: gatetest.HardLimits(nil, nil, h.broker, h.st, h.clock.Now)},
		h.st, regs, h.clock.Now, quiet())
	h.start()
	return h
}

// start runs a bot on the harness's store, as a service (re)start would.
func (h *e2e) start() {
	h.t.Helper()
	var br deskbot.Broker = h.broker
	if h.brokerFor != nil {
		br = h.brokerFor(br)
	}
	var inbox deskbot.Inbox = h.st
	if h.inboxFor != nil {
		inbox = h.inboxFor(inbox)
	}
	var notes deskbot.FencedNotes = h.st
	if h.notesFor != nil {
		notes = h.notesFor(notes)
	}
	b, err := bot.New(bot.Config{
		Token: testToken, APIURL: h.tg.URL, ChatID: groupID,
		Approvers: []int64{asha.ID, ravi.ID}, PollTimeout: time.Second,
		Desks: []string{"alpha", "beta"}, DataDir: h.t.TempDir(), Now: h.clock.Now,
		Sender: fastSender(), Topics: h.topics,
		Remind: h.remind, RemindEvery: cmp.Or(h.remindEvery, 10*time.Millisecond), Pin: h.pin, Quiet: h.hush,
		Policies: h.policies,
	}, bot.Deps{
		Gate: h.gate, Inbox: inbox, Desks: h.st, Broker: br, Requests: h.st,
		Notes: notes, Events: h.st, Audit: h.st, Risk: h.st, Watches: h.st, Market: h.market,
	}, slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		h.t.Fatalf("bot.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.bot, h.stop, h.done = b, cancel, make(chan error, 1)
	go func() { h.done <- b.Run(ctx) }()
	h.t.Cleanup(h.shutdown)
}

// shutdown stops the bot and checks that Run returned cleanly.
func (h *e2e) shutdown() {
	if h.stop == nil {
		return
	}
	h.stop()
	select {
	case err := <-h.done:
		if err != nil && !errors.Is(err, context.Canceled) {
			h.t.Errorf("Run returned %v", err)
		}
	case <-time.After(10 * time.Second):
		h.t.Errorf("Run did not return within 10s of its context ending")
	}
	h.stop = nil
}

// checkToken fails the test if the token reached a log line or the chat.
func (h *e2e) checkToken() {
	h.shutdown()
	if strings.Contains(h.logs.String(), testToken) {
		h.t.Errorf("the bot token appears in the logs")
	}
	for _, chat := range []int64{groupID, asha.ID, ravi.ID, stranger.ID, -100999} {
		for _, m := range h.tg.BotMessages(chat) {
			if strings.Contains(m.Text, testToken) {
				h.t.Errorf("the bot token appears in a chat message: %q", m.Text)
			}
		}
	}
}

// restart stops the bot and starts a new one on the same Redis.
func (h *e2e) restart() {
	h.t.Helper()
	h.shutdown()
	h.start()
}

// mustHoldShown holds an order on desk (gatetest.MustHold) and waits for
// its message in the group.
func (h *e2e) mustHoldShown(desk string) (*deskbot.Request, telegramtest.Message) {
	h.t.Helper()
	r := gatetest.MustHold(h.t, h.gate, desk, "place_order", `{"symbol":"RELIANCE","side":"buy","quantity":10}`)
	m := h.waitMessage(func(m telegramtest.Message) bool {
		return strings.Contains(m.Text, shortID(r.ID)) && len(m.Keyboard) > 0
	})
	// The outbox records the message right after Telegram accepts it; wait
	// for that, so a restart that follows does not fall in between.
	deskbottest.Eventually(h.t, "the outbox to record the message of request "+r.ID, func() bool {
		_, err := h.st.Note(h.t.Context(), bot.RequestMessageKey(r.ID))
		return err == nil
	})
	return r, m
}

// waitMessage waits for a bot message in the group that satisfies ok.
func (h *e2e) waitMessage(ok func(telegramtest.Message) bool) telegramtest.Message {
	h.t.Helper()
	return h.waitChatMessage(groupID, ok)
}

func (h *e2e) waitChatMessage(chat int64, ok func(telegramtest.Message) bool) telegramtest.Message {
	h.t.Helper()
	var found telegramtest.Message
	deskbottest.Eventually(h.t, fmt.Sprintf("a bot message in chat %d", chat), func() bool {
		for _, m := range h.tg.BotMessages(chat) {
			if ok(m) {
				found = m
				return true
			}
		}
		return false
	})
	return found
}

// tap taps the button labelled label on message m, as user.
func (h *e2e) tap(user telegramtest.User, m telegramtest.Message, label string) string {
	h.t.Helper()
	for _, row := range m.Keyboard {
		for _, btn := range row {
			if btn.Text == label {
				return h.tg.InjectCallback(user, m.ChatID, m.ID, btn.Data)
			}
		}
	}
	h.t.Fatalf("message %d has no button %q; it has %q", m.ID, label, m.Labels())
	return ""
}

// grant taps Always allow on m as user and, when the chat asks to confirm
// the grant, confirms it: the answer to the tap that decided.
func (h *e2e) grant(user telegramtest.User, m telegramtest.Message) string {
	h.t.Helper()
	got, _ := h.answer(h.tap(user, m, "Always allow"))
	if got != "Confirm the grant below." {
		return got
	}
	c := h.grantConfirm()
	got, _ = h.answer(h.tap(user, c, c.Labels()[0]))
	return got
}

// grantConfirm waits for the latest grant confirmation with its buttons.
func (h *e2e) grantConfirm() telegramtest.Message {
	h.t.Helper()
	return h.waitMessage(func(x telegramtest.Message) bool {
		return strings.HasPrefix(x.Plain, "Always allow ") && len(x.Keyboard) > 0
	})
}

// answer waits for the answer to a tap.
func (h *e2e) answer(queryID string) (string, bool) {
	h.t.Helper()
	var text string
	var alert bool
	deskbottest.Eventually(h.t, "the answer to tap "+queryID, func() bool {
		var ok bool
		text, alert, ok = h.tg.CallbackAnswer(queryID)
		return ok
	})
	return text, alert
}

// triggers drains a desk's inbox.
func (h *e2e) triggers(desk string) []deskbot.Trigger {
	h.t.Helper()
	var got []deskbot.Trigger
	for {
		tr, err := h.st.NextTrigger(h.t.Context(), desk, 0)
		if err != nil {
			h.t.Fatalf("next trigger: %v", err)
		}
		if tr == nil {
			return got
		}
		got = append(got, *tr)
		if err := h.st.AckTrigger(h.t.Context(), tr); err != nil {
			h.t.Fatalf("ack trigger: %v", err)
		}
	}
}

// waitTriggers waits until desk's inbox holds n triggers and returns them.
func (h *e2e) waitTriggers(desk string, n int) []deskbot.Trigger {
	h.t.Helper()
	var got []deskbot.Trigger
	deskbottest.Eventually(h.t, fmt.Sprintf("%d triggers for desk %s", n, desk), func() bool {
		got = append(got, h.triggers(desk)...)
		return len(got) >= n
	})
	return got
}

// say sends text to the group as user, optionally as a reply.
func (h *e2e) say(user telegramtest.User, text string, replyTo int) int {
	return h.tg.InjectText(user, groupID, text, replyTo)
}

// replyTo waits for the bot's reply to message id in chat.
func (h *e2e) replyTo(chat int64, id int) telegramtest.Message {
	h.t.Helper()
	return h.waitChatMessage(chat, func(m telegramtest.Message) bool { return m.ReplyTo == id })
}

// fastSender keeps the sender's behaviour with gaps short enough for tests.
func fastSender() bot.SenderOptions {
	return bot.SenderOptions{PerChat: time.Millisecond, PerGroupPerMinute: 1 << 20, Overall: time.Microsecond,
		MinBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond}
}

func quiet() *slog.Logger {
	if os.Getenv("BOT_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}
