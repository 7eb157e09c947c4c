package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/config/configtest"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/model/modeltest"
	"github.com/deskbot/deskbot/store/storetest"
	"github.com/deskbot/deskbot/words"
)

// newFakeClock runs at the real pace from start: the paper market's
// prices and the India clock follow it. It never jumps: the leader lease
// is judged on the service's clock, and a jump past its TTL would end the
// term.
func newFakeClock(start time.Time) *deskbottest.Clock {
	c := deskbottest.NewClock(start)
	c.Run(1)
	return c
}

// mustStartRisk starts the service on the fake clock with desk main's
// [desk.risk] table as given; place_order runs without approval unless
// approvalTools says otherwise.
func mustStartRisk(t *testing.T, clock *deskbottest.Clock, risk, approvalTools string) *service {
	t.Helper()
	storetest.MustOpen(t)
	env := map[string]string{
		"DESKS_FILE":       configtest.DesksFile(t, "[[desk]]\nname = \"main\"\n[desk.risk]\n"+risk+"\n"),
		"APPROVAL_TOOLS":   approvalTools,
		"RISK_CHECK_EVERY": "100ms",
	}
	return mustStartClock(t, telegramtest.New(t, testToken), modeltest.New(t), env, clock.Now)
}

// auditCount counts the audit trail's entries of action by by.
func auditCount(t *testing.T, s *service, action, by string) int {
	t.Helper()
	trail, err := s.main.Store.AuditTrail(t.Context(), 500)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range trail {
		if e.Action == action && e.By == by {
			n++
		}
	}
	return n
}

