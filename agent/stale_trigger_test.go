package agent_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/model/modeltest"
)

// A "buy" told while no model answered is read by the model whenever one
// comes back, perhaps hours later: the model is told, plainly, how long
// ago it was sent, so it does not act on it as if it were said this minute.
// A trigger read at once says nothing of the kind.
func TestAStaleTriggerTellsTheModelHowOldItIs(t *testing.T) {
	w := newDeskWorld(t)
	var up atomic.Bool
	answer := func(r modeltest.Request) modeltest.Reply {
		if !up.Load() {
			return modeltest.Status(503)
		}
		return modeltest.Text("read: " + lastUser(r)[strings.LastIndex(lastUser(r), "\n")+1:])
	}
	w.primary.SetHandler(answer)
	w.backup.SetHandler(answer)
	w.start(t, w.Store)
	w.Tell(t, "Buy 10 INFY now.")
	w.WaitEvent(t, "model_unreachable", func(e deskbot.Event) bool { return e.Kind == deskbot.EventModelUnreachable })

	w.Clock.Add(3*time.Hour + 5*time.Minute) // the models come back three hours later
	up.Store(true)
	w.WaitMessage(t, "read: Buy 10 INFY now.")
	reqs := w.primary.Requests()
	got := lastUser(reqs[len(reqs)-1])
	want := "[10:30 India time] (This was sent 3 hours 5 minutes ago, at 10:30 India time; it is 13:35 India time now. Prices, positions and orders may have changed since: check them before acting on it.)\nMessage from Asha:\nBuy 10 INFY now."
	if got != want {
		t.Errorf("the late trigger as the model read it:\n%q\nwant\n%q", got, want)
	}

	w.Tell(t, "And now?")
	w.WaitMessage(t, "read: And now?")
	reqs = w.primary.Requests()
	if got, want := lastUser(reqs[len(reqs)-1]), "[13:35 India time] Message from Asha:\nAnd now?"; got != want {
		t.Errorf("a trigger read at once as the model read it: %q, want %q", got, want)
	}
}
