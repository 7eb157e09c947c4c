package agent

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/retry"
	"github.com/deskbot/deskbot/words"
)

// desk is one running desk. Only its own goroutine touches its fields.
type desk struct {
	cfg    DeskConfig
	d      *Desks
	models []Backend
	reg    *Registry
	log    *slog.Logger

	state   deskbot.DeskState // as last written; "" until known
	backoff retry.Backoff     // the wait after every model failed, RetryMin to RetryMax
	// mayBeDown says an outage may have been reported (always true after a
	// start, since a previous process may have reported it), so the next
	// answer checks the note and announces the recovery.
	mayBeDown bool
	// idle says the last ask for a trigger found none: the next ask waits
	// on the inbox at once, rather than first trying to take a queued one
	// (a round trip and a read of the history for nothing, every poll).
	idle bool
}

// run handles the desk's triggers one at a time until ctx ends. A trigger is
// acknowledged only after its turn ends; one whose turn could not finish is
// left in hand, and the inbox hands it back first.
func (k *desk) run(ctx context.Context) {
	k.recoverState(ctx)
	poll := k.d.deps.Poll
	for ctx.Err() == nil {
		tr, start, ok, err := k.take(ctx)
		if err == nil && tr == nil {
			tr, err = k.d.deps.Store.NextTrigger(ctx, k.cfg.Name, poll)
			if err == nil && tr != nil {
				// The pause switch is read once the trigger is in hand, so
				// a pause that came while we waited wins: a paused desk
				// keeps the trigger in hand, and the inbox hands it back
				// after the resume.
				start, ok = k.open(ctx, tr)
			}
		}
		if err != nil {
			if ctx.Err() == nil {
				k.log.WarnContext(ctx, "could not read inbox", "err", err)
				retry.Sleep(ctx, poll)
			}
			continue
		}
		if k.idle = tr == nil; k.idle {
			continue
		}
		if !ok {
			retry.Sleep(ctx, poll)
			continue
		}
		end := k.turn(ctx, tr, start)
		if end == turnLeft {
			if ctx.Err() == nil {
				k.retryLater(ctx)
			}
			continue
		}
		k.backoff.Reset()
		if end == turnDone {
			k.ack(ctx, tr)
		}
	}
}

// turnEnd is how a turn ended.
type turnEnd int

const (
	turnLeft  turnEnd = iota // not done with: the trigger stays in hand for a later attempt
	turnDone                 // done with: the trigger is to be acknowledged
	turnAcked                // done with and acknowledged with the turn's last writes
)

// turnStart is what a turn starts from: the desk's history and the
// executor's turn, with the calls already completed for the trigger.
type turnStart struct {
	hist []deskbot.Message
	t    *Turn
}

// take takes the trigger in hand or queued and opens its turn in one round
// trip, unless the desk was idle (else, or when it took none, tr is nil
// and the caller waits on the inbox). ok is as open's. An error is the
// store's: whether a trigger was taken is unknown, and the next ask finds
// it in hand.
func (k *desk) take(ctx context.Context) (tr *deskbot.Trigger, start turnStart, ok bool, err error) {
	if k.idle {
		return nil, turnStart{}, false, nil
	}
	deps := k.d.deps
	tr, st, hist, prior, err := deps.Store.TakeTurn(ctx, k.cfg.Name, deps.HistoryMessages, deps.Now())
	if err != nil {
		k.state = "" // working may have been saved before the reply was lost
		return nil, turnStart{}, false, err
	}
	if tr == nil {
		return nil, turnStart{}, false, nil
	}
	start, ok = k.opened(st, hist, prior, tr)
	return tr, start, ok, nil
}

// opened is the turn the store opened: none on a paused desk, which keeps
// the trigger in hand.
func (k *desk) opened(st deskbot.DeskStatus, hist []deskbot.Message, prior []deskbot.CompletedCall, tr *deskbot.Trigger) (turnStart, bool) {
	if st.Paused {
		return turnStart{}, false
	}
	k.state = deskbot.DeskWorking // saved and announced with the reads
	return turnStart{hist: hist, t: k.d.exec.Resume(k.cfg.Name, tr.ID, prior)}, true
}

// open reads the pause switch, the history and the trigger's completed
// calls in one round trip, which also marks the desk working unless it is
// paused. It reports false when the desk is paused or they could not be
// read: the desk keeps the trigger in hand and waits a poll, since
// starting work on a paused desk is the worse mistake.
func (k *desk) open(ctx context.Context, tr *deskbot.Trigger) (turnStart, bool) {
	deps := k.d.deps
	st, hist, prior, err := deps.Store.OpenTurn(ctx, k.cfg.Name, tr.ID, deps.HistoryMessages, deps.Now())
	if err != nil {
		if ctx.Err() == nil {
			k.log.WarnContext(ctx, "could not read the desk's status, history and the trigger's completed calls", "trigger", tr.ID, "err", err)
		}
		// Whether working was saved is unknown: the next state is
		// written whatever it is.
		k.state = ""
		return turnStart{}, false
	}
	return k.opened(st, hist, prior, tr)
}

