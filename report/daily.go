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
func Schedule(at string) (cron.Schedule, error) { return dailyAt(at, "1-5") }

// OnTradingDays is send run only on the operator's trading days (trading:
// MARKET_HOURS' days less MARKET_HOLIDAYS, plus its special sessions,
// exchange.Calendar.TradingDay), judged at now when it is due: the day's
// report, scheduled Everyday, so that a Saturday's special session gets
// its report and a holiday gets none, on the one calendar the login
// reminder follows too.
func OnTradingDays(now deskbot.Now, trading func(time.Time) bool, send func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		if !trading(now()) {
			return nil
		}
		return send(ctx)
	}
}

// Everyday is at ("08:45", India time) on every day of the week, for a job
// that asks the operator's calendar itself whether the day trades: the
// morning's reminder to log in to Kite, which a Saturday's special session
// (MARKET_HOLIDAYS) needs as much as a Monday.
func Everyday(at string) (cron.Schedule, error) { return dailyAt(at, "*") }

func dailyAt(at, weekdays string) (cron.Schedule, error) {
	t, err := time.Parse("15:04", at)
	if err != nil || len(at) != len("15:04") {
		return nil, deskbot.Errorf(deskbot.EINVALID, "must be a time of day as HH:MM, India time")
	}
	spec, err := cron.ParseStandard(fmt.Sprintf("%d %d * * %s", t.Minute(), t.Hour(), weekdays))
	if err != nil {
		return nil, deskbot.Errorf(deskbot.EINVALID, "%v", err)
	}
	s := spec.(*cron.SpecSchedule)
	// The schedule's own zone, whatever the cron's: India's trading day.
	s.Location = deskbot.IST
	return s, nil
}

// Daily runs send on a schedule (Schedule, Everyday); only the leader
// starts it.
type Daily struct {
	cron *cron.Cron
}

// NewDaily schedules send on s; at names the time in its log lines. ctx
// bounds every run it starts; a failed run is logged, and the next is the
// schedule's next. A nil log discards.
func NewDaily(ctx context.Context, at string, s cron.Schedule, send func(context.Context) error, log *slog.Logger) *Daily {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := cron.New(cron.WithLocation(deskbot.IST))
	c.Schedule(s, cron.FuncJob(func() {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		if err := send(ctx); err != nil && !errors.Is(err, context.Canceled) {
			log.ErrorContext(ctx, "a daily job failed; the next runs at its next time", "at", at, "err", err)
		}
	}))
	return &Daily{cron: c}
}

// Start runs the schedule in the background.
func (d *Daily) Start() { d.cron.Start() }

// Stop stops the schedule and waits for a running report to end.
func (d *Daily) Stop() { <-d.cron.Stop().Done() }
