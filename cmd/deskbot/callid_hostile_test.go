package main

import (
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/model/modeltest"
)

// A desk's model gives a guarded call the call id of one an approver has
// already allowed, in a later turn and in the same step twice: an allow
// belongs to the request it was given on, never to a call id, so each new
// call is held and shown as a request of its own, and nothing runs
// without its own yes.
func TestHostileReusedCallIDGetsNoApproval(t *testing.T) {
	t.Parallel()
	s := mustStart(t, map[string]string{"APPROVAL_TOOLS": "place_order"})
	small := `{"symbol":"NIFTY24DECFUT","side":"buy","quantity":1,"price":24500}`
	big := `{"symbol":"NIFTY24DECFUT","side":"buy","quantity":5000,"price":24500}`
	bigger := `{"symbol":"NIFTY24DECFUT","side":"buy","quantity":6000,"price":24500}`
	s.model.SetHandler(func(r modeltest.Request) modeltest.Reply {
		last := r.Last()
		switch {
		case last.Role == "tool":
			return modeltest.Text("Asked.")
		case strings.Contains(last.Text, "first"):
			return modeltest.Calls(modeltest.ToolCall{ID: "call_1", Name: "place_order", Arguments: small})
		case strings.Contains(last.Text, "again"):
			return modeltest.Calls(modeltest.ToolCall{ID: "call_1", Name: "place_order", Arguments: big},
				modeltest.ToolCall{ID: "call_1", Name: "place_order", Arguments: bigger})
		}
		return modeltest.Text("ok")
	})
	s.tg.InjectText(asha, groupID, "/tell main first", 0)
	first := s.mustBotMessage(t, "the small order held", func(m telegramtest.Message) bool {
		return len(m.Keyboard) > 0 && strings.Contains(m.Plain, "wants to run")
	})
	q := s.tg.InjectCallback(asha, groupID, first.ID, button(t, first, "Allow once"))
	s.tg.WaitFor(t, 10*time.Second, func(srv *telegramtest.Server) bool { _, _, ok := srv.CallbackAnswer(q); return ok })
	data := button(t, first, "Deny")
	s.mustRanOnce(t, data[strings.LastIndex(data, "|")+1:])

	s.tg.InjectText(asha, groupID, "/tell main again", 0)
	var ids []string
	s.tg.WaitFor(t, 15*time.Second, func(srv *telegramtest.Server) bool {
		ids = ids[:0]
		for _, m := range srv.BotMessages(groupID) {
			if m.ID != first.ID && len(m.Keyboard) > 0 && strings.Contains(m.Plain, "wants to run") {
				d := button(t, m, "Deny")
				ids = append(ids, d[strings.LastIndex(d, "|")+1:])
			}
		}
		return len(ids) == 2
	})
	time.Sleep(500 * time.Millisecond) // a run would be recorded by now
	for _, id := range ids {
		r, err := s.main.Store.Request(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if r.State != deskbot.StateOpen || s.runs(t, id) != 0 {
			t.Errorf("request %s of a call reusing an allowed call's id is %s (runs %d); want it open, not run", id, r.State, s.runs(t, id))
		}
	}
	book, err := s.main.Broker.Book(t.Context(), "main")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range book.Positions {
		if p.Quantity != 1 {
			t.Errorf("position %s is %v; only the allowed order of 1 may have run", p.Symbol, p.Quantity)
		}
	}
}
