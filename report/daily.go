package report

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/robfig/cron/v3"
)

// Schedule is at ("15:45", India time) on the trading days, Monday to
// Friday: when the day's report (REPORT_AT) and the morning's reminder to
// log in to Kite (KITE_LOGIN_REMINDER) go out. There is no holiday
// calendar here: on an exchange holiday the report goes out with no
// trades. The error's words name no variable; the caller says which.
func Schedule(at string) (cron.Schedule, error) {
	t, err := time.Parse("15:04", at)
	if err != nil || len(at) != len("15:04") {
		return nil, deskbot.Errorf(deskbot.EINVALID, "must be a time of day as HH:MM, India time")
	}
	spec, err := cron.ParseStandard(fmt.Sprintf("%d %d * * 1-5", t.Minute(), t.Hour()))
	if err != nil {
		return nil, deskbot.Errorf(deskbot.EINVALID, "%v", err)
	}
	s := spec.(*cron.SpecSchedule)
	// The schedule's own zone, whatever the cron's: India's trading day.
	s.Location = deskbot.IST
	return s, nil
}

// Daily runs send on Schedule(at); only the leader starts it.
type Daily struct {
	cron *cron.Cron
}

// NewDaily schedules send at at (see Schedule). ctx bounds every run it starts; a failed
// run is logged, and the next is the next trading day's. A nil log
// discards.
func NewDaily(ctx context.Context, at string, send func(context.Context) error, log *slog.Logger) (*Daily, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s, err := Schedule(at)
	if err != nil {
		return nil, err
	}
	c := cron.New(cron.WithLocation(deskbot.IST))
	c.Schedule(s, cron.FuncJob(func() {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		if err := send(ctx); err != nil && !errors.Is(err, context.Canceled) {
			log.ErrorContext(ctx, "a daily job failed; the next runs the next trading day", "at", at, "err", err)
		}
	}))
	return &Daily{cron: c}, nil
}

// Start runs the schedule in the background.
func (d *Daily) Start() { d.cron.Start() }

// Stop stops the schedule and waits for a running report to end.
func (d *Daily) Stop() { <-d.cron.Stop().Done() }
