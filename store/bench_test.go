package store_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/argtext"
	"github.com/deskbot/deskbot/store"
	"github.com/deskbot/deskbot/store/storetest"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// Each benchmark times the store's operation and, in the same run, the
// floor it cannot beat (one round trip carrying the same commands), and
// reports store/floor as x_floor.
//
//	go test -run '^$' -bench . -benchtime 2000x ./store/

// floor is what an operation is measured against.
type floor struct {
	name string
	run  func(i int)
}

// compare times op and each floor alternately, b.N times each, so that all
// see the same load on a shared machine; it reports op's ns/op, each
// floor's, and op's time as a multiple of each floor's (x_name).
func compare(b *testing.B, op func(i int), floors ...floor) {
	b.Helper()
	var own time.Duration
	spent := make([]time.Duration, len(floors))
	for i := range b.N {
		t0 := time.Now()
		op(i)
		own += time.Since(t0)
		for j, f := range floors {
			t0 := time.Now()
			f.run(i)
			spent[j] += time.Since(t0)
		}
	}
	b.ReportMetric(float64(own.Nanoseconds())/float64(b.N), "ns/op")
	for j, f := range floors {
		b.ReportMetric(float64(spent[j].Nanoseconds())/float64(b.N), f.name+"-ns/op")
		b.ReportMetric(float64(own)/float64(spent[j]), "x_"+f.name)
	}
}

func benchRequest(i int) (*deskbot.Request, deskbot.AuditEntry, deskbot.Event) {
	r := newRequest("b"+strconv.Itoa(i), base.Add(5*time.Minute))
	return r, deskbot.AuditEntry{Action: "hold", Desk: r.Desk, Tool: "flatten_desk", By: "system", At: base},
		deskbot.Event{Kind: deskbot.EventUserRequest, Desk: r.Desk, Time: base}
}

// createFloor sends what CreateRequest sends, pipelined without MULTI.
func createFloor(ctx context.Context, s *store.Store, i int) {
	r, _, _ := benchRequest(i)
	key := s.Key("floor", r.ID)
	entry := `{"action":"hold","desk":"alpha","tool":"flatten_desk","request_id":"` + r.ID + `","by":"system","at":"2026-11-30T09:00:00Z"}`
	_, err := s.Client().Pipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, key, "s", "open", "e", r.ExpiresAt.UnixMilli(), "w", "alpha",
			"c", "permission\x1fflatten_desk\x1f\x1f1795942800000\x1fc", "a", []byte(r.Content.Arguments))
		p.PExpireAt(ctx, key, r.ExpiresAt.Add(time.Hour))
		p.ZAdd(ctx, s.Key("floor-open"), redis.Z{Score: float64(r.ExpiresAt.UnixMilli()), Member: r.ID})
		p.HIncrBy(ctx, s.Key("floor-openby"), "alpha", 1)
		p.XAdd(ctx, &redis.XAddArgs{Stream: s.Key("floor-audit"), MaxLen: 100000, Approx: true, Values: []any{"data", entry}})
		p.XAdd(ctx, &redis.XAddArgs{Stream: s.Key("floor-events"), MaxLen: 100000, Approx: true, Values: []any{"data", entry}})
		return nil
	})
	if err != nil {
		panic(err)
	}
}

func BenchmarkCreateRequest(b *testing.B) {
	s, ctx := storetest.MustOpen(b), context.Background()
	compare(b, func(i int) {
		r, a, e := benchRequest(i)
		if err := s.CreateRequest(ctx, r, a, e); err != nil {
			b.Fatal(err)
		}
	}, floor{"pipeline", func(i int) { createFloor(ctx, s, i) }})
}

func BenchmarkCreateRequestFloor(b *testing.B) {
	s, ctx := storetest.MustOpen(b), context.Background()
	for i := 0; b.Loop(); i++ {
		createFloor(ctx, s, i)
	}
}

var trivialScript = redis.NewScript(`return 1`)

