package ops_test

import (
	"testing"
	"time"

	"github.com/deskbot/deskbot/ops"
	"github.com/deskbot/deskbot/store/storetest"
)

// The pools' figures reach /metrics by pool, and the inbox hub's beside
// them, from a store as the service wires it.
func TestPoolMetrics(t *testing.T) {
	m := ops.NewMetrics(nil)
	m.WatchPools(func() ops.Pools {
		return ops.Pools{Pools: []ops.PoolStats{
			{Pool: "work", Size: 40, Hits: 7, Misses: 2, Timeouts: 1, Waits: 3, Waited: 1500 * time.Millisecond, Conns: 5, Idle: 4},
			{Pool: "lease", Size: 2},
		}, Waiting: 12, Reads: 30, Wakes: 4}
	})
	got := mustScrape(t, mustServe(t, m))
	for name, want := range map[string]float64{
		`deskbot_redis_pool_hits_total{pool="work"}`:         7,
		`deskbot_redis_pool_misses_total{pool="work"}`:       2,
		`deskbot_redis_pool_timeouts_total{pool="work"}`:     1,
		`deskbot_redis_pool_waits_total{pool="work"}`:        3,
		`deskbot_redis_pool_wait_seconds_total{pool="work"}`: 1.5,
		`deskbot_redis_pool_connections{pool="work"}`:        5,
		`deskbot_redis_pool_idle_connections{pool="work"}`:   4,
		`deskbot_redis_pool_size{pool="work"}`:               40,
		`deskbot_redis_pool_size{pool="lease"}`:              2,
		`deskbot_inbox_waiting_desks`:                        12,
		`deskbot_inbox_reads_total`:                          30,
		`deskbot_inbox_wakes_total`:                          4,
	} {
		if v, ok := got[name]; !ok || v != want {
			t.Errorf("%s = %v (present %v); want %v", name, v, ok, want)
		}
	}

	// A real store names its four pools.
	st := storetest.MustOpenEmbedded(t)
	var names []string
	for _, p := range st.PoolStats() {
		names = append(names, p.Pool)
	}
	if got, want := len(names), 4; got != want {
		t.Errorf("store pools = %v; want work, chat, lease and inbox", names)
	}
}
