package main

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/config/configtest"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/model/modeltest"
)

// changeModel is orderModel, and a desk that ends its turn quietly once
// told what ran.
func (s *service) changeModel(t *testing.T) {
	s.model.SetHandler(func(r modeltest.Request) modeltest.Reply {
		last := r.Last()
		switch {
		case last.Role == "tool" && strings.Contains(last.Text, "needs the user's permission"):
			return modeltest.Text("Asked the team.")
		case strings.Contains(last.Text, "buy nifty"):
			return modeltest.Calls(modeltest.ToolCall{Name: "place_order", Arguments: `{"symbol":"NIFTY24DECFUT","side":"buy","quantity":50,"price":24500}`})
		case strings.Contains(last.Text, "sell banknifty"):
			return modeltest.Calls(modeltest.ToolCall{Name: "place_order", Arguments: `{"symbol":"BANKNIFTY24DECFUT","side":"sell","quantity":15,"price":52100}`})
		}
		return modeltest.Text("ok")
	})
}

// askChange taps Change… on msg as who and returns the prompt's message.
func (s *service) askChange(t *testing.T, who telegramtest.User, msg telegramtest.Message) telegramtest.Message {
	t.Helper()
	before := len(s.tg.BotMessages(groupID))
	q := s.tg.InjectCallback(who, groupID, msg.ID, button(t, msg, "Change…"))
	s.tg.WaitFor(t, 10*time.Second, func(srv *telegramtest.Server) bool { _, _, ok := srv.CallbackAnswer(q); return ok })
	var prompt telegramtest.Message
	deskbottest.EventuallyWithin(t, 10*time.Second, "the change prompt", func() bool {
		ms := s.tg.BotMessages(groupID)
		for _, m := range ms[min(before, len(ms)):] {
			if strings.Contains(m.Plain, "What should change?") {
				prompt = m
				return true
			}
		}
		return false
	})
	return prompt
}

// replyChange replies text to prompt as who and returns the bot's answer.
func (s *service) replyChange(t *testing.T, who telegramtest.User, prompt telegramtest.Message, text string) string {
	t.Helper()
	id := s.tg.InjectText(who, groupID, text, prompt.ID)
	return s.mustBotMessage(t, "the answer to "+text, func(m telegramtest.Message) bool { return m.ReplyTo == id }).Plain
}

