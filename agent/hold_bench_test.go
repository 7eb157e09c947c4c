package agent_test

import (
	"context"
	"encoding/json"
	"github.com/deskbot/deskbot/gate/gatetest"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/agent"
	"github.com/deskbot/deskbot/agent/agenttest"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/broker/brokertest"
	"github.com/deskbot/deskbot/gate"
	"github.com/deskbot/deskbot/sizing"
	"github.com/deskbot/deskbot/store/storetest"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// BenchmarkExecuteHeldOrder is a held place_order from the desk's call
// (ToolCallExecutor.Execute) to its hold, as the service runs it: read
// once (parsed, checked, sized against the market), the hard limits and
// the day's count and exposure, four eyes, the hold. Its floor, timed in
// the same loop after each op, is the request's one pipelined write (the
// gate's BenchmarkHoldFloor's commands): what a hold cannot do without.
// x_floor is the path over the floor. Run:
//
//	go test -run '^$' -bench ExecuteHeldOrder -count 5 ./agent
func BenchmarkExecuteHeldOrder(b *testing.B) {
	ctx := context.Background()
	s := storetest.MustOpen(b)
	now := func() time.Time { return time.Date(2026, 11, 30, 8, 30, 0, 0, time.UTC) }
	q := &brokertest.Quotes{Now: now}
	q.Set("TCS", 1000)
	paper := broker.NewPaperMarket(s, now, q)
	regs := agent.Registries{"main": agent.NewRegistry(broker.Tools(paper, nil, nil)...)}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	policies := deskbot.Policies{"main": {"place_order": {Approvals: 2, TwoApproversAbove: 1e12, MaxOrderNotional: 1e12, MaxOrdersPerDay: 1 << 30}}}
	sizer := &sizing.Sizer{Market: paper, Check: paper.Check, Now: now}
	limits := &gate.HardLimits{Policies: policies, Broker: paper, Sizer: sizer, Requests: s, Counter: s, Audit: s, Now: now, Log: log}
	g := gatetest.MustNew(b, gate.Config{Tools: []string{"place_order"}, Expiry: time.Hour, Policies: policies, Limits: limits}, s, regs, now, log)
	exec := &agent.ToolCallExecutor{Runner: regs, Gate: g, Events: s, Memory: s, Now: now, MaxRepeats: 100, Log: log, Reader: sizer}
	args := json.RawMessage(`{"symbol":"TCS","side":"sell","quantity":100,"price":990}`)

	rdb := s.Client()
	data, _ := json.Marshal(map[string]any{"request_id": uuid.NewString(), "desk": "main", "tool_name": "place_order", "call_id": "call_1"})
	rec := "permission\x1fplace_order\x1ftrig\x1f1795942800000\x1fcall_1"
	floor := func() {
		id := uuid.NewString()
		key := s.Key("floor", id)
		if _, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.HSet(ctx, key, "s", "open", "e", 1, "w", "main", "c", rec, "a", []byte(args))
			p.PExpireAt(ctx, key, time.Now().Add(time.Hour))
			p.ZAdd(ctx, s.Key("floor-open"), redis.Z{Score: 1, Member: id})
			p.HIncrBy(ctx, s.Key("floor-openby"), "main", 1)
			p.XAdd(ctx, &redis.XAddArgs{Stream: s.Key("floor-audit"), Values: []any{"data", data}})
			p.XAdd(ctx, &redis.XAddArgs{Stream: s.Key("floor-events"), Values: []any{"data", data}})
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	var own, spent time.Duration
	for i := range b.N {
		trigger := "t" + strconv.Itoa(i)
		turn := agenttest.Begin(b, exec, "main", trigger)
		t0 := time.Now()
		ex, err := exec.Execute(ctx, turn, deskbot.ToolCall{ID: trigger, Name: "place_order", Arguments: args})
		t1 := time.Now()
		if err != nil || !ex.Held {
			b.Fatalf("execute: %+v %v", ex, err)
		}
		turn.Record()
		t2 := time.Now()
		floor()
		own, spent = own+t1.Sub(t0), spent+time.Since(t2)
	}
	b.ReportMetric(float64(own.Nanoseconds())/float64(b.N), "ns/op")
	b.ReportMetric(float64(spent.Nanoseconds())/float64(b.N), "floor-ns/op")
	b.ReportMetric(float64(own)/float64(spent), "x_floor")
}
