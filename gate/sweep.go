package gate

import (
	"context"
	"errors"
	"log/slog"

	"github.com/deskbot/deskbot"
	"github.com/robfig/cron/v3"
)

// SweepReport counts what one sweep did.
type SweepReport struct {
	Lapsed  int // open requests whose expiry had passed
	Denials int // denials handed to the desk without a reason
}

// sweepBatch bounds one store read, so a sweep after a long outage works
// through a backlog in steps instead of one huge reply.
const sweepBatch = 256

// Sweep lapses every open request whose expiry has passed and hands over
// every denial whose wait for a reason is over. Its cost grows with what is
// due, not with what is open. Safe to run beside decisions: each request
// changes in one atomic transition, so a racing decision either wins or is
// told the request lapsed.
func (g *Gate) Sweep(ctx context.Context) (SweepReport, error) {
	var rep SweepReport
	now := g.now()
	for {
		ids, err := g.store.DueRequests(ctx, now, sweepBatch)
		if err != nil {
			return rep, err
		}
		for _, id := range ids {
			r, err := g.lapse(ctx, id)
			if err != nil && deskbot.ErrorCode(err) != deskbot.ENOTFOUND {
				return rep, err
			}
			if r != nil {
				rep.Lapsed++
				g.log.InfoContext(ctx, "lapsed", "desk", r.Desk, "request", id)
			}
		}
		if len(ids) < sweepBatch {
			break
		}
	}
	for {
		ids, err := g.store.DenialsDue(ctx, now, sweepBatch)
		if err != nil {
			return rep, err
		}
		for _, id := range ids {
			r, err := g.store.Request(ctx, id)
			if deskbot.ErrorCode(err) == deskbot.ENOTFOUND {
				continue
			} else if err != nil {
				return rep, err
			}
			if _, out, err := g.deliverDenial(ctx, r, "", "system"); err != nil {
				return rep, err
			} else if out == deskbot.Applied {
				rep.Denials++
			}
		}
		if len(ids) < sweepBatch {
			break
		}
	}
	return rep, nil
}

// Recover reports every request left running by a process that is gone
// as interrupted, and tells its desk so. It must run when this process
// begins to lead, before it decides anything.
//
// With one process (no Leader configured) every running request is a
// crash's leftover. With a leader lease, a running call carries the token
// of the leader that started it: Recover leaves this term's own calls
// alone, and interrupts the others only while this process holds the lease
// (the transition is fenced), so their leader's lease is gone: it is dead
// or stopped acting, and its call will never report. A process that does
// not lead (a second instance started by mistake) interrupts nothing.
func (g *Gate) Recover(ctx context.Context) (int, error) {
	fence, err := g.fence()
	if err != nil {
		return 0, err
	}
	rs, err := g.store.RunningRequests(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range rs {
		if fence != 0 && r.Fence == fence {
			continue // this term's own call, running now
		}
		now := g.now()
		msg := InterruptedMessage(r)
		_, out, err := g.store.Transition(ctx, r.ID, deskbot.Transition{
			Kind:    deskbot.TransitionInterrupt,
			Now:     now,
			Set:     deskbot.RequestPatch{Response: msg, DeliveredAt: now},
			Audit:   &deskbot.AuditEntry{Action: "interrupted", Desk: r.Desk, Tool: r.Content.ToolName, RequestID: r.ID, By: "system", At: now},
			Event:   &deskbot.Event{Kind: deskbot.EventRequestDecided, Desk: r.Desk, Time: now, RequestID: r.ID, TriggerID: r.TriggerID},
			Trigger: g.trigger(r, deskbot.TriggerPermission, msg, now),
			Fence:   fence,
		})
		if err != nil {
			return n, err
		}
		if out == deskbot.Stale {
			return n, errNotLeader
		}
		if out == deskbot.Applied {
			n++
			g.log.WarnContext(ctx, "held call interrupted by a restart; not run again", "desk", r.Desk, "request", r.ID, "tool", r.Content.ToolName, "owner", r.Fence)
		}
	}
	return n, nil
}

// Sweeper runs Sweep on a cron schedule evaluated in India time.
type Sweeper struct {
	cron *cron.Cron
	id   cron.EntryID
}

// NewSweeper schedules g.Sweep (SWEEP_SCHEDULE, e.g. "@every 1m" or a
// five-field cron expression). The context bounds every sweep it starts.
// A nil log discards.
func NewSweeper(ctx context.Context, g *Gate, schedule string, log *slog.Logger) (*Sweeper, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := cron.New(cron.WithLocation(deskbot.IST))
	id, err := c.AddFunc(schedule, func() {
		if rep, err := g.Sweep(ctx); err != nil && !errors.Is(err, context.Canceled) {
			log.ErrorContext(ctx, "sweep failed", "err", err)
		} else if rep.Lapsed+rep.Denials > 0 {
			log.InfoContext(ctx, "swept", "lapsed", rep.Lapsed, "denials", rep.Denials)
		}
	})
	if err != nil {
		return nil, deskbot.Errorf(deskbot.EINVALID, "SWEEP_SCHEDULE %q is not a cron schedule: %v", schedule, err)
	}
	return &Sweeper{cron: c, id: id}, nil
}

// Start runs the schedule in the background.
func (s *Sweeper) Start() { s.cron.Start() }

// Stop stops the schedule and waits for a running sweep to end.
func (s *Sweeper) Stop() { <-s.cron.Stop().Done() }
