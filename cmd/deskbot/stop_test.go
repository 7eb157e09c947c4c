package main

import (
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/model/modeltest"
)

// A stop while an allowed held call is running lets it finish: it is
// recorded as ran (not interrupted), and its outcome reaches the chat
// before Close returns.
func TestStopLetsAllowedCallFinish(t *testing.T) {
	t.Parallel()
	s := mustStart(t, map[string]string{"APPROVAL_TOOLS": "bash", "SANDBOX": "none"})
	s.model.SetHandler(func(r modeltest.Request) modeltest.Reply {
		if strings.Contains(r.Last().Text, "run the slow job") {
			return modeltest.Calls(modeltest.ToolCall{Name: "bash", Arguments: `{"command":"sleep 1.5; echo slow job finished"}`})
		}
		return modeltest.Text("ok")
	})
	s.tg.InjectText(asha, groupID, "/tell main run the slow job", 0)
	held := s.mustBotMessage(t, "held bash call", func(m telegramtest.Message) bool {
		return len(m.Keyboard) > 0 && strings.Contains(m.Plain, "bash")
	})
	q := s.tg.InjectCallback(asha, groupID, held.ID, button(t, held, "Allow once"))
	s.tg.WaitFor(t, 10*time.Second, func(srv *telegramtest.Server) bool { _, _, ok := srv.CallbackAnswer(q); return ok })

	start := time.Now()
	if err := s.main.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	t.Logf("stopped in %s", time.Since(start).Round(time.Millisecond))
	m, _ := s.tg.Message(groupID, held.ID)
	if !strings.Contains(m.Plain, "Ran:") || strings.Count(m.Plain, "slow job finished") < 2 {
		t.Errorf("after the stop the request's message reads %q; want the finished call's output", m.Plain)
	}
	// Redis is closed now, so the chat is the witness: a call cut off by
	// the stop would read as failed or interrupted.
	if strings.Contains(strings.ToLower(m.Plain), "interrupted") {
		t.Errorf("the call was cut off: %q", m.Plain)
	}
}
