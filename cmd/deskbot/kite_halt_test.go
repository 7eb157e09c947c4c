package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/deskbottest"
)

// A halt that lands while allowed orders wait for their rate-limit slots
// (Kite takes 10 orders a second, so a burst of 30 allowed at once waits
// up to three seconds) stops those not yet sent: fewer than 30 reach Kite,
// none twice, and every allowed call whose order did not is answered that
// the desk is halted.
func TestKiteHaltStopsAllowedOrdersWaitingInABurst(t *testing.T) {
	t.Parallel()
	s, kt, _ := mustKiteTrading(t, map[string]string{"APPROVAL_TOOLS": "place_order", "WEBAPP_URL": "http://127.0.0.1" + pagePath, "WEBAPP_NAME": "desks"})
	const n = 30
	ids := make([]string, n)
	for i := range ids {
		call := deskbot.ToolCall{ID: fmt.Sprintf("call_%d", i), Name: deskbot.ToolPlaceOrder, Arguments: json.RawMessage(`{"symbol":"INFY","side":"buy","quantity":1,"price":1490}`)}
		r, _, err := s.main.Gate.Hold(t.Context(), "main", fmt.Sprintf("burst-%d", i), call)
		if err != nil {
			t.Fatalf("hold %d: %v", i, err)
		}
		ids[i] = r.ID
	}
	var mu sync.Mutex
	allowed := map[string]bool{}
	var wg sync.WaitGroup
	work := make(chan string)
	for range 8 {
		wg.Go(func() {
			for id := range work {
				// An allow after the halt is refused: that call never ran.
				if code, _, _ := s.pageCall(t, "POST", "a/decide", initDataFor(asha, time.Now()), url.Values{"id": {id}, "decision": {"allow_once"}}); code == 200 {
					mu.Lock()
					allowed[id] = true
					mu.Unlock()
				}
			}
		})
	}
	go func() {
		for _, id := range ids {
			work <- id
		}
		close(work)
	}()
	deskbottest.EventuallyWithin(t, 10*time.Second, "the first second's orders at Kite", func() bool { return kt.AllOrdersPlaced() >= 10 })
	at := time.Now()
	if won, err := s.main.Store.HaltDesk(t.Context(), "main", deskbot.Halt{Rule: deskbot.RuleMaxDailyLoss, Figures: "test", At: at},
		deskbot.AuditEntry{Action: "halt", Desk: "main", By: "risk", At: at}); err != nil || !won {
		t.Fatalf("halt: %v %v", won, err)
	}
	wg.Wait()

	results := map[string]*deskbot.ToolResult{}
	deskbottest.EventuallyWithin(t, 10*time.Second, "every allowed call's result", func() bool {
		for id := range allowed {
			r, err := s.main.Store.Request(t.Context(), id)
			if err != nil || r.Result == nil {
				return false
			}
			results[id] = r.Result
		}
		return true
	})
	placed := 0
	for _, id := range ids {
		switch got := kt.OrdersPlaced(broker.Tag(id)); {
		case got > 1:
			t.Errorf("request %s placed %d orders, want at most 1", id, got)
		case got == 1:
			placed++
		case allowed[id] && !strings.Contains(results[id].Text, "halted"):
			t.Errorf("request %s was allowed and placed nothing, but its answer %q does not say the desk is halted", id, results[id].Text)
		}
	}
	if placed >= n {
		t.Errorf("all %d allowed orders reached Kite: the halt stopped none of those waiting for their slot", placed)
	}
	t.Logf("%d of %d orders reached Kite before the halt", placed, n)
}
