package store_test

import (
	"context"
	"crypto/sha1"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/store"
	"github.com/deskbot/deskbot/store/storetest"
	"github.com/redis/go-redis/v9"
)

// A busy desk's year of audit: 200 entries a trading day (some 65 held
// orders, each held, allowed and run, and a few pauses and refusals), 250
// trading days.
const auditYear = 200 * 250

// realisticAudit is the i-th entry of a busy desk's trail: a held order
// with its arguments, its allow by a person, its run.
func realisticAudit(i int, at time.Time) deskbot.AuditEntry {
	req := fmt.Sprintf("6f1c2a9e-4b7d-4e0a-9c3f-%012d", i/3)
	switch i % 3 {
	case 0:
		return deskbot.AuditEntry{Action: "hold", Desk: "nifty-momentum", Tool: "place_order", RequestID: req, By: "desk nifty-momentum", At: at,
			Detail: `{"price":24512.5,"product":"NRML","quantity":75,"side":"sell","symbol":"NFO:NIFTY25DECFUT"}`}
	case 1:
		return deskbot.AuditEntry{Action: "allow_once", Desk: "nifty-momentum", Tool: "place_order", RequestID: req, By: "Asha Rao (1234567890)", At: at}
	}
	return deskbot.AuditEntry{Action: "ran", Desk: "nifty-momentum", Tool: "place_order", RequestID: req, By: "system", At: at, Detail: "412.345ms"}
}

// mustAuditYear writes a busy desk's year of audit through Audit, eight
// writers at once (the chain is one line whatever their order).
func mustAuditYear(b *testing.B, s *store.Store) {
	b.Helper()
	ctx := context.Background()
	at := time.Now()
	var wg sync.WaitGroup
	const writers = 8
	for w := range writers {
		wg.Go(func() {
			for i := w; i < auditYear; i += writers {
				if err := s.Audit(ctx, realisticAudit(i, at)); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// BenchmarkAuditVerifyYear verifies a busy desk's year of audit (auditYear
// entries) against two floors in the same run: reading the same stream a
// page at a time with no hashing (readFloor), and hashing the same bytes
// with no Redis (hashFloor). Needs a real Redis for its figures (the
// embedded one is no measure).
//
//	go test -run '^$' -bench AuditVerifyYear -benchtime 3x ./store/
func BenchmarkAuditVerifyYear(b *testing.B) {
	storetest.NeedsRealRedis(b, "a year of audit")
	s, ctx := storetest.MustOpen(b), context.Background()
	mustAuditYear(b, s)
	b.Run("verify", func(b *testing.B) {
		for b.Loop() {
			chk, err := s.VerifyAudit(ctx)
			if err != nil || chk.Broken != nil || chk.Checked != auditYear {
				b.Fatalf("verify: %+v, %v", chk, err)
			}
		}
	})
	var all []redis.XMessage
	b.Run("readFloor", func(b *testing.B) {
		for b.Loop() {
			all = all[:0]
			from := "-"
			for {
				msgs, err := s.Client().XRangeN(ctx, s.Key("audit"), from, "+", 1000).Result()
				if err != nil {
					b.Fatal(err)
				}
				all = append(all, msgs...)
				if len(msgs) < 1000 {
					break
				}
				from = "(" + msgs[len(msgs)-1].ID
			}
		}
	})
	b.Run("hashFloor", func(b *testing.B) {
		for b.Loop() {
			for _, m := range all {
				h := sha1.New()
				for _, n := range []string{"p", "a", "d", "t", "r", "b", "m", "x"} {
					v, _ := m.Values[n].(string)
					h.Write([]byte(v))
				}
				h.Sum(nil)
			}
		}
	})
}

// BenchmarkMemoryPerAuditEntry reports what Redis says a busy desk's year
// of audit takes per entry (MEMORY USAGE of the stream, all of it sampled,
// divided by its entries), beside its floor in the same run: the same
// entries without the chain's previous hash.
//
//	go test -run '^$' -bench MemoryPerAuditEntry -benchtime 1x ./store/
func BenchmarkMemoryPerAuditEntry(b *testing.B) {
	storetest.NeedsRealRedis(b, "MEMORY USAGE")
	for b.Loop() {
		b.StopTimer()
		s, ctx := storetest.MustOpen(b), context.Background()
		mustAuditYear(b, s)
		floor := s.Key("audit", "floor")
		at := time.Now()
		p := s.Client().Pipeline()
		for i := range auditYear {
			e := realisticAudit(i, at)
			p.XAdd(ctx, &redis.XAddArgs{Stream: floor, Values: []any{"a", e.Action, "d", e.Desk, "t", e.Tool, "r", e.RequestID, "b", e.By, "m", strconv.FormatInt(at.UnixMilli(), 10), "x", e.Detail}})
			if i%1000 == 999 {
				if _, err := p.Exec(ctx); err != nil {
					b.Fatal(err)
				}
			}
		}
		if _, err := p.Exec(ctx); err != nil {
			b.Fatal(err)
		}
		usage := func(key string) float64 {
			v, err := s.Client().MemoryUsage(ctx, key, 0).Result()
			if err != nil {
				b.Fatalf("MEMORY USAGE %s: %v", key, err)
			}
			return float64(v) / auditYear
		}
		chained, unchained := usage(s.Key("audit")), usage(floor)
		s.Client().Del(ctx, floor)
		b.StartTimer()
		b.ReportMetric(chained, "B/entry")
		b.ReportMetric(unchained, "B/entry-unchained")
		b.ReportMetric(chained*auditYear/(1<<20), "MiB/year")
	}
}
