// Package ops is what whoever runs deskbot looks at: Prometheus metrics,
// the /healthz check, the HTTP server that serves both, the logger and the
// build's version (Version); and the service's graceful stop (Drain: the
// loops it runs, and its two phases).
// With several processes on one Redis, /healthz says each one's role
// (RoleHealthHandler: leader or standby); a standby serves both endpoints
// and counts no events (only the leader reads the metrics group).
//
// Metrics come from decorators and readers, never from hooks inside the
// parts they measure: models and tools are wrapped (WrapModel, WrapTools),
// request outcomes are read from the event stream through their own
// consumer group (Metrics.CountEvents, at least once: a crash between counting and
// acknowledging counts an event twice), the outbox depth is asked of Redis
// at scrape time, the Redis pools' and the inbox read's figures are read
// from the store's memory at scrape time (WatchPools), and Telegram retries
// arrive through the sender's OnRetry.
//
// Concurrency: every type here is safe for concurrent use. Nothing on the
// request path ever waits on a metric; a scrape does its own Redis reads
// with a short timeout.
package ops

import (
	"context"
	"github.com/deskbot/deskbot"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Backlog reports how far the outbox is behind: events given to it and not
// yet acknowledged, and events it has not read yet.
type Backlog func(ctx context.Context) (pending, undelivered int64, err error)

// Metrics holds deskbot's collectors in a registry of its own (so tests can
// build many and nothing leaks into the global default registry).
type Metrics struct {
	reg *prometheus.Registry

	held, decided, lapsed *prometheus.CounterVec
	decisionTime          *prometheus.HistogramVec
	toolCalls, toolErrors *prometheus.CounterVec
	modelCalls, modelFail *prometheus.CounterVec
	tgRetries             *prometheus.CounterVec
}

// NewMetrics registers every collector. backlog may be nil (no outbox
// gauge).
func NewMetrics(backlog Backlog) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "deskbot", Name: name, Help: help}, labels)
		m.reg.MustRegister(c)
		return c
	}
	m.held = counter("requests_held_total", "Tool calls held for a person's decision.", "desk")
	m.decided = counter("requests_decided_total", "Held calls decided by a person, by decision.", "desk", "decision")
	m.lapsed = counter("requests_lapsed_total", "Held calls that lapsed without a decision.", "desk")
	m.decisionTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "deskbot", Name: "request_decision_seconds",
		Help:    "Time from holding a call to a person's decision.",
		Buckets: []float64{5, 15, 30, 60, 120, 300, 600, 1800, 3600},
	}, []string{"decision"})
	m.reg.MustRegister(m.decisionTime)
	m.toolCalls = counter("tool_calls_total", "Tool calls run, by tool.", "tool")
	m.toolErrors = counter("tool_errors_total", "Tool calls that returned an error result or failed, by tool.", "tool")
	m.modelCalls = counter("model_calls_total", "Model completions (a whole turn, for a backend that runs turns) asked for, by backend.", "backend")
	m.modelFail = counter("model_failures_total", "Model completions (or whole turns) that failed, by backend.", "backend")
	m.tgRetries = counter("telegram_retries_total", "Telegram calls retried, by method and the code that caused it (0: network).", "method", "code")
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "deskbot", Name: "orders_parsed_total",
		Help: "Times place_order's arguments were parsed: once where a call enters and once as its tool runs it; faster growth means something reads orders again."},
		func() float64 { return float64(deskbot.OrdersParsed()) }))
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if backlog != nil {
		m.reg.MustRegister(&backlogCollector{f: backlog, desc: prometheus.NewDesc("deskbot_outbox_depth",
			"Events waiting to reach the chat: pending (read, not yet accepted by Telegram) and undelivered (not read yet).",
			[]string{"state"}, nil)})
	}
	return m
}

// Handler serves the metrics in Prometheus' text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Registry is the registry, for tests that gather directly.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// OnTelegramRetry fits bot.SenderOptions.OnRetry.
func (m *Metrics) OnTelegramRetry(method string, code int) {
	m.tgRetries.WithLabelValues(method, strconv.Itoa(code)).Inc()
}

// backlogCollector asks Redis at scrape time; a failed read leaves the
// gauge out of that scrape rather than reporting a false zero.
type backlogCollector struct {
	f    Backlog
	desc *prometheus.Desc
}

func (c *backlogCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *backlogCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	p, u, err := c.f(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.desc, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(p), "pending")
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(u), "undelivered")
}