func mustDeskStatus(t *testing.T, s *service, desk string) deskbot.DeskStatus {
	t.Helper()
	st, err := s.main.Store.DeskStatus(t.Context(), desk)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// A thursday morning, India time.
var riskMorning = time.Date(2026, 12, 3, 10, 0, 2, 0, deskbot.IST)

// biggestStepDown finds, in the paper market's morning, the minute at
// which symbol's walk steps down the most, and by how much.
func biggestStepDown(symbol string, morning time.Time) (at time.Time, drop float64) {
	m := broker.DefaultMarket(nil)
	start := morning.Truncate(time.Minute)
	for i := 1; i <= 300; i++ {
		t := start.Add(time.Duration(i) * time.Minute)
		if d := m.Price(symbol, t.Add(-time.Minute)) - m.Price(symbol, t); d > drop {
			at, drop = t, d
		}
	}
	return at, drop
}

// stepLead is how long before the market's step a test's clock starts:
// time enough for the desk to buy at the price before it.
const stepLead = 10 * time.Second

// The day's loss rule: a desk whose bought position falls past its
// max_daily_loss is halted once, its position closed (flatten_on_halt),
// the group told the rule and the figures, and its model told why once
// it is resumed; only an approver who read why can resume it.
func TestDailyLossHaltsTheDeskOnce(t *testing.T) {
	t.Parallel()
	const qty = 1000
	step, drop := biggestStepDown("INFY", riskMorning)
	if drop*qty < 500 {
		t.Fatalf("the paper market's INFY steps down only ₹%.2f in the morning of %v: pick another morning", drop, riskMorning)
	}
	limit := float64(int(drop * qty / 2))
	clock := newFakeClock(step.Add(-stepLead))
	s := mustStartRisk(t, clock, fmt.Sprintf("max_daily_loss = %v\nflatten_on_halt = true", limit), "flatten_desk")
	price := broker.DefaultMarket(nil).Price("INFY", step.Add(-time.Minute))
	s.model.SetHandler(func(r modeltest.Request) modeltest.Reply {
		last := r.Last()
		switch {
		case strings.Contains(last.Text, "buy INFY"):
			return modeltest.Calls(modeltest.ToolCall{Name: "place_order", Arguments: fmt.Sprintf(`{"symbol":"INFY","side":"buy","quantity":%d,"price":%.2f}`, qty, price*1.05)})
		case last.Role == "tool":
			return modeltest.Text("Bought.")
		}
		return modeltest.Text("Noted.")
	})
	s.tg.InjectText(asha, groupID, "/tell main buy INFY", 0)
	s.mustBotMessage(t, "the desk's words after its fill", func(m telegramtest.Message) bool { return strings.Contains(m.Plain, "Bought.") })
	if clock.Now().After(step) {
		t.Fatalf("the desk bought after the market's step at %v (%v): the machine is too slow for this test's lead of %v", step, clock.Now(), stepLead)
	}
	if st := mustDeskStatus(t, s, "main"); st.Halt != nil {
		t.Fatalf("halted before the market moved: %+v", st.Halt)
	}
	halt := s.mustBotMessage(t, "the halt in the group", func(m telegramtest.Message) bool { return strings.Contains(m.Plain, "halted") })
	for _, want := range []string{"main halted at", "max_daily_loss", "P&L today -\u2060₹", "Done: paused the desk", "closed", "An approver can /resume main."} {
		if !strings.Contains(halt.Plain, want) {
			t.Errorf("the halt's message lacks %q: %q", want, halt.Plain)
		}
	}
	deskbottest.Eventually(t, "the halt done", func() bool {
		st := mustDeskStatus(t, s, "main")
		return st.Halt != nil && st.Halt.Done
	})
	st := mustDeskStatus(t, s, "main")
	if got, want := st.Halt.Rule, deskbot.RuleMaxDailyLoss; got != want || !st.Paused {
		t.Fatalf("halt: rule %q (want %q), paused %v", got, want, st.Paused)
	}
	book, err := s.main.Broker.Book(t.Context(), "main")
	if err != nil {
		t.Fatal(err)
	}
	if len(book.Positions) != 0 {
		t.Errorf("flatten_on_halt left positions open: %+v", book.Positions)
	}
	// Checks go on every 100ms: the halt stays one halt.
	time.Sleep(500 * time.Millisecond)
	if got := auditCount(t, s, "halt", "risk"); got != 1 {
		t.Errorf("halts audited: %d, want 1", got)
	}
	if got := auditCount(t, s, "flatten", "risk"); got != 1 {
		t.Errorf("flattens by the rules audited: %d, want 1", got)
	}
	halts := 0
	for _, m := range s.tg.BotMessages(groupID) {
		if strings.Contains(m.Plain, "halted at") {
			halts++
		}
	}
	if halts != 1 {
		t.Errorf("the group was told of %d halts, want 1", halts)
	}

	// The pause switch cannot lift a halt: /resume asks to confirm, with
	// the rule and the figures, and a stranger's tap changes nothing.
	s.tg.InjectText(stranger, groupID, "/resume main", 0)
	s.mustBotMessage(t, "a stranger's resume refused", func(m telegramtest.Message) bool {
		return strings.Contains(m.Plain, "Only approvers can resume a desk.")
	})
	s.tg.InjectText(asha, groupID, "/resume main", 0)
	ask := s.mustBotMessage(t, "the resume's confirmation", func(m telegramtest.Message) bool {
		return strings.Contains(m.Plain, "Resume it?")
	})
	if !strings.Contains(ask.Plain, "max_daily_loss") || !strings.Contains(ask.Plain, words.OnOneLine(st.Halt.Figures)) {
		t.Errorf("the confirmation does not show the rule and the figures: %q", ask.Plain)
	}
	if st := mustDeskStatus(t, s, "main"); st.Halt == nil || !st.Paused {
		t.Fatalf("/resume lifted a halt without its confirmation: %+v", st)
	}
	q := s.tg.InjectCallback(stranger, groupID, ask.ID, button(t, ask, "Yes, resume main"))
	s.tg.WaitFor(t, 10*time.Second, func(srv *telegramtest.Server) bool { _, _, ok := srv.CallbackAnswer(q); return ok })
	if st := mustDeskStatus(t, s, "main"); st.Halt == nil {
		t.Fatal("a stranger's tap lifted the halt")
	}
	s.tg.InjectCallback(asha, groupID, ask.ID, button(t, ask, "Yes, resume main"))
	s.mustBotMessage(t, "the resume", func(m telegramtest.Message) bool {
		return m.ID == ask.ID && strings.Contains(m.Plain, "Resumed main by Asha")
	})
	if st := mustDeskStatus(t, s, "main"); st.Halt != nil || st.Paused {
		t.Fatalf("after the confirmed resume: %+v", st)
	}
	// Resumed, the desk's model reads why it was stopped, once.
	deskbottest.Eventually(t, "the model told of its halt", func() bool {
		n := 0
		for _, r := range s.model.Requests() {
			if strings.Contains(r.Last().Text, "The harness halted this desk at") {
				n++
			}
		}
		return n == 1
	})
}

// A desk that keeps asking for what it is denied is halted after
// max_denials_in_a_row denials, and a request it still holds can no
// longer be allowed.
func TestDenialsInARowHaltTheDesk(t *testing.T) {
	t.Parallel()
	clock := newFakeClock(riskMorning)
	s := mustStartRisk(t, clock, "max_denials_in_a_row = 2", "flatten_desk,place_order")
	s.model.SetHandler(func(r modeltest.Request) modeltest.Reply {
		last := r.Last()
		if last.Role == "user" && strings.Contains(last.Text, "buy") {
			return modeltest.Calls(modeltest.ToolCall{Name: "place_order", Arguments: `{"symbol":"INFY","side":"buy","quantity":1,"price":2500}`})
		}
		return modeltest.Text("Waiting.")
	})
	for i := range 3 {
		s.tg.InjectText(asha, groupID, fmt.Sprintf("/tell main buy %d", i), 0)
		deskbottest.Eventually(t, "the order held", func() bool {
			rs, err := s.main.Store.OpenRequests(t.Context())
			return err == nil && len(rs) == i+1
		})
	}
	held := func() []telegramtest.Message {
		var out []telegramtest.Message
		for _, m := range s.tg.BotMessages(groupID) {
			if len(m.Keyboard) > 0 && strings.Contains(m.Plain, "place_order") {
				out = append(out, m)
			}
		}
		return out
	}
	deskbottest.Eventually(t, "three held orders shown", func() bool { return len(held()) == 3 })
	msgs := held()
	for _, m := range msgs[:2] {
		s.tg.InjectCallback(ravi, groupID, m.ID, button(t, m, "Deny"))
	}
	s.mustBotMessage(t, "the halt", func(m telegramtest.Message) bool {
		return strings.Contains(m.Plain, "halted") && strings.Contains(m.Plain, "max_denials_in_a_row") && strings.Contains(m.Plain, "2 denials, lapses and hard-limit refusals in a row")
	})
	q := s.tg.InjectCallback(asha, groupID, msgs[2].ID, button(t, msgs[2], "Allow once"))
	s.tg.WaitFor(t, 10*time.Second, func(srv *telegramtest.Server) bool { _, _, ok := srv.CallbackAnswer(q); return ok })
	if text, _, _ := s.tg.CallbackAnswer(q); !strings.Contains(text, "Not run: main is halted by a risk rule.") {
		t.Errorf("an allow of a halted desk's request answered %q", text)
	}
	book, err := s.main.Broker.Book(t.Context(), "main")
	if err != nil {
		t.Fatal(err)
	}
	if len(book.Positions) != 0 {
		t.Errorf("a halted desk's order ran: %+v", book.Positions)
	}
	if got := auditCount(t, s, "halt", "risk"); got != 1 {
		t.Errorf("halts audited: %d, want 1", got)
	}
}

// The models' tokens for the day: the desk's reported usage reaching
// max_model_tokens_per_day halts it (each of the fake model's answers
// reports 15 tokens).
func TestModelTokensHaltTheDesk(t *testing.T) {
	t.Parallel()
	clock := newFakeClock(riskMorning)
	s := mustStartRisk(t, clock, "max_model_tokens_per_day = 40", "flatten_desk,place_order")
	s.model.SetHandler(func(modeltest.Request) modeltest.Reply { return modeltest.Text("Thinking out loud.") })
	for i := range 3 {
		s.tg.InjectText(asha, groupID, fmt.Sprintf("/tell main think %d", i), 0)
	}
	halt := s.mustBotMessage(t, "the halt", func(m telegramtest.Message) bool {
		return strings.Contains(m.Plain, "halted") && strings.Contains(m.Plain, "max_model_tokens_per_day")
	})
	if !strings.Contains(halt.Plain, "45 model tokens today, limit 40") {
		t.Errorf("the halt's figures: %q", halt.Plain)
	}
	if st := mustDeskStatus(t, s, "main"); st.Halt == nil || !st.Paused {
		t.Fatalf("not halted: %+v", st)
	}
}

// The square-off: at square_off_at the desk's positions are closed and
// the group told; after it an order that would open a position is
// refused until the next trading day.
func TestSquareOffClosesAndThenRefusesOpeningOrders(t *testing.T) {
	t.Parallel()
	squareOff := time.Date(2026, 12, 3, 15, 15, 0, 0, deskbot.IST)
	clock := newFakeClock(squareOff.Add(-stepLead))
	s := mustStartRisk(t, clock, `square_off_at = "15:15"`, "flatten_desk")
	s.model.SetHandler(func(r modeltest.Request) modeltest.Reply {
		last := r.Last()

		switch {
		case last.Role == "user" && strings.Contains(last.Text, "buy INFY"):
			return modeltest.Calls(modeltest.ToolCall{Name: "place_order", Arguments: `{"symbol":"INFY","side":"buy","quantity":10,"price":5000}`})
		case last.Role == "tool":
			return modeltest.Text("Order result: " + last.Text)
		}
		return modeltest.Text("Noted.")
	})
	s.tg.InjectText(asha, groupID, "/tell main buy INFY now", 0)
	s.mustBotMessage(t, "the fill", func(m telegramtest.Message) bool {
		return strings.Contains(m.Plain, "Order result: Filled: order ") && strings.Contains(m.Plain, "BUY 10 INFY LIMIT @ 5,000.00 · MIS · complete 10 @")
	})
	if clock.Now().After(squareOff) {
		t.Fatalf("the desk bought after the square-off (%v): the machine is too slow for this test's lead of %v", clock.Now(), stepLead)
	}
	sq := s.mustBotMessage(t, "the square-off", func(m telegramtest.Message) bool { return strings.Contains(m.Plain, "squared off") })
	if !strings.Contains(sq.Plain, "main squared off at 15:15 IST") || !strings.Contains(sq.Plain, "INFY") {
		t.Errorf("the square-off's message: %q", sq.Plain)
	}
	book, err := s.main.Broker.Book(t.Context(), "main")
	if err != nil {
		t.Fatal(err)
	}
	if len(book.Positions) != 0 {
		t.Fatalf("the square-off left positions: %+v", book.Positions)
	}
	s.tg.InjectText(asha, groupID, "/tell main buy INFY again", 0)
	s.mustBotMessage(t, "the refusal after the square-off", func(m telegramtest.Message) bool {
		return strings.Contains(m.Plain, "Order result:") && strings.Contains(m.Plain, "after the desk's square-off at 15:15 IST")
	})
	time.Sleep(300 * time.Millisecond)
	if got := auditCount(t, s, "flatten", "risk"); got != 1 {
		t.Errorf("square-offs audited: %d, want 1", got)
	}
}
