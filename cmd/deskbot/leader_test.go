package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/model/modeltest"
	"github.com/deskbot/deskbot/ops"
	"github.com/deskbot/deskbot/store/storetest"
)

// role asks a running service's /healthz what it is.
func role(t *testing.T, s *service) (string, int) {
	t.Helper()
	resp, err := http.Get("http://" + s.main.HTTP.Addr() + "/healthz")
	if err != nil {
		return "", 0
	}
	defer resp.Body.Close()
	var body struct{ Role string }
	json.NewDecoder(resp.Body).Decode(&body)
	return body.Role, resp.StatusCode
}

// Two instances on one Redis: the second, started by mistake or as a
// standby, serves /healthz (standby, healthy) but polls nothing and runs
// nothing, so every message is handled once; when the first stops
// gracefully, the second takes over within its retry step and handles what
// comes next.
func TestSecondInstanceStandsByThenTakesOver(t *testing.T) {
	t.Parallel()
	storetest.MustOpen(t)
	env := map[string]string{"REDIS_PREFIX": storetest.RandomPrefix(), "LEADER_LEASE": "2s"}
	var mu sync.Mutex
	asked := map[string]int{}
	first := mustStart(t, env)
	first.model.SetHandler(func(r modeltest.Request) modeltest.Reply {
		text := r.Last().Text
		i := strings.Index(text, "ping-")
		if i < 0 {
			return modeltest.Text("ok")
		}
		mu.Lock()
		asked[text[i:i+6]]++
		mu.Unlock()
		return modeltest.Text("pong " + text[i:i+6])
	})
	second := mustStartOn(t, first.tg, first.model, env)

	if r, code := role(t, first); r != ops.RoleLeader || code != 200 {
		t.Errorf("first instance: role %q, HTTP %d; want leader, 200", r, code)
	}
	if r, code := role(t, second); r != ops.RoleStandby || code != 200 {
		t.Errorf("second instance: role %q, HTTP %d; want standby, 200", r, code)
	}
	first.tg.InjectText(asha, groupID, "/tell main ping-1", 0)
	first.mustBotMessage(t, "the answer to ping-1", func(m telegramtest.Message) bool { return strings.Contains(m.Plain, "pong ping-1") })
	time.Sleep(500 * time.Millisecond) // room for a second poller to have doubled it

	stopped := time.Now()
	if err := first.main.Close(); err != nil {
		t.Fatal(err)
	}
	closed := time.Now()
	deskbottest.EventuallyWithin(t, 5*time.Second, "the standby to lead", func() bool { r, _ := role(t, second); return r == ops.RoleLeader })
	took := time.Since(closed)
	t.Logf("graceful stop %v, then take-over %v", closed.Sub(stopped).Round(time.Millisecond), took.Round(time.Millisecond))
	second.tg.InjectText(asha, groupID, "/tell main ping-2", 0)
	second.mustBotMessage(t, "the answer to ping-2", func(m telegramtest.Message) bool { return strings.Contains(m.Plain, "pong ping-2") })

	mu.Lock()
	defer mu.Unlock()
	if asked["ping-1"] != 1 || asked["ping-2"] != 1 {
		t.Errorf("turns per message %v, want each once", asked)
	}
	for _, c := range first.tg.Calls("getUpdates") {
		if c.Status == http.StatusConflict {
			t.Errorf("Telegram saw two pollers at once (409 at %s)", c.At.Format(time.StampMilli))
		}
	}
	if took > time.Second {
		t.Errorf("the standby took %v to lead after the leader's graceful stop, want within a second (its retry step is 0.2s)", took)
	}
}
