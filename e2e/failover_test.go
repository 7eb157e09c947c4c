package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/model/modeltest"
)

// TestModelFailover lets a desk's first backend call a tool and then die
// (its connection dropped mid-request, and every one after). The second
// backend of the desk's chain finishes the turn; the call that already ran
// is shown to it as done, and when it asks for the same call again it is
// answered from memory: one fill, not two.
func TestModelFailover(t *testing.T) {
	mustBinary(t)
	primary := modeltest.New(t)
	backup := modeltest.New(t)
	var dead atomic.Bool
	var diedAt atomic.Int64
	target, _ := url.Parse(primary.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		// The primary dies once a tool has run: this request and every
		// later one lose their connection without an answer.
		if bytes.Contains(body, []byte(`"tool_call_id"`)) && dead.CompareAndSwap(false, true) {
			diedAt.Store(time.Now().UnixNano())
		}
		if dead.Load() {
			if c, _, err := w.(http.Hijacker).Hijack(); err == nil {
				c.Close()
			}
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)

	desks := filepath.Join(t.TempDir(), "desks.toml")
	if err := os.WriteFile(desks, []byte(fmt.Sprintf(`
[[desk]]
name = "fx"
tools = ["get_positions", "place_order", "send_message"]

[[desk.model]]
provider = "openai"
base_url = "%s/v1"
model = "primary"
name = "primary"

[[desk.model]]
provider = "openai"
base_url = "%s/v1"
model = "backup"
name = "backup"
`, front.URL, backup.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	// The order runs unasked on purpose: the drill is about the failover.
	w := newWorld(t, map[string]string{"DESKS_FILE": desks, "APPROVAL_TOOLS": "flatten_desk"})

	order := modeltest.ToolCall{Name: "place_order", Arguments: `{"symbol":"INFY","side":"buy","quantity":2,"price":2000}`}
	primary.SetHandler(func(r modeltest.Request) modeltest.Reply {
		if strings.Contains(lastUser(r), "buy two") {
			return modeltest.Calls(order)
		}
		return modeltest.Text("primary ok")
	})
	var mu sync.Mutex
	var firstSeen time.Time
	backup.SetHandler(func(r modeltest.Request) modeltest.Reply {
		if !strings.Contains(lastUser(r), "buy two") {
			return modeltest.Text("backup ok")
		}
		mu.Lock()
		if firstSeen.IsZero() {
			firstSeen = time.Now()
		}
		mu.Unlock()
		// A careless model repeats the call it sees in the conversation
		// once; then it reports.
		if len(r.ToolResults()) < 2 {
			return modeltest.Calls(order)
		}
		return modeltest.Text("backup finished the turn")
	})

	w.start()
	w.tell("fx", "buy two INFY")
	w.botMessage("the backup's words", 30*time.Second, func(m telegramtest.Message) bool {
		return strings.Contains(m.Plain, "backup finished the turn")
	})

	fills := mustTrades(t, w, "fx")
	if len(fills) != 1 {
		t.Errorf("the broker filled %d orders, want 1 (the backup must not repeat the call)", len(fills))
	}
	reqs := backup.Requests()
	if len(reqs) < 2 {
		t.Fatalf("the backup was asked %d times, want 2", len(reqs))
	}
	shown := reqs[0].ToolResults()
	if len(shown) != 1 || !strings.Contains(shown[0].Text, "INFY") {
		t.Errorf("the backup was not shown the call that already ran: tool results %+v", shown)
	}
	replayed := reqs[1].ToolResults()
	if n := len(replayed); n != 2 || replayed[1].Text != shown[0].Text {
		t.Errorf("the repeated call was not answered from memory: tool results %+v", replayed)
	}
	if n := w.countBot("backup finished the turn"); n != 1 {
		t.Errorf("the desk's words arrived %d times, want 1", n)
	}
	mu.Lock()
	took := firstSeen.Sub(time.Unix(0, diedAt.Load()))
	mu.Unlock()
	summary(t, "model-failover", "primary_died_after_tool=yes fallback_took_over_in=%v fills=%d(want 1) repeat_answered_from_memory=yes",
		took.Round(time.Millisecond), len(fills))
}
