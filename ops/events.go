package ops

import (
	"context"
	"log/slog"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/retry"
)

// MetricsGroup is the event stream's consumer group that feeds the request
// metrics.
const MetricsGroup = "metrics"

// Observe counts what e says about a request. Event kinds that say nothing
// about requests are ignored.
//
// request_decided is published for a decision and again once an allowed
// call ran (with its Result), and also when a restart interrupts a running
// call; only the decision itself is stamped with the request's DecidedAt,
// so that is what tells them apart.
func (m *Metrics) Observe(e deskbot.Event) {
	switch e.Kind {
	case deskbot.EventUserRequest:
		m.held.WithLabelValues(e.Desk).Inc()
	case deskbot.EventRequestLapsed:
		m.lapsed.WithLabelValues(e.Desk).Inc()
	case deskbot.EventRequestDecided:
		r := e.Request
		if e.Result != nil || r == nil || r.Decision == "" || !sameMilli(e.Time, r.DecidedAt) {
			return
		}
		d := string(r.Decision)
		m.decided.WithLabelValues(e.Desk, d).Inc()
		if wait := r.DecidedAt.Sub(r.CreatedAt); wait >= 0 {
			m.decisionTime.WithLabelValues(d).Observe(wait.Seconds())
		}
	}
}

// The store keeps times to the millisecond.
func sameMilli(a, b time.Time) bool { return a.UnixMilli() == b.UnixMilli() }

// EventSource is the event stream as the counter needs it.
type EventSource interface {
	deskbot.EventLog
	// CreateEventGroupAtEnd makes the group start after the newest event,
	// so a first start does not count history as new.
	CreateEventGroupAtEnd(ctx context.Context, group string) error
	// AckEvents acknowledges several events in one round trip.
	AckEvents(ctx context.Context, group string, ids ...string) error
}

// CountEvents feeds m from the event stream until ctx ends. Failures to read
// are logged and retried with retry.Backoff; the events wait in the
// stream. A nil log discards.
func (m *Metrics) CountEvents(ctx context.Context, src EventSource, consumer string, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	backoff := retry.Backoff{Min: time.Second, Max: time.Minute}
	created := false
	for ctx.Err() == nil {
		var err error
		if !created {
			if err = src.CreateEventGroupAtEnd(ctx, MetricsGroup); err == nil {
				created = true
			}
		}
		var evs []deskbot.Event
		if err == nil {
			evs, err = src.ReadEvents(ctx, MetricsGroup, consumer, 100, time.Second)
		}
		if err == nil && len(evs) > 0 {
			// Counted, then acknowledged in one round trip: a crash in
			// between counts the batch again, as it would one event.
			ids := make([]string, len(evs))
			for i, e := range evs {
				m.Observe(e)
				ids[i] = e.ID
			}
			err = src.AckEvents(ctx, MetricsGroup, ids...)
		}
		if err == nil {
			backoff.Reset()
			continue
		}
		if ctx.Err() != nil {
			break
		}
		wait := backoff.Next()
		log.WarnContext(ctx, "metrics: reading events failed, will retry", "err", err, "wait", wait)
		if retry.Sleep(ctx, wait) != nil {
			break
		}
	}
	return ctx.Err()
}
