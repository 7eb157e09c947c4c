package store_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/store/storetest"
	"github.com/deskbot/deskbot/words"
	"github.com/google/uuid"
)

// BenchmarkMemoryPerHeldCall keeps 1,000 held calls' answers as a desk's
// turn does (the tool_result event with the hold message, and the call in
// its trigger's call memory) and reports what Redis says they take per
// held call: the events stream's and the call memories' MEMORY USAGE, the
// request itself left out (BenchmarkMemoryPerOpenRequest measures it).
// Needs a real Redis.
//
//	go test -run '^$' -bench MemoryPerHeldCall -benchtime 1x ./store/
func BenchmarkMemoryPerHeldCall(b *testing.B) {
	storetest.NeedsRealRedis(b, "MEMORY USAGE")
	const n = 1000
	for b.Loop() {
		b.StopTimer()
		s, ctx := storetest.MustOpen(b), context.Background()
		triggers := make([]string, n)
		for i := range n {
			now := time.Now()
			id, trigger := uuid.NewString(), uuid.NewString()
			call := deskbot.ToolCall{ID: "call_" + strconv.Itoa(i), Name: "place_order", Arguments: []byte(`{"symbol":"NIFTY24DECFUT","side":"sell","quantity":50,"price":24512.5}`)}
			res := deskbot.ToolResult{Text: words.HoldMessage(call.Name, id, now.Add(5*time.Minute)), Held: true}
			if err := s.Publish(ctx, deskbot.Event{Kind: deskbot.EventToolResult, Desk: "main", Time: now, TriggerID: trigger, Call: &call, Result: &res}); err != nil {
				b.Fatal(err)
			}
			if err := s.RememberCall(ctx, trigger, deskbot.CompletedCall{Call: call, Result: res}); err != nil {
				b.Fatal(err)
			}
			triggers[i] = trigger
		}
		usage := func(key string) int64 {
			v, err := s.Client().MemoryUsage(ctx, key, 0).Result()
			if err != nil {
				b.Fatalf("MEMORY USAGE %s: %v", key, err)
			}
			return v
		}
		total := usage(s.Key("events"))
		for _, t := range triggers {
			total += usage(s.Key("calls", t))
		}
		b.StartTimer()
		b.ReportMetric(float64(total)/n, "B/held-call")
	}
}
