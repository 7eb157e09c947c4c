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
}

// run handles the desk's triggers one at a time until ctx ends. A trigger is
// acknowledged only when its turn closes (CloseTurn); one whose turn could
// not finish is left in hand, and the inbox hands it back first.
func (k *desk) run(ctx context.Context) {
	k.recoverState(ctx)
	poll := k.d.deps.Poll
	for ctx.Err() == nil {
		tr, start, ok, err := k.open(ctx)
		if err != nil {
			if ctx.Err() == nil {
				k.log.WarnContext(ctx, "could not open a turn", "err", err)
				retry.Sleep(ctx, poll)
			}
			continue
		}
		if tr == nil {
			continue
		}
		if !ok {
			retry.Sleep(ctx, poll)
			continue
		}
		if k.turn(ctx, tr, start) == turnLeft {
			if ctx.Err() == nil {
				k.retryLater(ctx)
			}
			continue
		}
		k.backoff.Reset()
	}
}

// turnEnd is how a turn ended.
type turnEnd int

const (
	turnLeft  turnEnd = iota // not done with: the trigger stays in hand for a later attempt
	turnAcked                // done with and acknowledged with the turn's last writes
)

// turnStart is what a turn starts from: the desk's history and the
// executor's turn, with the calls already completed for the trigger.
type turnStart struct {
	hist []deskbot.Message
	t    *Turn
}

// open takes the desk's next trigger, waiting up to a poll, and opens its
// turn (TurnStore.OpenTurn, the one way a turn starts). It reports false
// when the desk is paused: the desk keeps the trigger in hand and waits a
// poll, since starting work on a paused desk is the worse mistake. tr is
// nil when none came. An error is the store's: whether working was saved
// is unknown, so the next state is written whatever it is.
func (k *desk) open(ctx context.Context) (tr *deskbot.Trigger, start turnStart, ok bool, err error) {
	deps := k.d.deps
	o, err := deps.Store.OpenTurn(ctx, k.cfg.Name, deps.Poll, deps.HistoryMessages, deps.Now)
	if err != nil {
		k.state = ""
		return nil, turnStart{}, false, err
	}
	if o.Trigger == nil || o.Status.Paused {
		return o.Trigger, turnStart{}, false, nil
	}
	k.state = deskbot.DeskWorking // saved and announced with the reads
	return o.Trigger, turnStart{hist: o.History, t: k.d.exec.Resume(k.cfg.Name, o.Trigger.ID, o.Completed)}, true, nil
}

// ack acknowledges a finished trigger whose turn could not be closed,
// trying a few times: an unacked trigger would run its turn again (its
// completed calls replayed, not run). It closes the turn again with nothing
// but the resting state and the acknowledgement, so what the failed close
// may have written is not written twice. A shutdown stops the waiting
// between tries, not the first try.
func (k *desk) ack(ctx context.Context, tr *deskbot.Trigger, heldNow bool) {
	b := retry.Backoff{Min: 100 * time.Millisecond, Max: 2 * time.Second}
	var err error
	for try := 1; ; try++ {
		var st deskbot.DeskState
		if st, err = k.d.deps.Store.CloseTurn(context.WithoutCancel(ctx), k.cfg.Name, deskbot.TurnEnd{HeldNow: heldNow, At: k.d.deps.Now(), Ack: tr}); err == nil {
			k.state = st
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
