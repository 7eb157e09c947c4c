package gate_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot/deskbottest"

	"github.com/deskbot/deskbot/gate/gatetest"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/gate"
	"github.com/deskbot/deskbot/store"
	"github.com/deskbot/deskbot/store/storetest"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// The benchmarks compare the gate with the floor it cannot beat: the
// commands the gate's work needs, pipelined to the same Redis in as few
// round trips as the work allows (one for a hold; two for an allow, whose
// decision must be durable before the call runs). Run:
//
//	go test -run '^$' -bench . -benchmem ./gate
//
// BenchmarkHold and BenchmarkResolve also run their floor after every
// operation, timing each separately, and report floor-ns/op and x_floor:
// on a shared machine both then see the same load, which separate runs of
// the floor benchmarks cannot promise.

var benchArgs = json.RawMessage(`{"symbol":"NIFTY24DECFUT","side":"sell","quantity":50,"price":24512.5}`)

type benchFixture struct {
	store *store.Store
	gate  *gate.Gate
	clock *deskbottest.Clock
}

func mustBench(b *testing.B) *benchFixture {
	b.Helper()
	f := &benchFixture{store: storetest.MustOpen(b), clock: newClock()}
	f.gate = gatetest.MustNew(b, gate.Config{Tools: []string{"place_order"}, Expiry: 5 * time.Minute, Limits: &market{}}, f.store, &runner{}, f.clock.Now, quietLog())
	return f
}

func BenchmarkHold(b *testing.B) { benchHold(b, mustBench(b)) }

// BenchmarkHoldReplica and BenchmarkResolveReplica are BenchmarkHold and
// BenchmarkResolve on a primary with one replica (started for the
// benchmark, on loopback): the store waits for the replica (WAIT) before a
// hold or a decision returns; the floor does not. Compare them with
// BenchmarkHold and BenchmarkResolve in the same run for the cost of WAIT.
func BenchmarkHoldReplica(b *testing.B) { benchHold(b, mustBenchReplica(b)) }

func BenchmarkResolveReplica(b *testing.B) { benchResolve(b, mustBenchReplica(b), 1) }

func mustBenchReplica(b *testing.B) *benchFixture {
	b.Helper()
	set := storetest.StartReplicated(b)
	s, err := store.Open(context.Background(), store.Options{URL: set.URL(), Prefix: storetest.RandomPrefix()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	f := &benchFixture{store: s, clock: newClock()}
	f.gate = gatetest.MustNew(b, gate.Config{Tools: []string{"place_order"}, Expiry: 5 * time.Minute, Limits: &market{}}, f.store, &runner{}, f.clock.Now, quietLog())
	return f
}

func benchHold(b *testing.B, f *benchFixture) {
	ctx := context.Background()
	call := deskbot.ToolCall{ID: "call_1", Name: "place_order", Arguments: benchArgs}
	floor := holdFloor(f)
	paired(b, func() {
		if _, _, err := f.gate.Hold(ctx, "main", "trig", call); err != nil {
			b.Fatal(err)
		}
	}, floor)
}

// paired runs op and floor alternately b.N times, timing each alone, and
// reports op's ns/op, the floor's and their ratio.
func paired(b *testing.B, op, floor func()) {
	b.Helper()
	var own, spent time.Duration
	for range b.N {
		t0 := time.Now()
		op()
		t1 := time.Now()
		floor()
		own, spent = own+t1.Sub(t0), spent+time.Since(t1)
	}
	b.ReportMetric(float64(own.Nanoseconds())/float64(b.N), "ns/op")
	b.ReportMetric(float64(spent.Nanoseconds())/float64(b.N), "floor-ns/op")
	b.ReportMetric(float64(own)/float64(spent), "x_floor")
}

// BenchmarkHoldFloor is one pipelined round trip with the writes a hold
// makes: the request hash, its expiry, the open index, the desk's open
// count, the audit and event stream entries.
func BenchmarkHoldFloor(b *testing.B) {
	floor := holdFloor(mustBench(b))
	for b.Loop() {
		floor()
	}
}

func holdFloor(f *benchFixture) func() {
	ctx := context.Background()
	rdb := f.store.Client()
	data, _ := json.Marshal(map[string]any{"request_id": uuid.NewString(), "desk": "main", "tool_name": "place_order", "call_id": "call_1"})
	rec := "permission\x1fplace_order\x1ftrig\x1f1795942800000\x1fcall_1"
	return func() {
		id := uuid.NewString()
		key := f.store.Key("floor", id)
		_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.HSet(ctx, key, "s", "open", "e", 1, "w", "main", "c", rec, "a", []byte(benchArgs))
			p.PExpireAt(ctx, key, time.Now().Add(time.Hour))
			p.ZAdd(ctx, f.store.Key("floor-open"), redis.Z{Score: 1, Member: id})
			p.HIncrBy(ctx, f.store.Key("floor-openby"), "main", 1)
			p.XAdd(ctx, &redis.XAddArgs{Stream: f.store.Key("floor-audit"), Values: []any{"data", data}})
			p.XAdd(ctx, &redis.XAddArgs{Stream: f.store.Key("floor-events"), Values: []any{"data", data}})
			return nil
		})
		if err != nil {
			panic(err)
		}
	}
}