// BenchmarkTransition decides a fresh open request each iteration, as the
// gate's allow does: state, patch, indexes, audit entry and event.
func BenchmarkTransition(b *testing.B) {
	s, ctx := storetest.MustOpen(b), context.Background()
	// Requests are created in pipelined batches before the clock starts.
	n := b.N
	for lo := 0; lo < n; lo += 500 {
		_, err := s.Client().Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := lo; i < min(lo+500, n); i++ {
				createFloorInto(ctx, s, p, i)
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	audit := deskbot.AuditEntry{Action: "allow_once", Desk: "alpha", By: "Asha (42)", At: base}
	event := deskbot.Event{Kind: deskbot.EventRequestDecided, Desk: "alpha", Time: base}
	b.ResetTimer()
	compare(b, func(i int) {
		tr := allow(base)
		tr.Audit, tr.Event = &audit, &event
		if _, out, err := s.Transition(ctx, "b"+strconv.Itoa(i), tr); err != nil || out != deskbot.Applied {
			b.Fatalf("transition %d: %v %v", i, out, err)
		}
	},
		floor{"eval", func(int) { trivialScript.Run(ctx, s.Client(), []string{s.Key("x")}) }},
		floor{"pipeline", func(i int) { transitionFloor(ctx, s, i) }})
}

// BenchmarkTransitionEvalFloor is one EVALSHA round trip of a script that
// does nothing.
func BenchmarkTransitionEvalFloor(b *testing.B) {
	s, ctx := storetest.MustOpen(b), context.Background()
	for b.Loop() {
		trivialScript.Run(ctx, s.Client(), []string{s.Key("x")})
	}
}

// createFloorInto queues a request exactly as CreateRequest stores it, minus
// the streams, so that Transition finds it.
func createFloorInto(ctx context.Context, s *store.Store, p redis.Pipeliner, i int) {
	r, _, _ := benchRequest(i)
	key := s.Key("req", r.ID)
	p.HSet(ctx, key, "s", "open", "e", r.ExpiresAt.UnixMilli(), "w", "alpha",
		"c", "permission\x1fflatten_desk\x1f\x1f1795942800000\x1fc", "a", []byte(r.Content.Arguments))
	p.PExpireAt(ctx, key, r.ExpiresAt.Add(time.Hour))
	p.ZAdd(ctx, s.Key("open"), redis.Z{Score: float64(r.ExpiresAt.UnixMilli()), Member: r.ID})
}

// transitionFloor is the commands the script runs, in one pipelined round
// trip with no checks.
func transitionFloor(ctx context.Context, s *store.Store, i int) {
	id := "b" + strconv.Itoa(i)
	key := s.Key("req", id)
	entry := `{"action":"allow_once","desk":"alpha","request_id":"` + id + `","by":"Asha (42)","at":"2026-11-30T09:00:00Z"}`
	s.Client().Pipelined(ctx, func(p redis.Pipeliner) error {
		p.HMGet(ctx, key, "s", "e", "l", "w")
		p.HSet(ctx, key, "s", "running", "d", "allow_once", "b", "Asha", "i", 42, "t", base.UnixMilli())
		p.HIncrBy(ctx, s.Key("openby"), "alpha", -1)
		p.ZRem(ctx, s.Key("open"), id)
		p.SAdd(ctx, s.Key("running"), id)
		p.XAdd(ctx, &redis.XAddArgs{Stream: s.Key("floor-audit"), MaxLen: 100000, Approx: true, Values: []any{"data", entry}})
		p.XAdd(ctx, &redis.XAddArgs{Stream: s.Key("floor-events"), MaxLen: 100000, Approx: true, Values: []any{"data", entry}})
		p.HGetAll(ctx, key)
		return nil
	})
}

// BenchmarkDueRequests reads the 100 due ids among 1,000 and 100,000 open:
// the time must not grow with what is open. Only the index is filled: it
// is all DueRequests reads, besides checking that each due request exists.
func BenchmarkDueRequests(b *testing.B) {
	for _, open := range []int{1000, 100000} {
		b.Run(fmt.Sprintf("open=%d", open), func(b *testing.B) {
			s, ctx := storetest.MustOpen(b), context.Background()
			for lo := 0; lo < open; lo += 5000 {
				zs := make([]redis.Z, 0, 5000)
				for i := lo; i < min(lo+5000, open); i++ {
					exp := base.Add(time.Hour + time.Duration(i)*time.Millisecond) // not due
					if i < 100 {
						exp = base.Add(-time.Duration(i+1) * time.Second) // due
					}
					zs = append(zs, redis.Z{Score: float64(exp.UnixMilli()), Member: "r" + strconv.Itoa(i)})
				}
				if err := s.Client().ZAdd(ctx, s.Key("open"), zs...).Err(); err != nil {
					b.Fatal(err)
				}
				if lo == 0 { // the due requests exist: DueRequests drops ids whose request vanished
					for i := range 100 {
						s.Client().HSet(ctx, s.Key("req", "r"+strconv.Itoa(i)), "state", "open")
					}
				}
			}
			b.ResetTimer()
			compare(b, func(int) {
				ids, err := s.DueRequests(ctx, base, 1000)
				if err != nil || len(ids) != 100 {
					b.Fatalf("due = %d, %v; want 100", len(ids), err)
				}
			}, floor{"ping", func(int) { s.Client().Ping(ctx) }})
		})
	}
}

// BenchmarkMemoryPerOpenRequest holds 1,000 open requests as the gate does
// (a uuid, a trigger, an order's arguments, the hold's audit entry and
// event) and reports what Redis says they take (MEMORY USAGE of every key
// they touch, per request) against its MEMORY USAGE of a minimal hash (one
// short field) on the same server. Needs a real Redis.
//
//	go test -run '^$' -bench MemoryPerOpenRequest -benchtime 1x ./store/
func BenchmarkMemoryPerOpenRequest(b *testing.B) {
	storetest.NeedsRealRedis(b, "MEMORY USAGE")
	const n = 1000
	for b.Loop() {
		b.StopTimer()
		s, ctx := storetest.MustOpen(b), context.Background()
		rdb := s.Client()
		ids := make([]string, n)
		for i := range n {
			now := time.Now()
			r := &deskbot.Request{ID: uuid.NewString(), Desk: "main", Kind: deskbot.KindPermission, TriggerID: uuid.NewString(),
				Content:   deskbot.PermissionContent{ToolName: "place_order", CallID: "call_" + strconv.Itoa(i), Arguments: []byte(`{"symbol":"NIFTY24DECFUT","side":"sell","quantity":50,"price":24512.5}`)},
				CreatedAt: now, ExpiresAt: now.Add(5 * time.Minute)}
			audit := deskbot.AuditEntry{Action: "hold", Tool: "place_order", By: "desk main", At: now, Detail: argtext.Canonical(r.Content.Arguments)}
			ev := deskbot.Event{Kind: deskbot.EventUserRequest, Desk: "main", Time: now, TriggerID: r.TriggerID}
			if err := s.CreateRequest(ctx, r, audit, ev); err != nil {
				b.Fatal(err)
			}
			ids[i] = r.ID
		}
		usage := func(key string) int64 {
			v, err := rdb.MemoryUsage(ctx, key, 0).Result()
			if err == redis.Nil {
				return 0 // no such key
			}
			if err != nil {
				b.Fatalf("MEMORY USAGE %s: %v", key, err)
			}
			return v
		}
		var total int64
		for _, id := range ids {
			total += usage(s.Key("req", id))
		}
		for _, k := range []string{"open", "openby", "audit", "events"} {
			total += usage(s.Key(k))
		}
		minKey := s.Key("minimal")
		rdb.HSet(ctx, minKey, "f", "v")
		minimal := usage(minKey)
		b.StartTimer()
		per := float64(total) / n
		b.ReportMetric(per, "B/open-request")
		b.ReportMetric(float64(minimal), "B/minimal-hash")
		b.ReportMetric(per/float64(minimal), "x_minimal")
	}
}

// BenchmarkWakeDesks has n desks wait in NextTrigger, as idle desks do,
// and each op queues one trigger for every desk at once and waits until
// every desk has taken and acknowledged its own: per trigger, with the
// wait from queueing to taking (p99-wake-us). The floor, in the same loop,
// is the same triggers queued, then taken and acknowledged one desk after
// another without waiting (nobody waits on the floor's desks). From 1 to
// 100 desks the cost per trigger may not grow: past go-redis's pool size
// (20 here), desks that each held a connection while they waited left the
// enqueues waiting for one.
//
//	go test -run '^$' -bench WakeDesks -benchtime 20x ./store/
func BenchmarkWakeDesks(b *testing.B) {
	for _, n := range []int{1, 10, 50, 100, 200} {
		b.Run(fmt.Sprintf("desks=%d", n), func(b *testing.B) {
			s := storetest.MustOpen(b)
			ctx := b.Context()
			type took struct {
				desk string
				at   time.Time
			}
			got := make(chan took, n)
			stop := make(chan struct{})
			defer close(stop)
			for i := range n {
				desk := fmt.Sprintf("w%d", i)
				go func() {
					for {
						select {
						case <-stop:
							return
						default:
						}
						tr, err := s.NextTrigger(ctx, desk, time.Second)
						if err != nil || tr == nil {
							continue
						}
						s.AckTrigger(ctx, tr)
						got <- took{desk, time.Now()}
					}
				}()
			}
			for deadline := time.Now().Add(10 * time.Second); s.InboxHubStats().Waiting < n && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
			var waits []time.Duration
			op := func(int) {
				queued := make(map[string]time.Time, n)
				for i := range n {
					desk := fmt.Sprintf("w%d", i)
					queued[desk] = time.Now()
					if err := s.Enqueue(ctx, deskbot.Trigger{Desk: desk, Kind: deskbot.TriggerMessage, Text: "go"}); err != nil {
						b.Fatal(err)
					}
				}
				for range n {
					select {
					case tk := <-got:
						waits = append(waits, tk.at.Sub(queued[tk.desk]))
					case <-time.After(30 * time.Second):
						b.Fatal("a desk never took its trigger")
					}
				}
			}
			floorOp := func(int) {
				for i := range n {
					if err := s.Enqueue(ctx, deskbot.Trigger{Desk: fmt.Sprintf("f%d", i), Kind: deskbot.TriggerMessage, Text: "go"}); err != nil {
						b.Fatal(err)
					}
				}
				for i := range n {
					tr, err := s.NextTrigger(ctx, fmt.Sprintf("f%d", i), 0)
					if err != nil || tr == nil {
						b.Fatalf("floor's take = %v, %v", tr, err)
					}
					s.AckTrigger(ctx, tr)
				}
			}
			floorOp(0) // the floor's groups made before timing
			b.ResetTimer()
			compare(b, op, floor{"take", floorOp})
			b.ReportMetric(float64(pctOf(waits, 99).Microseconds()), "p99-wake-us")
			for _, p := range s.PoolStats() {
				if p.Stats.Timeouts > 0 {
					b.Errorf("pool %s: %d commands timed out waiting for a connection", p.Pool, p.Stats.Timeouts)
				}
			}
		})
	}
}

func pctOf(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(ds))
	return s[min(len(s)-1, len(s)*p/100)]
}
