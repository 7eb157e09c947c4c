package agent_test

import (
	"testing"
	"time"

	"github.com/deskbot/deskbot"
)

// The hostile desk rests a buy in the afternoon and, the next morning
// before the update loop has ended it with its day, rests another: the
// first is still open at the broker, so it still counts toward the
// position limit, and the second, which with it passes the limit, is
// refused.
func TestHostileYesterdaysRestingOrderStillCountsTowardThePositionLimit(t *testing.T) {
	f := mustLimits(t, deskbot.ToolPolicy{MaxPositionNotional: 1000000}, false) // 1,000 TCS at ₹1,000
	const args = `{"symbol":"TCS","side":"buy","quantity":600,"price":900}`
	if ex := f.place(t, "evening", args); ex.Refused || ex.Result.IsError {
		t.Fatalf("the first resting buy: %+v", ex)
	}
	f.mu.Lock()
	f.now = f.now.Add(19 * time.Hour) // 14:00 India time to 09:00 the next day
	f.mu.Unlock()
	if ex := f.place(t, "morning", args); !ex.Refused {
		t.Errorf("the next morning a second resting buy of 600 TCS ran (%+v): with yesterday's, still open, the desk would hold 1,200, past its ₹10,00,000 position limit", ex.Result)
	}
}
