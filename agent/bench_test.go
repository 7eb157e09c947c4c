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
//     acknowledged.
//
// turn/op minus model-calls/op is the harness overhead; the ratio is
// reported as x-model.
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

	var modelNs float64
	b.Run("model-calls", func(b *testing.B) {
		ctx := context.Background()
		for b.Loop() {
			if _, err := m.Complete(ctx, first); err != nil {
				b.Fatal(err)
			}
			if _, err := m.Complete(ctx, second); err != nil {
				b.Fatal(err)
			}
		}
		modelNs = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})

	b.Run("turn", func(b *testing.B) {
		ctx := context.Background()
		for range b.N {
			tr := deskbot.Trigger{Desk: "main", Kind: deskbot.TriggerMessage, Text: "What is INFY at?", From: "Asha", CreatedAt: w.now}
			if err := w.store.Enqueue(ctx, tr); err != nil {
				b.Fatal(err)
			}
		}
		b.ResetTimer()
		stop := w.start(b, w.store)
		for {
			n, err := w.store.PendingTriggers(ctx, "main")
			if err != nil {
				b.Fatal(err)
			}
			if n == 0 {
				break
			}
			time.Sleep(200 * time.Microsecond)
		}
		b.StopTimer()
		stop()
		turnNs := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		if modelNs > 0 {
			b.ReportMetric(turnNs-modelNs, "harness-ns/turn")
			b.ReportMetric(turnNs/modelNs, "x-model")
		}
	})
}