// BenchmarkResolve is a full allow of a request the gate held: decide
// atomically, run the (instant) call, record the result and hand the desk
// its message. The requests are held before the timer starts.
//
// It needs one approver (every allow still goes through the count);
// BenchmarkResolveTwoApprovers needs two, and its op is both taps: the first
// is counted (the request stays open), the second meets the count and runs
// the call. Their x_floor is against the two-trip floor
// (BenchmarkResolveTwoTripFloor's op), timed in the same loop.
func BenchmarkResolve(b *testing.B) { benchResolve(b, mustBench(b), 1) }

func BenchmarkResolveTwoApprovers(b *testing.B) { benchResolve(b, mustBench(b), 2) }

func benchResolve(b *testing.B, f *benchFixture, n int) {
	if n > 1 {
		f.gate = gatetest.MustNew(b, gate.Config{Tools: []string{"place_order"}, Expiry: 5 * time.Minute, Limits: &market{},
			Policies: deskbot.Policies{"main": {"place_order": {Approvals: n}}}}, f.store, &runner{}, f.clock.Now, quietLog())
	}
	ctx := context.Background()
	call := deskbot.ToolCall{ID: "call_1", Name: "place_order", Arguments: benchArgs}
	held := make([]string, 0, b.N)
	for range b.N {
		r, _, err := f.gate.Hold(ctx, "main", "trig", call)
		if err != nil {
			b.Fatal(err)
		}
		held = append(held, r.ID)
	}
	// The floor is two round trips: "nothing twice" needs the decision
	// durable before the call and its result after it.
	floor := resolveTwoTripFloor(f)
	b.ResetTimer()
	paired(b, func() {
		id := held[0]
		held = held[1:]
		if n > 1 {
			if resp, err := gatetest.Resolve(ctx, f.gate, id, deskbot.AllowOnce, "", ravi); err != nil || !resp.Counted {
				b.Fatal(resp, err)
			}
		}
		if resp, err := f.gate.Decide(ctx, id, deskbot.Seen{Changes: -1, Whole: true}, deskbot.AllowOnce, "", asha); err != nil || resp.Counted {
			b.Fatal(resp, err)
		}
		f.gate.WaitRuns() // the call runs on the gate's lifetime

	}, floor)
}

// BenchmarkResolveFloor is one pipelined round trip carrying the commands of
// a resolve: the read, the two state changes with their index updates and
// the desk's open count, two audit entries, two events and the desk's inbox
// entry.
func BenchmarkResolveFloor(b *testing.B) {
	floor := resolveFloor(mustBench(b))
	for b.Loop() {
		floor()
	}
}

func resolveFloor(f *benchFixture) func() {
	decide, run := resolveFloorTrips(f)
	ctx := context.Background()
	return func() {
		id := uuid.NewString()
		if _, err := f.store.Client().Pipelined(ctx, func(p redis.Pipeliner) error {
			decide(p, id)
			run(p, id)
			return nil
		}); err != nil {
			panic(err)
		}
	}
}

// resolveFloorTrips are the floor's commands as an allow needs them: the
// read and the decision's writes, then the record of the run.
func resolveFloorTrips(f *benchFixture) (decide, run func(p redis.Pipeliner, id string)) {
	ctx := context.Background()
	entry := []any{"data", `{"action":"allow_once","by":"Asha (101)"}`}
	decide = func(p redis.Pipeliner, id string) {
		key := f.store.Key("floor", id)
		p.HGetAll(ctx, key)
		p.HSet(ctx, key, "state", "running", "decision", "allow_once", "decided_by", "Asha", "decided_at", 1)
		p.ZRem(ctx, f.store.Key("floor-open"), id)
		p.HIncrBy(ctx, f.store.Key("floor-openby"), "main", -1)
		p.SAdd(ctx, f.store.Key("floor-running"), id)
		p.XAdd(ctx, &redis.XAddArgs{Stream: f.store.Key("floor-audit"), Values: entry})
		p.XAdd(ctx, &redis.XAddArgs{Stream: f.store.Key("floor-events"), Values: entry})
	}
	run = func(p redis.Pipeliner, id string) {
		key := f.store.Key("floor", id)
		p.HSet(ctx, key, "state", "ran", "result", `{"text":"ok"}`, "response", "The user allowed…", "delivered_at", 2)
		p.SRem(ctx, f.store.Key("floor-running"), id)
		p.XAdd(ctx, &redis.XAddArgs{Stream: f.store.Key("floor-audit"), Values: entry})
		p.XAdd(ctx, &redis.XAddArgs{Stream: f.store.Key("floor-events"), Values: entry})
		p.XAdd(ctx, &redis.XAddArgs{Stream: f.store.Key("floor-inbox"), Values: entry})
		p.Del(ctx, key)
	}
	return decide, run
}