func (s *service) request(t *testing.T, id string) *deskbot.Request {
	t.Helper()
	r, err := s.main.Store.Request(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A change that lowers the risk runs the changed call once and the desk's
// model reads the new words; every change that would raise it (a larger
// quantity, a worse price, another symbol or side, a malformed reply, a
// stranger's reply, a reply after the request ended) is refused with a
// line and runs nothing.
func TestChangeLowersRiskAndRunsTheChangedCall(t *testing.T) {
	t.Parallel()
	s := startWithPage(t, nil)
	s.changeModel(t)
	held, id := s.holdOrder(t, "buy nifty", "NIFTY24DECFUT")
	prompt := s.askChange(t, asha, held)

	for _, tt := range []struct {
		who        telegramtest.User
		text, want string
	}{
		{asha, "quantity 60", "may only lower the quantity"},
		{asha, "quantity 50", "may only lower the quantity"},
		{asha, "price 24600", "a buy's price may only be lowered"},
		{asha, "symbol INFY", "only the quantity and the price can be changed"},
		{asha, "side sell", "only the quantity and the price can be changed"},
		{asha, "quantity 2.5", "whole number"},
		{asha, "quantity -5", "whole number"},
		{asha, "make it smaller please", "Nothing was changed"},
		{asha, "quantity 25 quantity 10", "given twice"},
		{asha, "price 1e3", "the price must be a number"},
		{stranger, "quantity 25", "Only approvers can change a held call"},
	} {
		if got := s.replyChange(t, tt.who, prompt, tt.text); !strings.Contains(got, tt.want) {
			t.Errorf("%s's %q answered %q; want %q", tt.who.FirstName, tt.text, got, tt.want)
		}
		if r := s.request(t, id); r.State != deskbot.StateOpen || r.Changed != nil || len(r.Approvals) != 0 {
			t.Fatalf("after %q the request is %s, changed %+v, approvals %v; want open and unchanged", tt.text, r.State, r.Changed, r.Approvals)
		}
	}
	if n := s.runs(t, id); n != 0 {
		t.Fatalf("a refused change ran the call %d times", n)
	}

	if got := s.replyChange(t, asha, prompt, "quantity 25, price 24400"); !strings.Contains(got, "Changed and allowed") {
		t.Errorf("the change answered %q", got)
	}
	s.mustRanOnce(t, id)
	deskbottest.Eventually(t, "the changed order in the book", func() bool {
		b, err := s.main.Broker.Book(t.Context(), "main")
		return err == nil && len(b.Positions) == 1 && b.Positions[0].Quantity == 25
	})
	r := s.request(t, id)
	if string(r.Content.Arguments) != `{"symbol":"NIFTY24DECFUT","side":"buy","quantity":50,"price":24500}` {
		t.Errorf("the desk's call was changed in the store: %s", r.Content.Arguments)
	}
	if r.Changed == nil || r.Changed.What != "quantity 50 → 25, price 24500 → 24400" || r.Changed.By != "Asha" {
		t.Errorf("the change kept is %+v", r.Changed)
	}
	want := "The user allowed place_order (request " + id + ") with changes: quantity 50 → 25, price 24500 → 24400. The harness ran it with those arguments instead of yours. It was run:\n"
	deskbottest.Eventually(t, "the model told what ran", func() bool {
		for _, mr := range s.model.Requests() {
			for _, m := range mr.Messages() {
				if strings.Contains(m.Text, want) {
					return true
				}
			}
		}
		return false
	})
	s.mustBotMessage(t, "the request's message shows the changed call", func(m telegramtest.Message) bool {
		return m.ID == held.ID && strings.Contains(m.Plain, `"quantity":25`) && strings.Contains(m.Plain, "Changed by Asha: quantity 50 → 25, price 24500 → 24400")
	})

	// The request has ended: a reply now changes and runs nothing.
	if got := s.replyChange(t, asha, prompt, "quantity 10"); !strings.Contains(got, "Nothing was changed") {
		t.Errorf("a change after the request ended answered %q", got)
	}
	time.Sleep(300 * time.Millisecond)
	if n := s.runs(t, id); n != 1 {
		t.Errorf("after a late change the call ran %d times, want once", n)
	}
}

const changeFourEyesDesks = `
[[desk]]
name = "main"
[desk.policy.place_order]
approvals = 2
`

// Under four eyes the change is the changer's approval and restarts the
// approvals (an earlier allow was of another call): the changer alone
// runs nothing, an allow from the message as it showed the desk's call
// runs nothing, a second change applies to the changed call, and one more
// person's allow of the changed call runs it once.
func TestChangeUnderFourEyes(t *testing.T) {
	t.Parallel()
	s := startWithPage(t, map[string]string{"DESKS_FILE": configtest.DesksFile(t, changeFourEyesDesks)})
	s.changeModel(t)
	held, id := s.holdOrder(t, "buy nifty", "NIFTY24DECFUT")
	oldAllow := button(t, held, "Allow once")
	tap := func(who telegramtest.User, msgID int, data string) string {
		t.Helper()
		q := s.tg.InjectCallback(who, groupID, msgID, data)
		s.tg.WaitFor(t, 10*time.Second, func(srv *telegramtest.Server) bool { _, _, ok := srv.CallbackAnswer(q); return ok })
		text, _, _ := s.tg.CallbackAnswer(q)
		return text
	}
	if got := tap(asha, held.ID, oldAllow); !strings.Contains(got, "Approved (1 of 2)") {
		t.Fatalf("Asha's allow answered %q", got)
	}
	prompt := s.askChange(t, ravi, held)
	if got := s.replyChange(t, ravi, prompt, "quantity 25"); !strings.Contains(got, "counts as your approval (1 of 2)") {
		t.Errorf("Ravi's change answered %q", got)
	}
	changed := s.mustBotMessage(t, "the request shown again with the change", func(m telegramtest.Message) bool {
		return m.ID == held.ID && strings.Contains(m.Plain, "Changed by Ravi: quantity 50 → 25") && strings.Contains(m.Plain, "Ravi ✓") && len(m.Keyboard) > 0
	})
	if r := s.request(t, id); r.State != deskbot.StateOpen || len(r.Approvals) != 1 || r.Approvals[0].ByID != ravi.ID || r.Changes != 1 {
		t.Fatalf("after the change the request is %s with approvals %v (changes %d); want open with Ravi's alone", r.State, r.Approvals, r.Changes)
	}
	if got := tap(asha, held.ID, oldAllow); !strings.Contains(got, "changed since it was shown") {
		t.Errorf("an allow from the message as it showed the desk's call answered %q", got)
	}
	if got := tap(ravi, changed.ID, button(t, changed, "Allow once")); !strings.Contains(got, "already") {
		t.Errorf("the changer's own allow answered %q", got)
	}
	// A second change applies to the changed call: still only lower.
	prompt2 := s.askChange(t, asha, changed)
	if got := s.replyChange(t, asha, prompt2, "quantity 30"); !strings.Contains(got, "is not below 25") {
		t.Errorf("a change above the changed call answered %q", got)
	}
	time.Sleep(300 * time.Millisecond)
	if n := s.runs(t, id); n != 0 {
		t.Fatalf("the changer alone ran the call (%d times)", n)
	}
	if got := tap(asha, changed.ID, button(t, changed, "Always allow")); !strings.Contains(got, "running") {
		t.Errorf("Asha's allow of the changed call answered %q", got)
	}
	s.mustRanOnce(t, id)
	deskbottest.Eventually(t, "the changed order in the book", func() bool {
		b, err := s.main.Broker.Book(t.Context(), "main")
		return err == nil && len(b.Positions) == 1 && b.Positions[0].Quantity == 25
	})
	if gs, err := s.main.Store.Grants(t.Context(), time.Now()); err != nil || len(gs) != 0 {
		t.Errorf("a changed call was granted: %v %v", gs, err)
	}
}

// The page offers the same change: a viewer's is refused, one that raises
// the risk is refused and runs nothing, one that lowers it runs the
// changed call once; an allow from a page that showed the desk's call
// before the change does nothing.
func TestChangeFromThePage(t *testing.T) {
	t.Parallel()
	s := startWithPage(t, map[string]string{"DESKS_FILE": configtest.DesksFile(t, changeFourEyesDesks)})
	s.changeModel(t)
	_, id := s.holdOrder(t, "buy nifty", "NIFTY24DECFUT")
	post := func(who telegramtest.User, path string, form url.Values) (int, string) {
		t.Helper()
		code, body, _ := s.pageCall(t, "POST", path, initDataFor(who, time.Now()), form)
		return code, body
	}
	if code, body := post(vik, "a/change", url.Values{"id": {id}, "changes": {"quantity 25"}}); code == 200 {
		t.Errorf("a viewer's change answered %d %q", code, body)
	}
	if code, body := post(asha, "a/change", url.Values{"id": {id}, "changes": {"quantity 60"}}); code == 200 || !strings.Contains(body, "may only lower the quantity") {
		t.Errorf("a larger quantity from the page answered %d %q", code, body)
	}
	if code, body := post(asha, "a/change", url.Values{"id": {id}, "changes": {"quantity 25"}, "shown": {"01"}}); code == 200 {
		t.Errorf("a malformed shown answered %d %q", code, body)
	}
	if r := s.request(t, id); r.Changed != nil || len(r.Approvals) != 0 {
		t.Fatalf("a refused change changed the request: %+v %v", r.Changed, r.Approvals)
	}
	if code, body := post(asha, "a/change", url.Values{"id": {id}, "changes": {"quantity 25"}}); code != 200 || !strings.Contains(body, "counts as your approval (1 of 2)") {
		t.Fatalf("Asha's change from the page answered %d %q", code, body)
	}
	// Ravi's page still showed the desk's call.
	if code, body := post(ravi, "a/decide", url.Values{"id": {id}, "decision": {"allow_once"}}); code == 200 || !strings.Contains(body, "changed since it was shown") {
		t.Errorf("an allow from a page that showed the desk's call answered %d %q", code, body)
	}
	time.Sleep(300 * time.Millisecond)
	if n := s.runs(t, id); n != 0 {
		t.Fatalf("the changer alone ran the call (%d times)", n)
	}
	if code, body := post(ravi, "a/decide", url.Values{"id": {id}, "decision": {"allow_once"}, "shown": {"1"}}); code != 200 || !strings.Contains(body, "running") {
		t.Errorf("Ravi's allow of the changed call answered %d %q", code, body)
	}
	s.mustRanOnce(t, id)
	deskbottest.Eventually(t, "the changed order in the book", func() bool {
		b, err := s.main.Broker.Book(t.Context(), "main")
		return err == nil && len(b.Positions) == 1 && b.Positions[0].Quantity == 25
	})
}

const changeLimitDesks = `
[[desk]]
name = "main"
[desk.policy.place_order]
max_order_notional = 2000000
`

// The changed call is checked against the hard limits as if the desk had
// asked for it: a sell's higher price that takes its notional over the
// desk's limit for one order is refused, and nothing changes or runs.
func TestChangeIsCheckedAgainstTheHardLimits(t *testing.T) {
	t.Parallel()
	s := startWithPage(t, map[string]string{"DESKS_FILE": configtest.DesksFile(t, changeLimitDesks)})
	s.changeModel(t)
	held, id := s.holdOrder(t, "sell banknifty", "BANKNIFTY24DECFUT")
	prompt := s.askChange(t, asha, held)
	if got := s.replyChange(t, asha, prompt, "price 200000"); !strings.Contains(got, "hard limit") || !strings.Contains(got, "Nothing was changed") {
		t.Errorf("a change over the hard limit answered %q", got)
	}
	if r := s.request(t, id); r.State != deskbot.StateOpen || r.Changed != nil {
		t.Fatalf("after a refused change the request is %s, changed %+v", r.State, r.Changed)
	}
	if got := s.replyChange(t, asha, prompt, "price 52200"); !strings.Contains(got, "Changed and allowed") {
		t.Errorf("a change within the limit answered %q", got)
	}
	s.mustRanOnce(t, id)
}
