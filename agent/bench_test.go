package agent_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/agent"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/model/modeltest"
)

// BenchmarkTurn measures the harness's own cost per turn against the floor
// it cannot beat: the model calls themselves. A turn here is the common
// shape (one tool call, then words) with the fake model answering at once:
//
//   - model-calls: the two Complete calls of such a turn, alone, with the
//     same system prompt and tools, against the same fake server;
//   - turn: a trigger queued in Redis, read by the desk loop, run (history,
//     state, executor with loop guard and gate, call memory, events) and
//     acknowledged; each turn is followed, in the same loop, by the two
//     model calls alone, so that both see the same load.
//
// The turn's metrics are paired: ns/op is the turn, model-ns/op the model
// calls alone timed right after it, harness-ns/turn the difference, x-model
// the turn over the model calls and x-harness the harness over the model
// calls (the goal is under 1.5).
func BenchmarkTurn(b *testing.B) {
	w := newDeskWorld(b)
	answer := func(r modeltest.Request) modeltest.Reply {
		if r.Last().Role == "tool" {
			return modeltest.Text("INFY is at 1500.")
		}
		return modeltest.Calls(quote(`{"symbol":"INFY"}`))
	}
	w.primary.SetHandler(answer)
	m := w.chain(b)[0]

	regs, err := agent.BuildRegistries([]agent.DeskConfig{w.cfg},
		func(string) []deskbot.Tool { return []deskbot.Tool{w.quotes} },
		func(string) []deskbot.Tool { return broker.Tools(w.paper, nil) },
		agent.MessageTools(w.store, w.dataDir, w.clock))
	if err != nil {
		b.Fatal(err)
	}
	specs := regs["main"].Specs()
	sys := agent.SystemPrompt(w.cfg, specs, w.now)
	user := deskbot.Message{Role: "user", Content: "[10:30 India time] Message from Asha:\nWhat is INFY at?"}
	call := deskbot.ToolCall{ID: "call_1", Name: "get_quote", Arguments: json.RawMessage(`{"symbol":"INFY"}`)}
	first := deskbot.ModelRequest{System: sys, Tools: specs, Messages: []deskbot.Message{user}}
	second := deskbot.ModelRequest{System: sys, Tools: specs, Messages: []deskbot.Message{user,
		{Role: "assistant", ToolCalls: []deskbot.ToolCall{call}},
		{Role: "tool", ToolCallID: "call_1", Content: "quote #1 for {\"symbol\":\"INFY\"}: 1500.00"}}}
	modelCalls := func(b *testing.B) {
		ctx := context.Background()
		if _, err := m.Complete(ctx, first); err != nil {
			b.Fatal(err)
		}
		if _, err := m.Complete(ctx, second); err != nil {
			b.Fatal(err)
		}
	}

	b.Run("model-calls", func(b *testing.B) {
		for b.Loop() {
			modelCalls(b)
		}
	})

	b.Run("turn", func(b *testing.B) {
		ctx := context.Background()
		for range b.N {
			tr := deskbot.Trigger{Desk: "main", Kind: deskbot.TriggerMessage, Text: "What is INFY at?", From: "Asha", CreatedAt: w.now}
			if err := w.store.Enqueue(ctx, tr); err != nil {
				b.Fatal(err)
			}
		}
		// The desk asks for its next trigger only when let through, and
		// says when it acknowledged one: each turn is timed from the ask to
		// the acknowledgement, with no polling.
		gated := &gatedInbox{next: make(chan struct{}), acked: make(chan struct{})}
		w.inbox = func(in deskbot.Inbox) deskbot.Inbox { gated.Inbox = in; return gated }
		stop := w.start(b, w.store)
		var turns, models time.Duration
		b.ResetTimer()
		for range b.N {
			t0 := time.Now()
			gated.next <- struct{}{}
			<-gated.acked
			t1 := time.Now()
			modelCalls(b)
			turns, models = turns+t1.Sub(t0), models+time.Since(t1)
		}
		b.StopTimer()
		stop()
		if n, err := w.store.PendingTriggers(ctx, "main"); err != nil || n != 0 {
			b.Fatalf("PendingTriggers = %d, %v; want 0 (every turn acknowledged)", n, err)
		}
		turnNs := float64(turns.Nanoseconds()) / float64(b.N)
		modelNs := float64(models.Nanoseconds()) / float64(b.N)
		b.ReportMetric(turnNs, "ns/op")
		b.ReportMetric(modelNs, "model-ns/op")
		b.ReportMetric(turnNs-modelNs, "harness-ns/turn")
		b.ReportMetric(turnNs/modelNs, "x-model")
		b.ReportMetric((turnNs-modelNs)/modelNs, "x-harness")
	})
}

// gatedInbox lets the desk ask for a trigger only when the benchmark sends
// on next, and sends on acked once a trigger is acknowledged.
type gatedInbox struct {
	deskbot.Inbox
	next, acked chan struct{}
}

func (g *gatedInbox) NextTrigger(ctx context.Context, desk string, block time.Duration) (*deskbot.Trigger, error) {
	select {
	case <-g.next:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return g.Inbox.NextTrigger(ctx, desk, block)
}

func (g *gatedInbox) AckTrigger(ctx context.Context, t *deskbot.Trigger) error {
	err := g.Inbox.AckTrigger(ctx, t)
	g.acked <- struct{}{}
	return err
}