// BenchmarkResolveTwoTripFloor is the least a resolve can cost once the
// decision must be durable before the call runs: the commands of
// BenchmarkResolveFloor in the two round trips a resolve needs (the read
// and the decision's writes, then the record of the run), nothing else. Its
// x_floor is against the one-trip floor, timed in the same loop: what the
// second round trip alone costs on this machine, which no change to the
// gate can take away.
func BenchmarkResolveTwoTripFloor(b *testing.B) {
	f := mustBench(b)
	paired(b, resolveTwoTripFloor(f), resolveFloor(f))
}

// resolveTwoTripFloor is the floor's commands in the two round trips an
// allow needs; BenchmarkResolve's x_floor is against it.
func resolveTwoTripFloor(f *benchFixture) func() {
	ctx := context.Background()
	decide, run := resolveFloorTrips(f)
	return func() {
		id := uuid.NewString()
		for _, trip := range []func(redis.Pipeliner, string){decide, run} {
			if _, err := f.store.Client().Pipelined(ctx, func(p redis.Pipeliner) error { trip(p, id); return nil }); err != nil {
				panic(err)
			}
		}
	}
}

// BenchmarkSweep lapses 100 due requests among many open ones. Its time
// must follow the 100, not the open total.
func BenchmarkSweep(b *testing.B) {
	for _, open := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("due=100/open=%d", open), func(b *testing.B) {
			f := mustBench(b)
			ctx := context.Background()
			mustCreateOpen(b, f, open-100, time.Hour) // not due
			for b.Loop() {
				b.StopTimer()
				mustCreateOpen(b, f, 100, time.Minute) // due after the jump
				f.clock.Add(2 * time.Minute)
				b.StartTimer()
				rep, err := f.gate.Sweep(ctx)
				if err != nil || rep.Lapsed != 100 {
					b.Fatalf("sweep = %+v, %v", rep, err)
				}
				b.StopTimer()
				f.clock.Add(-2 * time.Minute) // keep the far requests open
				b.StartTimer()
			}
		})
	}
}

