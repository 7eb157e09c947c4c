package main

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/model/modeltest"
)

// An allowed order's fill is told once in the chat: in the request's
// message, as people read it (the order's id and its fill, none of the
// answer written for the model), with no order message for the version
// its answer told, and not again in the desk's words: the desk's model is
// told the chat shows it (a model that was not would repeat it, as this
// one does). The audit records the run once.
func TestAllowedFillIsToldOnce(t *testing.T) {
	t.Parallel()
	s := mustStart(t, map[string]string{"APPROVAL_TOOLS": "place_order"})
	var answered atomic.Bool
	s.model.SetHandler(func(r modeltest.Request) modeltest.Reply {
		last := r.Last()
		switch {
		case strings.Contains(last.Text, "The user allowed place_order"):
			answered.Store(true)
			if strings.Contains(r.System(), "The chat already shows the outcome of each call the team allowed") {
				return modeltest.Text("")
			}
			_, fill, _ := strings.Cut(last.Text, "It was run:\n")
			return modeltest.Text("Done. " + fill)
		case last.Role == "tool" && strings.Contains(last.Text, "needs the user's permission"):
			return modeltest.Text("Asked the team to allow the order.")
		case last.Role == "user" && strings.Contains(last.Text, "buy INFY"):
			return modeltest.Calls(modeltest.ToolCall{Name: "place_order", Arguments: `{"symbol":"INFY","side":"buy","quantity":10,"price":5000}`})
		case last.Role == "user" && strings.Contains(last.Text, "anything else?"):
			return modeltest.Text("Nothing else for now.")
		}
		return modeltest.Text("ok")
	})
	s.tg.InjectText(asha, groupID, "/tell main buy INFY now", 0)
	held := s.mustBotMessage(t, "the held order", func(m telegramtest.Message) bool {
		return len(m.Keyboard) > 0 && strings.Contains(m.Plain, "place_order")
	})
	rs, err := s.main.Store.OpenRequests(t.Context())
	if err != nil || len(rs) != 1 {
		t.Fatalf("open requests: %v %v", rs, err)
	}
	s.tg.InjectCallback(ravi, groupID, held.ID, button(t, held, "Allow once"))
	done := s.mustBotMessage(t, "the order's outcome", func(m telegramtest.Message) bool {
		return m.ID == held.ID && len(m.Keyboard) == 0 && strings.Contains(m.Plain, "Ran")
	})
	if !strings.Contains(done.Plain, "Allowed once by Ravi") || !strings.Contains(done.Plain, ". Ran: order ") || !strings.Contains(done.Plain, " · complete 10 @ ") {
		t.Errorf("the outcome reads %q; want the order's id and its fill", done.Plain)
	}
	for _, model := range []string{"Filled:", "Now INFY", "unrealised", "reach you", "get_orders", "get_positions"} {
		if strings.Contains(done.Plain, model) {
			t.Errorf("the outcome reads %q: %q is written for the desk's model", done.Plain, model)
		}
	}
	// The desk's turn that read the answer is done before the next one,
	// whose words come after whatever it said.
	s.tg.InjectText(asha, groupID, "/tell main anything else?", 0)
	s.mustBotMessage(t, "the desk's next words", func(m telegramtest.Message) bool {
		return strings.Contains(m.Plain, "Nothing else for now.")
	})
	if !answered.Load() {
		t.Fatal("the desk's model never read the answer to its request")
	}
	var told []string
	for _, m := range s.tg.BotMessages(groupID) {
		if strings.Contains(m.Plain, "complete 10 @") {
			told = append(told, m.Plain)
		}
	}
	if len(told) != 1 {
		t.Errorf("the fill is told in %d messages, want 1 (the request's): %q", len(told), told)
	}
	trail, err := s.main.Store.AuditTrail(t.Context(), 100)
	if err != nil {
		t.Fatal(err)
	}
	var ran int
	for _, e := range trail {
		if e.RequestID == rs[0].ID && (e.Action == "ran" || e.Action == "failed") {
			ran++
		}
	}
	if ran != 1 {
		t.Errorf("the audit records the allowed order's run %d times, want 1: %+v", ran, trail)
	}
}
