package ops

import (
	"time"

	"github.com/deskbot/deskbot/store"

	"github.com/prometheus/client_golang/prometheus"
)

// Pools is what the store's connection pools and its inbox hub report:
// read at scrape time, from memory (no round trip).
type Pools struct {
	Pools []PoolStats
	// The inbox hub: desks waiting on its one read now, reads it sent,
	// and wakes (a desk started waiting outside the read in flight).
	Waiting      int
	Reads, Wakes uint64
}

// PoolStats is one pool's budget and go-redis's counts for it.
type PoolStats struct {
	Pool                          string // work, chat, lease or inbox
	Size                          int    // connections at most
	Hits, Misses, Timeouts, Waits uint64 // free connection found, none found (one dialed or waited for), waits that timed out, waits
	Waited                        time.Duration
	Conns, Idle                   int // open now, of which idle
}

// WatchPools exports f's figures at every scrape: per pool, hits, misses,
// timeouts (a command that failed as "Redis is unavailable" for want of a
// connection), waits and the time waited, connections open and idle, and
// the size; and the inbox hub's desks waiting, reads and wakes.
func (m *Metrics) WatchPools(f func() Pools) {
	m.reg.MustRegister(&poolCollector{f: f})
}

// StorePools is the store's pools and inbox hub as the metrics show them
// (WatchPools' f).
func StorePools(s *store.Store) func() Pools {
	return func() Pools {
		var p Pools
		for _, st := range s.PoolStats() {
			p.Pools = append(p.Pools, PoolStats{
				Pool: st.Pool, Size: st.Size, Hits: uint64(st.Stats.Hits), Misses: uint64(st.Stats.Misses),
				Timeouts: uint64(st.Stats.Timeouts), Waits: uint64(st.Stats.WaitCount),
				Waited: time.Duration(st.Stats.WaitDurationNs), Conns: int(st.Stats.TotalConns), Idle: int(st.Stats.IdleConns),
			})
		}
		h := s.InboxHubStats()
		p.Waiting, p.Reads, p.Wakes = h.Waiting, h.Reads, h.Wakes
		return p
	}
}

type poolCollector struct{ f func() Pools }

var (
	poolHits     = poolDesc("redis_pool_hits_total", "Commands that found a free connection in the pool.")
	poolMisses   = poolDesc("redis_pool_misses_total", "Commands that found no free connection (one was dialed, or waited for).")
	poolTimeouts = poolDesc("redis_pool_timeouts_total", "Commands that waited for a connection until the pool's timeout, and failed.")
	poolWaits    = poolDesc("redis_pool_waits_total", "Commands that waited for a connection.")
	poolWaited   = poolDesc("redis_pool_wait_seconds_total", "Time commands spent waiting for a connection.")
	poolConns    = poolDesc("redis_pool_connections", "Connections open in the pool.")
	poolIdle     = poolDesc("redis_pool_idle_connections", "Connections open and idle in the pool.")
	poolSize     = poolDesc("redis_pool_size", "Connections the pool may open at most.")
	hubWaiting   = prometheus.NewDesc("deskbot_inbox_waiting_desks", "Desks waiting for a trigger on the inbox hub's one read.", nil, nil)
	hubReads     = prometheus.NewDesc("deskbot_inbox_reads_total", "Reads the inbox hub sent, each over every desk waiting then.", nil, nil)
	hubWakes     = prometheus.NewDesc("deskbot_inbox_wakes_total", "Reads the inbox hub ended early: a desk started waiting outside the read in flight.", nil, nil)
)

func poolDesc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc("deskbot_"+name, help, []string{"pool"}, nil)
}

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{poolHits, poolMisses, poolTimeouts, poolWaits, poolWaited, poolConns, poolIdle, poolSize, hubWaiting, hubReads, hubWakes} {
		ch <- d
	}
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	p := c.f()
	for _, s := range p.Pools {
		ch <- prometheus.MustNewConstMetric(poolHits, prometheus.CounterValue, float64(s.Hits), s.Pool)
		ch <- prometheus.MustNewConstMetric(poolMisses, prometheus.CounterValue, float64(s.Misses), s.Pool)
		ch <- prometheus.MustNewConstMetric(poolTimeouts, prometheus.CounterValue, float64(s.Timeouts), s.Pool)
		ch <- prometheus.MustNewConstMetric(poolWaits, prometheus.CounterValue, float64(s.Waits), s.Pool)
		ch <- prometheus.MustNewConstMetric(poolWaited, prometheus.CounterValue, s.Waited.Seconds(), s.Pool)
		ch <- prometheus.MustNewConstMetric(poolConns, prometheus.GaugeValue, float64(s.Conns), s.Pool)
		ch <- prometheus.MustNewConstMetric(poolIdle, prometheus.GaugeValue, float64(s.Idle), s.Pool)
		ch <- prometheus.MustNewConstMetric(poolSize, prometheus.GaugeValue, float64(s.Size), s.Pool)
	}
	ch <- prometheus.MustNewConstMetric(hubWaiting, prometheus.GaugeValue, float64(p.Waiting))
	ch <- prometheus.MustNewConstMetric(hubReads, prometheus.CounterValue, float64(p.Reads))
	ch <- prometheus.MustNewConstMetric(hubWakes, prometheus.CounterValue, float64(p.Wakes))
}