// mustCreateOpen creates n open requests expiring after d, many at a time.
func mustCreateOpen(b *testing.B, f *benchFixture, n int, d time.Duration) {
	b.Helper()
	ctx := context.Background()
	now := f.clock.Now()
	sem := make(chan struct{}, 32)
	errs := make(chan error, n)
	for range n {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			r := &deskbot.Request{ID: uuid.NewString(), Desk: "main", Content: deskbot.PermissionContent{ToolName: "place_order", Arguments: benchArgs, CallID: "c"}, CreatedAt: now, ExpiresAt: now.Add(d)}
			errs <- f.store.CreateRequest(ctx, r, deskbot.AuditEntry{Action: "hold", By: "bench", At: now}, deskbot.Event{Kind: deskbot.EventUserRequest, Time: now})
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkResolveLeader is BenchmarkResolve with a leader lease: each
// decision carries the fencing token, which the allow's script compares
// with the lease (one GET inside the same script, no round trip). Hold is
// not fenced, so it has no leader variant.
func BenchmarkResolveLeader(b *testing.B) {
	f := mustBench(b)
	token, err := f.store.AcquireLease(context.Background(), time.Hour)
	if err != nil || token == 0 {
		b.Fatalf("AcquireLease = %d, %v", token, err)
	}
	tm := &term{}
	tm.token.Store(token)
	f.gate = gatetest.MustNew(b, gate.Config{Tools: []string{"place_order"}, Expiry: 5 * time.Minute, Leader: tm, Limits: &market{}}, f.store, &runner{}, f.clock.Now, quietLog())
	benchResolve(b, f, 1)
}

// The audit trail is a chain (store/audit.go): each entry carries the hash
// of the one before it, read from the head and replaced by the entry's own
// hash in the same atomic step as what the entry records. No floor above
// pays for that. BenchmarkHoldChainFloor and BenchmarkResolveChainFloor are
// the floors with the chain's own work added to each trip that writes an
// audit entry: the head's GET and SET in the same pipeline, and the entry's
// SHA-1 (made here, in Go, over the entry's fields: a pipeline cannot feed
// the GET's answer to the SET, so this is less than the chain costs, never
// more). BenchmarkHoldChained and BenchmarkResolveChained report the gate's
// x_floor against them: what is left over the floor once the tamper-evident
// chain is paid for.

func BenchmarkHoldChainFloor(b *testing.B) {
	f := mustBench(b)
	paired(b, holdChainFloor(f), holdFloor(f))
}

func BenchmarkHoldChained(b *testing.B) {
	f := mustBench(b)
	ctx := context.Background()
	call := deskbot.ToolCall{ID: "call_1", Name: "place_order", Arguments: benchArgs}
	paired(b, func() {
		if _, _, err := f.gate.Hold(ctx, "main", "trig", call); err != nil {
			b.Fatal(err)
		}
	}, holdChainFloor(f))
}

func BenchmarkResolveChainFloor(b *testing.B) {
	f := mustBench(b)
	paired(b, resolveChainFloor(f), resolveTwoTripFloor(f))
}

func BenchmarkResolveChained(b *testing.B) {
	f := mustBench(b)
	ctx := context.Background()
	call := deskbot.ToolCall{ID: "call_1", Name: "place_order", Arguments: benchArgs}
	held := make([]string, 0, b.N)
	for range b.N {
		r, _, err := f.gate.Hold(ctx, "main", "trig", call)
		if err != nil {
			b.Fatal(err)
		}
		held = append(held, r.ID)
	}
	floor := resolveChainFloor(f)
	b.ResetTimer()
	paired(b, func() {
		id := held[0]
		held = held[1:]
		if resp, err := f.gate.Decide(ctx, id, deskbot.Seen{Changes: -1, Whole: true}, deskbot.AllowOnce, "", asha); err != nil || resp.Counted {
			b.Fatal(resp, err)
		}
		f.gate.WaitRuns()
	}, floor)
}

// chainLink adds to p the audit chain's work for one entry: the head read,
// the entry's hash (over the previous hash and the entry's fields, as the
// store hashes them) and the head written.
func chainLink(ctx context.Context, f *benchFixture, p redis.Pipeliner, fields ...string) {
	head := f.store.Key("floor-audit", "head")
	p.Get(ctx, head)
	h := sha1.New()
	for _, v := range append([]string{strings.Repeat("0", 40)}, fields...) {
		fmt.Fprintf(h, "%d:%s", len(v), v)
	}
	p.Set(ctx, head, hex.EncodeToString(h.Sum(nil)), 0)
}

func holdChainFloor(f *benchFixture) func() {
	ctx := context.Background()
	rdb := f.store.Client()
	data, _ := json.Marshal(map[string]any{"request_id": uuid.NewString(), "desk": "main", "tool_name": "place_order", "call_id": "call_1"})
	rec := "permission\x1fplace_order\x1ftrig\x1f1795942800000\x1fcall_1"
	return func() {
		id := uuid.NewString()
		key := f.store.Key("floor", id)
		_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.HSet(ctx, key, "s", "open", "e", 1, "w", "main", "c", rec, "a", []byte(benchArgs))
			p.PExpireAt(ctx, key, time.Now().Add(time.Hour))
			p.ZAdd(ctx, f.store.Key("floor-open"), redis.Z{Score: 1, Member: id})
			p.HIncrBy(ctx, f.store.Key("floor-openby"), "main", 1)
			chainLink(ctx, f, p, "hold", "main", "place_order", id, "desk main", "1795942800000", string(benchArgs))
			p.XAdd(ctx, &redis.XAddArgs{Stream: f.store.Key("floor-audit"), Values: []any{"data", data}})
			p.XAdd(ctx, &redis.XAddArgs{Stream: f.store.Key("floor-events"), Values: []any{"data", data}})
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) { // the first link finds no head
			panic(err)
		}
	}
}

// resolveChainFloor is resolveTwoTripFloor with a chain link in each trip
// (a decision and a run each write one audit entry).
func resolveChainFloor(f *benchFixture) func() {
	ctx := context.Background()
	decide, run := resolveFloorTrips(f)
	return func() {
		id := uuid.NewString()
		for _, trip := range []func(redis.Pipeliner, string){decide, run} {
			if _, err := f.store.Client().Pipelined(ctx, func(p redis.Pipeliner) error {
				chainLink(ctx, f, p, "allow_once", "main", "place_order", id, "Asha (101)", "1795942800000", "")
				trip(p, id)
				return nil
			}); err != nil && !errors.Is(err, redis.Nil) { // the first link finds no head
				panic(err)
			}
		}
	}
}
