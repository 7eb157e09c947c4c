package main

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/config/configtest"
)

// fourEyesDesks makes every order of desk main need two approvers.
const fourEyesDesks = `
[[desk]]
name = "main"
[desk.policy.place_order]
approvals = 2

[[desk]]
name = "fno"
`

// An order that needs two approvers, allowed on the desks page by one: the
// page must say it waits for a second approver (as the chat's tap does),
// never "running…", and nothing runs; the same person's second allow, from
// the page or in the chat, counts nothing; the second approver's tap in
// the chat runs it once.
func TestHostileDesksPageFourEyesOnePersonDoesNotRun(t *testing.T) {
	t.Parallel()
	s := startWithPage(t, map[string]string{"DESKS_FILE": configtest.DesksFile(t, fourEyesDesks)})
	s.orderModel(t)
	held, id := s.holdOrder(t, "buy nifty", "NIFTY24DECFUT")

	for _, d := range []string{"allow_once", "always_allow"} {
		// An always allow confirms the grant's terms, as the page's
		// confirmation does.
		_, terms, _, _ := s.main.Gate.GrantTerms(t.Context(), id)
		code, body, _ := s.pageCall(t, "POST", "a/decide", initDataFor(asha, time.Now()), url.Values{"id": {id}, "decision": {d}, "terms": {terms}})
		switch d {
		case "allow_once":
			if code != 200 || !strings.Contains(body, "Approved (1 of 2)") || strings.Contains(body, "running") {
				t.Errorf("Asha's first allow on the page answered %d %q; want it to say it waits for a second approver", code, body)
			}
		default:
			if code != 409 || strings.Contains(body, "running") {
				t.Errorf("Asha's second allow on the page answered %d %q; want a refusal", code, body)
			}
		}
		time.Sleep(300 * time.Millisecond) // a run would be recorded by now
		if n := s.runs(t, id); n != 0 {
			t.Fatalf("after Asha's %s on the page the call ran %d times; it needs two approvers", d, n)
		}
		if r, err := s.main.Store.Request(t.Context(), id); err != nil || r.State != deskbot.StateOpen {
			t.Fatalf("after Asha's %s the request is %v (%v); want it still open", d, r, err)
		}
	}
	if strings.Contains(s.logs.String(), "webapp: held call not run") {
		t.Errorf("the page tried to run a call that was only counted")
	}

	// The same person again, in the chat this time: still one approval.
	q := s.tg.InjectCallback(asha, groupID, held.ID, button(t, held, "Allow once"))
	s.tg.WaitFor(t, 10*time.Second, func(srv *telegramtest.Server) bool { _, _, ok := srv.CallbackAnswer(q); return ok })
	if tap, _, _ := s.tg.CallbackAnswer(q); strings.Contains(tap, "running") {
		t.Errorf("Asha's tap in the chat after her allow on the page answered %q", tap)
	}
	time.Sleep(300 * time.Millisecond)
	if n := s.runs(t, id); n != 0 {
		t.Fatalf("Asha's allow on the page and her tap in the chat ran the call (%d times); it needs two people", n)
	}

	q = s.tg.InjectCallback(ravi, groupID, held.ID, button(t, held, "Allow once"))
	s.tg.WaitFor(t, 10*time.Second, func(srv *telegramtest.Server) bool { _, _, ok := srv.CallbackAnswer(q); return ok })
	if tap, _, _ := s.tg.CallbackAnswer(q); !strings.Contains(tap, "running") {
		t.Errorf("Ravi's tap, the second approval, answered %q", tap)
	}
	s.mustRanOnce(t, id)
}
