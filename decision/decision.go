// Package decision is the one decision flow the chat and the desks page
// both call: a person's decision on a held call is taken by the gate, an
// allowed call is then run on the service's lifetime (never the request's
// or the tap's context, which ends as soon as the person is answered), and
// the person is answered in the same words wherever they decided.
package decision

import (
	"context"
	"log/slog"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/words"
)

// Start runs run in the background on the service's lifetime, tracked so
// that shutdown waits for it; false when the service is stopping (the call
// then stays running, and the next start reports it interrupted).
type Start func(run func(life context.Context)) bool

// Answer is what a decision comes to for the person who made it.
type Answer struct {
	Text string
	// Request is the request as it stands after the decision.
	Request *deskbot.Request
	// AwaitsReason: a denial whose desk is not told yet (it waits for a
	// reason or for the caller to skip it).
	AwaitsReason bool
}

// DecideShown takes by's decision on request id through g, from a view
// that showed version changes of the call (deskbot.Request.Changes; -1:
// unknown). A counted allow is answered with how many more approvers it
// needs, a won allow starts the call through start and is answered that
// it runs, a denial that it will not. An error is the gate's: the caller
// says it in its own medium.
func DecideShown(ctx context.Context, g deskbot.Gate, start Start, log *slog.Logger, id string, version int, d deskbot.Decision, reason string, by deskbot.Person) (Answer, error) {
	resp, err := g.DecideShown(ctx, id, version, d, reason, by)
	if err != nil {
		return Answer{}, err
	}
	return answer(ctx, g, start, log, resp)
}

// Change takes by's change of request id's call through g (Gate.Change):
// the same flow as an allow, since a change is its author's approval.
func Change(ctx context.Context, g deskbot.Gate, start Start, log *slog.Logger, id, changes string, version int, by deskbot.Person) (Answer, error) {
	resp, err := g.Change(ctx, id, changes, version, by)
	if err != nil {
		return Answer{}, err
	}
	if !resp.Counted && resp.Allows() {
		r := resp.Request
		if !start(func(life context.Context) { run(life, g, log, resp) }) {
			log.WarnContext(ctx, "held call changed and allowed while stopping; not run, the next start reports it", "desk", r.Desk, "request", r.ID)
		}
		return Answer{Text: words.ChangedAllowedAnswer, Request: r}, nil
	}
	return Answer{Text: words.ChangedCountedMessage(resp.Request), Request: resp.Request}, nil
}

func answer(ctx context.Context, g deskbot.Gate, start Start, log *slog.Logger, resp *deskbot.PermissionResponse) (Answer, error) {
	if resp.Counted {
		return Answer{Text: words.CountedMessage(resp.Request), Request: resp.Request}, nil
	}
	if !resp.Allows() {
		return Answer{Text: words.DeniedAnswer, Request: resp.Request, AwaitsReason: resp.Request.DeliveredAt.IsZero()}, nil
	}
	r := resp.Request
	if !start(func(life context.Context) { run(life, g, log, resp) }) {
		log.WarnContext(ctx, "held call allowed while stopping; not run, the next start reports it", "desk", r.Desk, "request", r.ID)
	}
	// The decision that ran, not the tap: a changed call, or an order
	// that no grant can be capped for, is allowed once.
	return Answer{Text: words.AllowedAnswer(resp.Decision), Request: r}, nil
}

// run runs an allowed call. Its outcome reaches the chat through the
// event stream and the desk through its inbox; here it is only logged.
func run(ctx context.Context, g deskbot.Gate, log *slog.Logger, resp *deskbot.PermissionResponse) {
	r := resp.Request
	if _, err := g.Run(ctx, resp); err != nil {
		if deskbot.ErrorCode(err) == deskbot.EINTERNAL {
			log.ErrorContext(ctx, "held call was allowed but not recorded as run", "desk", r.Desk, "request", r.ID, "err", err)
		} else {
			log.WarnContext(ctx, "held call not run", "desk", r.Desk, "request", r.ID, "err", deskbot.ErrorMessage(err))
		}
	}
}
