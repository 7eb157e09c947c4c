package agent_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
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
// calls (the goal is under 1.5); harness-p50-ns and x-harness-p50 are the
// same from medians. sent-model-ns/op times the requests the turn sent
// (with the desk's history) alone, and x-harness-sent is the harness over
// them.
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

	regs, err := agent.BuildRegistries([]agent.DeskConfig{w.Desk},
		func(string) []deskbot.Tool { return []deskbot.Tool{w.quotes} },
		func(string) []deskbot.Tool { return broker.Tools(w.Paper, nil, nil) },
		agent.MessageTools(w.Store, w.DataDir, w.Clock.Now))
	if err != nil {
		b.Fatal(err)
	}
	specs := regs["main"].Specs()
	sys := agent.SystemPrompt(w.Desk, specs, w.Clock.Now())
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
			tr := deskbot.Trigger{Desk: "main", Kind: deskbot.TriggerMessage, Text: "What is INFY at?", From: "Asha", CreatedAt: w.Clock.Now()}
			if err := w.Store.Enqueue(ctx, tr); err != nil {
				b.Fatal(err)
			}
		}
		// The desk asks for its next trigger only when let through, and
		// asking again says its turn is over (trigger acknowledged, the
		// loop come round): each turn is timed from being let through to
		// the next ask, with no polling.
		gated := &gatedInbox{asking: make(chan struct{}), next: make(chan struct{})}
		w.inbox = func(ts deskbot.TurnStore) deskbot.TurnStore { gated.TurnStore = ts; return gated }
		var sent *sentRequests // the primary's (the backup is never asked)
		w.model = func(m deskbot.Model) deskbot.Model {
			s := &sentRequests{Model: m}
			if sent == nil {
				sent = s
			}
			return s
		}
		stop := w.start(b, w.Store)
		<-gated.asking
		turns := make([]time.Duration, 0, b.N)
		models := make([]time.Duration, 0, b.N)
		asSent := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for range b.N {
			t0 := time.Now()
			gated.next <- struct{}{}
			<-gated.asking
			t1 := time.Now()
			modelCalls(b)
			t2 := time.Now()
			for _, r := range sent.take() {
				if _, err := m.Complete(ctx, r); err != nil {
					b.Fatal(err)
				}
			}
			turns, models = append(turns, t1.Sub(t0)), append(models, t2.Sub(t1))
			asSent = append(asSent, time.Since(t2))
		}
		b.StopTimer()
		stop()
		if n, err := w.Store.PendingTriggers(ctx, "main"); err != nil || n != 0 {
			b.Fatalf("PendingTriggers = %d, %v; want 0 (every turn acknowledged)", n, err)
		}
		turnNs, modelNs := meanNs(turns), meanNs(models)
		b.ReportMetric(turnNs, "ns/op")
		b.ReportMetric(modelNs, "model-ns/op")
		b.ReportMetric(turnNs-modelNs, "harness-ns/turn")
		b.ReportMetric(turnNs/modelNs, "x-model")
		b.ReportMetric((turnNs-modelNs)/modelNs, "x-harness")
		// Medians resist a burst of load on a shared machine better than
		// means: the median of each turn's harness time (its time less
		// its own model calls), over the median of the model calls.
		harness := make([]time.Duration, len(turns))
		for i := range turns {
			harness[i] = turns[i] - models[i]
		}
		p50h, p50m := medianNs(harness), medianNs(models)
		b.ReportMetric(p50h, "harness-p50-ns")
		b.ReportMetric(p50h/p50m, "x-harness-p50")
		// The model calls above carry no history; the turn's carry the
		// desk's (up to 40 messages here), which costs the model client
		// and the fake server more. Timed again with the very requests
		// the turn sent (history included), the harness is what is left.
		sentNs := meanNs(asSent)
		b.ReportMetric(sentNs, "sent-model-ns/op")
		b.ReportMetric((turnNs-sentNs)/sentNs, "x-harness-sent")
	})
}

func meanNs(ds []time.Duration) float64 {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return float64(sum.Nanoseconds()) / float64(len(ds))
}

func medianNs(ds []time.Duration) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[len(s)/2].Nanoseconds())
}

// gatedInbox lets the desk ask for a trigger only when the benchmark sends
// on next, and sends on asking each time the desk asks.
type gatedInbox struct {
	deskbot.TurnStore
	asking, next chan struct{}
}

var _ deskbot.TurnStore = (*gatedInbox)(nil)

// OpenTurn is the store's, let through one ask at a time: the desk takes a
// queued trigger and opens its turn in one round trip.
func (g *gatedInbox) OpenTurn(ctx context.Context, desk string, block time.Duration, limit int, now deskbot.Now) (deskbot.OpenedTurn, error) {
	if err := g.letThrough(ctx); err != nil {
		return deskbot.OpenedTurn{}, err
	}
	return g.TurnStore.OpenTurn(ctx, desk, block, limit, now)
}

// letThrough says the desk asks, then waits until the benchmark lets it.
func (g *gatedInbox) letThrough(ctx context.Context) error {
	select {
	case g.asking <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-g.next:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// sentRequests is a model that keeps the requests the desk sent it, so the
// benchmark can time the same calls alone.
type sentRequests struct {
	deskbot.Model
	mu   sync.Mutex
	reqs []deskbot.ModelRequest
}

func (s *sentRequests) Complete(ctx context.Context, req deskbot.ModelRequest) (deskbot.ModelReply, error) {
	s.mu.Lock()
	s.reqs = append(s.reqs, req)
	s.mu.Unlock()
	return s.Model.Complete(ctx, req)
}

func (s *sentRequests) take() []deskbot.ModelRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.reqs
	s.reqs = nil
	return r
}
