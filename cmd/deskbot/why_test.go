package main

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/model/modeltest"
)

// Why? on a held order: the desk's model reads the team's question word
// for word, in a turn that offers no tools; a tool it calls anyway runs
// nothing; its answer is posted as a reply to the request's message; the
// request stays open with its lapse unchanged and can still be allowed. A
// second tap while the question is outstanding asks nothing more, a
// stranger's tap asks nothing, and a paused desk is not asked.
func TestWhyAsksTheDeskWithoutTools(t *testing.T) {
	t.Parallel()
	s := mustStart(t, map[string]string{"APPROVAL_TOOLS": "flatten_desk,place_order"})
	// The desk answers once the second tap is in: its answer ends the
	// question, after which another tap may ask again.
	tapped := make(chan struct{})
	s.model.SetHandler(func(r modeltest.Request) modeltest.Reply {
		last := r.Last()
		switch {
		case strings.Contains(last.Text, "The team asks why"):
			select {
			case <-tapped:
			case <-time.After(10 * time.Second):
			}
			// A hostile model tries to act instead of answering.
			return modeltest.Reply{Text: "INFY broke out; risk ₹500; if denied I wait.", ToolCalls: []modeltest.ToolCall{{Name: "place_order", Arguments: `{"symbol":"INFY","side":"buy","quantity":999,"price":2500}`}}}
		case last.Role == "user" && strings.Contains(last.Text, "buy INFY"):
			return modeltest.Calls(modeltest.ToolCall{Name: "place_order", Arguments: `{"symbol":"INFY","side":"buy","quantity":5,"price":2500}`})
		}
		return modeltest.Text("Waiting.")
	})
	s.tg.InjectText(asha, groupID, "/tell main buy INFY", 0)
	held := s.mustBotMessage(t, "the held order", func(m telegramtest.Message) bool {
		return len(m.Keyboard) > 0 && strings.Contains(m.Plain, "place_order")
	})
	rs, err := s.main.Store.OpenRequests(t.Context())
	if err != nil || len(rs) != 1 {
		t.Fatalf("open requests: %v %v", rs, err)
	}
	req := rs[0]

	q := s.tg.InjectCallback(stranger, groupID, held.ID, button(t, held, "Why?"))
	s.tg.WaitFor(t, 10*time.Second, func(srv *telegramtest.Server) bool { _, _, ok := srv.CallbackAnswer(q); return ok })
	q = s.tg.InjectCallback(ravi, groupID, held.ID, button(t, held, "Why?"))
	s.tg.WaitFor(t, 10*time.Second, func(srv *telegramtest.Server) bool { _, _, ok := srv.CallbackAnswer(q); return ok })
	if text, _, _ := s.tg.CallbackAnswer(q); !strings.Contains(text, "Asked main why") {
		t.Errorf("Ravi's Why? answered %q", text)
	}
	q = s.tg.InjectCallback(asha, groupID, held.ID, button(t, held, "Why?"))
	s.tg.WaitFor(t, 10*time.Second, func(srv *telegramtest.Server) bool { _, _, ok := srv.CallbackAnswer(q); return ok })
	close(tapped)

	answer := s.mustBotMessage(t, "the desk's answer under the request", func(m telegramtest.Message) bool {
		return strings.Contains(m.Plain, "answers why")
	})
	if answer.ReplyTo != held.ID || !strings.Contains(answer.Plain, "INFY broke out; risk ₹500; if denied I wait.") {
		t.Errorf("the answer (reply to %d, want %d): %q", answer.ReplyTo, held.ID, answer.Plain)
	}
	var asked []modeltest.Request
	for _, r := range s.model.Requests() {
		if strings.Contains(r.Last().Text, "The team asks why") {
			asked = append(asked, r)
		}
	}
	if len(asked) != 1 {
		t.Fatalf("the desk was asked %d times, want 1 (a stranger's tap and a second tap ask nothing)", len(asked))
	}
	want := "The team asks why you want to run place_order (request " + req.ID + ") before they decide. Explain in a few lines what you expect from it, its risk, and what you will do if it is denied. You cannot call tools in this turn."
	if !strings.Contains(asked[0].Last().Text, want) {
		t.Errorf("the model read %q; want the words %q", asked[0].Last().Text, want)
	}
	if tools := asked[0].Tools(); len(tools) != 0 {
		t.Errorf("the why turn offered tools %v", tools)
	}
	book, err := s.main.Broker.Book(t.Context(), "main")
	if err != nil {
		t.Fatal(err)
	}
	if len(book.Positions) != 0 {
		t.Fatalf("a tool ran in the why turn: %+v", book.Positions)
	}
	cur, err := s.main.Store.Request(t.Context(), req.ID)
	if err != nil {
		t.Fatal(err)
	}
	if cur.State != deskbot.StateOpen || !cur.ExpiresAt.Equal(req.ExpiresAt) {
		t.Errorf("after Why? the request is %s expiring %v; want open, expiring %v", cur.State, cur.ExpiresAt, req.ExpiresAt)
	}

	// Paused, the desk is not asked.
	s.tg.InjectText(asha, groupID, "/pause main", 0)
	s.mustBotMessage(t, "the pause", func(m telegramtest.Message) bool { return strings.Contains(m.Plain, "Paused main") })
	q = s.tg.InjectCallback(asha, groupID, held.ID, button(t, held, "Why?"))
	s.tg.WaitFor(t, 10*time.Second, func(srv *telegramtest.Server) bool { _, _, ok := srv.CallbackAnswer(q); return ok })
	if text, _, _ := s.tg.CallbackAnswer(q); !strings.Contains(text, "main is paused, so it is not asked") {
		t.Errorf("Why? on a paused desk answered %q", text)
	}

	// The request can still be allowed, and runs the desk's call.
	s.tg.InjectCallback(asha, groupID, held.ID, button(t, held, "Allow once"))
	deskbottest.Eventually(t, "the allowed order in the book", func() bool {
		b, err := s.main.Broker.Book(t.Context(), "main")
		return err == nil && len(b.Positions) == 1 && b.Positions[0].Quantity == 5
	})
}

// The desks page's Why? is the chat's: an approver's asks the desk once
// and its answer goes under the request in the chat; a viewer's asks
// nothing.
func TestWhyFromThePage(t *testing.T) {
	t.Parallel()
	s := startWithPage(t, nil)
	s.orderModel(t)
	held, id := s.holdOrder(t, "buy nifty", "NIFTY24DECFUT")
	if code, body, _ := s.pageCall(t, "POST", "a/why", initDataFor(vik, time.Now()), url.Values{"id": {id}}); code == 200 {
		t.Errorf("a viewer's Why? on the page answered %d %q; want a refusal", code, body)
	}
	code, body, _ := s.pageCall(t, "POST", "a/why", initDataFor(asha, time.Now()), url.Values{"id": {id}})
	if code != 200 || !strings.Contains(body, "Asked main why") {
		t.Fatalf("Asha's Why? on the page answered %d %q", code, body)
	}
	answer := s.mustBotMessage(t, "the desk's answer under the request", func(m telegramtest.Message) bool {
		return strings.Contains(m.Plain, "answers why")
	})
	if answer.ReplyTo != held.ID {
		t.Errorf("the answer replies to %d, want the request's message %d", answer.ReplyTo, held.ID)
	}
	asked := 0
	for _, r := range s.model.Requests() {
		if strings.Contains(r.Last().Text, "The team asks why you want to run place_order (request "+id+")") {
			asked++
		}
	}
	if asked != 1 {
		t.Errorf("the desk was asked %d times, want 1", asked)
	}
}
