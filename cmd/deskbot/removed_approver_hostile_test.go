package main

import (
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/config/configtest"
	"github.com/deskbot/deskbot/store/storetest"
)

// Four eyes across a change of the approvers: Asha approves an order that
// needs two, then the operator removes her from TELEGRAM_APPROVERS (she
// left, or her phone was taken) and restarts. Ravi's one tap must not run
// the call on Asha's approval: a person who is no longer an approver
// counts for nothing, as a stranger's tap does.
func TestHostileRemovedApproverStillCounts(t *testing.T) {
	t.Parallel()
	storetest.MustOpen(t)
	env := map[string]string{
		"REDIS_PREFIX":       storetest.RandomPrefix(),
		"WEBAPP_URL":         "",
		"DESKS":              "",
		"DESKS_FILE":         configtest.DesksFile(t, fourEyesDesks),
		"APPROVAL_TOOLS":     "place_order,flatten_desk",
		"TELEGRAM_APPROVERS": "101,102,103",
	}
	first := mustStart(t, env)
	first.orderModel(t)
	held, id := first.holdOrder(t, "buy nifty", "NIFTY24DECFUT")
	q := first.tg.InjectCallback(asha, groupID, held.ID, button(t, held, "Allow once"))
	first.tg.WaitFor(t, 10*time.Second, func(srv *telegramtest.Server) bool { _, _, ok := srv.CallbackAnswer(q); return ok })
	if tap, _, _ := first.tg.CallbackAnswer(q); !strings.Contains(tap, "Approved (1 of 2)") {
		t.Fatalf("Asha's tap answered %q", tap)
	}
	if err := first.main.Close(); err != nil {
		t.Fatal(err)
	}

	env["TELEGRAM_APPROVERS"] = "102,103" // Asha removed
	second := mustStartOn(t, first.tg, first.model, env)
	q = second.tg.InjectCallback(ravi, groupID, held.ID, button(t, held, "Allow once"))
	second.tg.WaitFor(t, 15*time.Second, func(srv *telegramtest.Server) bool { _, _, ok := srv.CallbackAnswer(q); return ok })
	tap, _, _ := second.tg.CallbackAnswer(q)
	time.Sleep(500 * time.Millisecond) // a run would be recorded by now
	if n := second.runs(t, id); n != 0 {
		t.Errorf("the call ran %d times on Ravi's tap and the approval of Asha, who is no longer an approver (Ravi was told %q)", n, tap)
	}
	if r, err := second.main.Store.Request(t.Context(), id); err != nil || r.State != deskbot.StateOpen {
		t.Errorf("request after Ravi's tap: %v (%v); want it open, needing one more current approver", r.State, err)
	}
}