// ack acknowledges a finished trigger, trying a few times: an unacked
// trigger would run its turn again (its completed calls replayed, not run).
// A shutdown stops the waiting between tries, not the first try.
func (k *desk) ack(ctx context.Context, tr *deskbot.Trigger) {
	b := retry.Backoff{Min: 100 * time.Millisecond, Max: 2 * time.Second}
	var err error
	for try := 1; ; try++ {
		if err = k.d.deps.Store.AckTrigger(context.WithoutCancel(ctx), tr); err == nil {
			return
		}
		if try == 5 || retry.Sleep(ctx, b.Next()) != nil {
			break
		}
	}
	k.log.ErrorContext(ctx, "could not acknowledge trigger; its turn may run again", "trigger", tr.ID, "err", err)
}

func (k *desk) retryLater(ctx context.Context) {
	d := k.backoff.Next()
	k.log.InfoContext(ctx, "trigger left for later", "retry_in", d)
	retry.Sleep(ctx, d)
}

// recoverState clears a "working" left by a crash: nothing runs until this
// goroutine starts a turn.
func (k *desk) recoverState(ctx context.Context) {
	st, err := k.d.deps.Store.DeskStatus(ctx, k.cfg.Name)
	if err != nil {
		return
	}
	k.state = st.State
	if st.State == deskbot.DeskWorking || st.State == "" {
		k.setState(ctx, deskbot.DeskIdle)
	}
}

// setState records and announces a change of state.
func (k *desk) setState(ctx context.Context, s deskbot.DeskState) {
	if s == k.state {
		return
	}
	now := k.d.deps.Now()
	ctx = context.WithoutCancel(ctx) // a shutdown mid-turn must not leave "working" behind
	// The state and its event in one round trip.
	if err := k.d.deps.Store.AnnounceDeskState(ctx, k.cfg.Name, s, now); err != nil {
		k.log.WarnContext(ctx, "could not save desk state", "state", s, "err", err)
		return
	}
	k.state = s
}

// say posts words of the desk to the chat.
func (k *desk) say(ctx context.Context, triggerID, text string) {
	if text = strings.TrimSpace(text); text == "" {
		return
	}
	k.publish(ctx, deskbot.Event{Kind: deskbot.EventDeskMessage, Desk: k.cfg.Name, Time: k.d.deps.Now(), TriggerID: triggerID, Text: text})
}

func (k *desk) publish(ctx context.Context, ev deskbot.Event) {
	if err := k.d.deps.Store.Publish(ctx, ev); err != nil {
		k.log.WarnContext(ctx, "could not publish event", "kind", ev.Kind, "err", err)
	}
}

func (k *desk) downKey() string { return words.ModelOutageNote(k.cfg.Name) }

// unreachable reports, once per outage, that no model of the chain answers.
func (k *desk) unreachable(ctx context.Context, tr *deskbot.Trigger, failures []string) {
	k.mayBeDown = true
	now := k.d.deps.Now()
	first, err := k.d.deps.Store.PutNoteOnce(ctx, k.downKey(), now.UTC().Format(time.RFC3339), 0)
	if err != nil {
		k.log.WarnContext(ctx, "could not record model outage", "err", err)
		return
	}
	k.log.WarnContext(ctx, "no model answered", "trigger", tr.ID, "failures", strings.Join(failures, "; "), "reported", first)
	if first {
		k.publish(ctx, deskbot.Event{Kind: deskbot.EventModelUnreachable, Desk: k.cfg.Name, Time: now, TriggerID: tr.ID,
			Text: words.ModelUnreachable(k.cfg.Name, failures)})
	}
}

// reachable announces the end of a reported outage.
func (k *desk) reachable(ctx context.Context, m Backend) {
	if !k.mayBeDown {
		return
	}
	if _, err := k.d.deps.Store.Note(ctx, k.downKey()); deskbot.ErrorCode(err) == deskbot.ENOTFOUND {
		k.mayBeDown = false
		return
	} else if err != nil {
		return
	}
	if err := k.d.deps.Store.DeleteNote(ctx, k.downKey()); err != nil {
		return
	}
	k.mayBeDown = false
	k.say(ctx, "", fmt.Sprintf("Desk %s reaches its model again (%s).", k.cfg.Name, m.Name()))
}
