package agent

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/words"
	"github.com/robfig/cron/v3"
)

// Firing is one moment a desk's schedule comes due.
type Firing struct {
	Desk string
	Cron string
	Text string
	At   time.Time // in India time
}

type scheduleEntry struct {
	desk, spec, text string
	sched            cron.Schedule
}

// Scheduler turns desks' cron entries into schedule triggers. Expressions
// are evaluated in India time whatever the machine's zone. It keeps no timer
// of its own beyond a polling tick: Due is a pure function of two instants,
// so tests inject time, and a firing is claimed with a note before it is
// queued, so a restart (which looks back CatchUp) never fires it twice.
type Scheduler struct {
	Inbox deskbot.Inbox
	Notes deskbot.Notes
	Now   deskbot.Now
	Log   *slog.Logger
	// Tick is how often Run looks for due firings (default 5s).
	Tick time.Duration
	// CatchUp is how far back Run looks when it starts, so a firing missed
	// by a quick restart still happens (default 2m).
	CatchUp time.Duration

	entries []scheduleEntry
}

// NewScheduler parses every desk's schedules.
func NewScheduler(desks []DeskConfig) (*Scheduler, error) {
	s := &Scheduler{}
	for _, d := range desks {
		for _, sc := range d.Schedules {
			parsed, err := parseSchedule(sc.Cron)
			if err != nil {
				return nil, deskbot.Errorf(deskbot.EINVALID, "desk %q: %v", d.Name, err)
			}
			s.entries = append(s.entries, scheduleEntry{desk: d.Name, spec: sc.Cron, text: sc.Text, sched: parsed})
		}
	}
	return s, nil
}

// parseSchedule accepts five-field cron expressions and descriptors such as
// @daily. "@every" is refused: it counts from whenever it is asked, so it has
// no fixed firing times to claim once across restarts.
func parseSchedule(spec string) (cron.Schedule, error) {
	parsed, err := cron.ParseStandard(spec)
	if err != nil {
		return nil, fmt.Errorf("schedule %q is not a cron expression: %v", spec, err)
	}
	if _, ok := parsed.(*cron.SpecSchedule); !ok {
		return nil, fmt.Errorf("schedule %q: use a five-field cron expression such as \"15 9 * * 1-5\", not @every", spec)
	}
	return parsed, nil
}

// Due lists the firings after from and at or before to, oldest first.
func (s *Scheduler) Due(from, to time.Time) []Firing {
	var out []Firing
	for _, e := range s.entries {
		// The parser leaves a schedule without CRON_TZ in time.Local, which
		// robfig/cron reads as "the zone of the time given": India time.
		for t := e.sched.Next(from.In(deskbot.IST)); !t.IsZero() && !t.After(to); t = e.sched.Next(t) {
			out = append(out, Firing{Desk: e.desk, Cron: e.spec, Text: e.text, At: t})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out
}

// Fire queues f's trigger unless it was already queued (by this process
// before, or another before a restart). It reports whether it queued it.
func (s *Scheduler) Fire(ctx context.Context, f Firing) (bool, error) {
	key := "agent:fired:" + f.Desk + ":" + f.Cron + ":" + f.At.UTC().Format("200601021504")
	ok, err := s.Notes.PutNoteOnce(ctx, key, f.At.UTC().Format(time.RFC3339), 48*time.Hour)
	if err != nil || !ok {
		return false, err
	}
	err = s.Inbox.Enqueue(ctx, deskbot.Trigger{Desk: f.Desk, Kind: deskbot.TriggerSchedule, Text: f.Text, From: f.Cron, CreatedAt: f.At})
	if err != nil {
		// Not queued: release the claim so the next tick tries again.
		if derr := s.Notes.DeleteNote(context.WithoutCancel(ctx), key); derr != nil {
			s.log().ErrorContext(ctx, "schedule firing lost: claimed but not queued", "desk", f.Desk, "cron", f.Cron, "at", words.Time(f.At), "err", derr)
		}
		return false, err
	}
	s.log().InfoContext(ctx, "schedule fired", "desk", f.Desk, "cron", f.Cron, "at", words.Time(f.At))
	return true, nil
}

// Run fires due schedules until ctx ends.
func (s *Scheduler) Run(ctx context.Context) {
	if len(s.entries) == 0 {
		return
	}
	tick := s.Tick
	if tick <= 0 {
		tick = 5 * time.Second
	}
	catchUp := s.CatchUp
	if catchUp <= 0 {
		catchUp = 2 * time.Minute
	}
	last := s.now().Add(-catchUp)
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		last = s.fireBetween(ctx, last, s.now())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// fireBetween fires what is due in (from, to] and returns where the next
// look should start: before the first firing that could not be queued.
func (s *Scheduler) fireBetween(ctx context.Context, from, to time.Time) time.Time {
	for _, f := range s.Due(from, to) {
		if _, err := s.Fire(ctx, f); err != nil {
			if ctx.Err() == nil {
				s.log().WarnContext(ctx, "could not queue schedule; will retry", "desk", f.Desk, "cron", f.Cron, "err", err)
			}
			return f.At.Add(-time.Nanosecond)
		}
	}
	return to
}

func (s *Scheduler) now() time.Time {
	if s.Now == nil {
		return time.Now()
	}
	return s.Now()
}

func (s *Scheduler) log() *slog.Logger {
	if s.Log == nil {
		return discard
	}
	return s.Log
}
