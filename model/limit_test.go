package model_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/model/modeltest"
)

// A provider that never stops talking: the reply is read up to the cap and
// no further, and the chain moves on.
func TestEndlessReplyIsNotReadWhole(t *testing.T) {
	const flood = 50 << 20
	const limit = 1 << 20
	forEach(t, func(t *testing.T, b backend, srv *modeltest.Server, _ deskbot.Model) {
		c := b.config(srv)
		c.MaxReplyBytes = limit
		m := mustNew(t, c)

		// Under the cap the same kind of reply is read whole.
		srv.Push(modeltest.Reply{Flood: limit / 2})
		rep, err := m.Complete(t.Context(), ask("hi"))
		if err != nil || len(rep.Text) < limit/4 {
			t.Fatalf("reply under the cap: %d bytes of text, %v; want it read", len(rep.Text), err)
		}

		sentBefore := srv.BytesSent()
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		srv.Push(modeltest.Reply{Flood: flood})
		_, err = m.Complete(t.Context(), ask("hi"))
		runtime.ReadMemStats(&after)
		wantCode(t, err, deskbot.EUNAVAILABLE)
		if msg := deskbot.ErrorMessage(err); !strings.Contains(msg, fmt.Sprintf("larger than %d bytes", limit)) {
			t.Errorf("error %q should say the answer was too large", msg)
		}
		t.Logf("flood of %d MiB: server wrote %.1f MiB, client allocated %.1f MiB", flood>>20,
			float64(srv.BytesSent()-sentBefore)/(1<<20), float64(after.TotalAlloc-before.TotalAlloc)/(1<<20))
		if sent := srv.BytesSent() - sentBefore; sent > flood/2 {
			t.Errorf("the server wrote %d of %d bytes: the client kept reading", sent, flood)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 24<<20 {
			t.Errorf("allocated %d MiB reading a reply capped at %d MiB", alloc>>20, limit>>20)
		}
		if got := len(srv.Requests()); got != 2 {
			t.Errorf("requests = %d, want 2 (an oversized reply is not asked again)", got)
		}
	})
}

func TestTooManyToolCallsFailOver(t *testing.T) {
	many := func(n int) modeltest.Reply {
		calls := make([]modeltest.ToolCall, n)
		for i := range calls {
			calls[i] = modeltest.ToolCall{Name: "place_order", Arguments: fmt.Sprintf(`{"symbol":"S%d"}`, i)}
		}
		return modeltest.Calls(calls...)
	}
	forEach(t, func(t *testing.T, b backend, srv *modeltest.Server, m deskbot.Model) {
		srv.Push(many(32))
		if rep, err := m.Complete(t.Context(), ask("hi")); err != nil || len(rep.ToolCalls) != 32 {
			t.Fatalf("32 calls: %d, %v; want them all", len(rep.ToolCalls), err)
		}
		srv.Push(many(10000))
		_, err := m.Complete(t.Context(), ask("hi"))
		wantCode(t, err, deskbot.EUNAVAILABLE)
		if msg := deskbot.ErrorMessage(err); !strings.Contains(msg, "more tool calls than the 32 allowed") {
			t.Errorf("error %q should name the count and the cap", msg)
		}
		if got := len(srv.Requests()); got != 2 {
			t.Errorf("requests = %d, want 2 (no second try)", got)
		}
	})
}
