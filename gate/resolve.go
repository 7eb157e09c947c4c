package gate

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/retry"
	"github.com/deskbot/deskbot/words"
	"github.com/google/uuid"
)

// decide is the one place where a request's fate is decided. A reason
// (or an allow's note) is trimmed of surrounding space here, whoever typed
// it; one of spaces only is no reason. When several people tap at once (or
// the sweep lapses the request at that moment) the first to change the
// state wins (resolve); everyone else gets an ECONFLICT error whose message
// says what already happened. A won allow leaves the request running: the
// caller must call run, exactly once, with the response (Decide does).
//
// An allow is one approval: when the request needs more approvers than
// have allowed it, the transition only counts it (resp.Counted, the
// request stays open and nothing may run); the same person's second allow
// is an ECONFLICT that says how many are still needed. Counting happens in
// the same transition as the decision, so of two approvers tapping at once
// exactly one meets the count. An always-allow grants only if every
// counted approval was one (else it is an allow once), and its grant never
// reaches past the policy's two-approver threshold.
//
// version is how many times the call had been changed in the view it was
// decided from (deskbot.Request.Changes; -1: a view that cannot say, which
// then decides the call as it stands): an allow from a view of another
// call than the one that would run is refused with ECONFLICT and nothing
// is decided. Every allow is bound, in the store's transition, to the call
// it was decided on, so a change landing meanwhile makes it do nothing.
func (g *Gate) decide(ctx context.Context, id string, version int, d deskbot.Decision, reason string, by deskbot.Person) (*deskbot.PermissionResponse, error) {
	if _, err := deskbot.ParseDecision(string(d)); err != nil {
		return nil, err
	}
	r, err := g.asHeld(ctx, id)
	if err != nil {
		return nil, err
	}
	if version >= 0 && r.Changes != version {
		// Memory may be behind another process's change: the store says.
		if r, err = g.store.Request(ctx, id); err != nil {
			return nil, err
		}
		if r.Changes != version && d != deskbot.Deny && r.State == deskbot.StateOpen {
			return nil, deskbot.Errorf(deskbot.ECONFLICT, "%s", words.ChangedAgain)
		}
	}
	if r.Changed != nil && d == deskbot.AlwaysAllow {
		d = deskbot.AllowOnce // a changed call is never granted
	}
	if _, ok := g.grantOf(r, g.now()); !ok && d == deskbot.AlwaysAllow {
		d = deskbot.AllowOnce // nothing to cap the grant with: it runs once
	}
	fence, err := g.fence()
	if err != nil {
		return nil, err
	}
	resp := &deskbot.PermissionResponse{Request: r, Decision: d, Reason: strings.TrimSpace(reason)}
	if d != deskbot.Deny {
		if changed, err := g.changedSinceShown(ctx, r); err != nil {
			return nil, err
		} else if changed != "" {
			// A request decided meanwhile (another tap won, and what it ran
			// moved the book) is answered as any late tap is, below.
			if cur, err := g.store.Request(ctx, id); err != nil || cur.State == deskbot.StateOpen {
				g.log.InfoContext(ctx, "allow refused: what the call would do changed since it was shown", "desk", r.Desk, "request", r.ID, "why", changed)
				g.showAgain(ctx, r)
				return nil, deskbot.Errorf(deskbot.ECONFLICT, "%s", words.ChangedSinceShown)
			}
		}
	}
	t := g.decision(ctx, resp, by, fence)
	if d.Allows() {
		// Bound to the call r holds: a change since makes it do nothing.
		v := r.Changes
		t.Version = &v
	}
	after, out, err := g.resolve(ctx, id, t)
	if err != nil {
		return nil, err
	}
	if out == deskbot.Rechanged {
		g.held.put(after) // memory was behind: what the store holds now
		return nil, deskbot.Errorf(deskbot.ECONFLICT, "%s", words.ChangedAgain)
	}
	resp.Request = after
	return g.decided(ctx, resp, out, by)
}

// resolve applies t, a decision or a change of open request id, and says
// what came of it. It is the one place where "first caller wins" is
// settled, for taps in the chat, posts from the page and the sweep alike:
// the store's transition checks the state, the expiry and the version in
// one atomic step, so of any number of callers at once exactly one moves
// the request on and every other is told what happened instead; no caller
// reads the state first and decides on what it read, which two callers
// could both read as open. A decision's token tells a lost reply apart
// from a lost race: Redis applied our transition but its reply was lost,
// and the client's retry found our own decision in place, so it is ours.
func (g *Gate) resolve(ctx context.Context, id string, t deskbot.Transition) (*deskbot.Request, deskbot.Outcome, error) {
	after, out, err := g.store.Transition(ctx, id, t)
	if err != nil {
		return nil, out, err
	}
	if out == deskbot.WrongState && after.DecisionToken == t.Set.Token {
		out = deskbot.Applied
	}
	return after, out, nil
}

// asHeld returns request id as it was held: what a decision carries
// (desk, tool, trigger) never changes, so it comes from memory when this
// gate held it, else from a read. Its state is the transition's to check.
func (g *Gate) asHeld(ctx context.Context, id string) (*deskbot.Request, error) {
	if r, ok := g.held.get(id); ok {
		return r, nil
	}
	return g.Request(ctx, id)
}

// decision is the transition that decides resp.Request as resp says: to
// running for an allow (counting it, and granting for an always allow),
// to denied for a denial (telling the desk at once unless a reason may
// still come).
func (g *Gate) decision(ctx context.Context, resp *deskbot.PermissionResponse, by deskbot.Person, fence int64) deskbot.Transition {
	r, d, id, now := resp.Request, resp.Decision, resp.Request.ID, g.now()
	t := deskbot.Transition{
		Kind:  deskbot.TransitionAllow,
		Now:   now,
		Set:   deskbot.RequestPatch{Decision: d, DecidedBy: by, DecidedAt: now, Reason: resp.Reason, Token: uuid.NewString()},
		Audit: &deskbot.AuditEntry{Action: string(d), Desk: r.Desk, Tool: r.Content.ToolName, RequestID: id, By: by.Audited(), At: now, Detail: resp.Reason},
		Event: &deskbot.Event{Kind: deskbot.EventRequestDecided, Desk: r.Desk, Time: now, RequestID: id, TriggerID: r.TriggerID},
		// Only the leader decides: the allowed call then runs here, and
		// carries this term's token as its owner's.
		Fence: fence,
		// What this gate holds of the request is all but the approvals
		// counted, which the store sends back: an applied decision needs
		// no read of the whole request.
		Held: r,
	}
	if d.Allows() {
		t.Approve = &deskbot.Approval{By: by.Name, ByID: by.ID, Decision: d, At: now}
		t.Approvers = g.cfg.Approvers
		t.UnlessHalted = r.Desk // a halted desk runs nothing, whoever taps
		if r.Needs() > 1 {      // one approval of one is never short of the count
			t.Approved = &deskbot.Event{Kind: deskbot.EventRequestApproved, Desk: r.Desk, Time: now, RequestID: id, TriggerID: r.TriggerID}
		}
	}
	switch d {
	case deskbot.AlwaysAllow:
		gr, _ := g.grantOf(r, now) // decide gives none where it cannot
		gr.GrantedBy = g.grantors(ctx, r, by)
		t.Grant = &gr
	case deskbot.Deny:
		t.Kind = deskbot.TransitionDeny
		if resp.Reason != "" || g.cfg.DenyReasonWait <= 0 {
			// Nothing to wait for: the desk is told in the same step.
			t.Set.Response = ResponseMessage(*resp, nil)
			t.Set.DeliveredAt = now
			t.Trigger = g.trigger(r, deskbot.TriggerPermission, t.Set.Response, now)
		} else {
			t.Set.DenyDueAt = now.Add(g.cfg.DenyReasonWait)
		}
	}
	return t
}

// decided turns the decision's outcome into decide's answer: the response
// when it was applied or counted, else the error that says what happened
// instead.
func (g *Gate) decided(ctx context.Context, resp *deskbot.PermissionResponse, out deskbot.Outcome, by deskbot.Person) (*deskbot.PermissionResponse, error) {
	after, id := resp.Request, resp.Request.ID
	switch out {
	case deskbot.Stale:
		return nil, errNotLeader
	case deskbot.Counted:
		// Still open: the next approver decides it through this memory.
		g.log.InfoContext(ctx, "approval counted", "desk", after.Desk, "request", id, "by", by.Audited(), "approvals", len(after.Approvals), "needs", after.Needs())
		resp.Counted = true
		return resp, nil
	case deskbot.AlreadyApproved:
		return nil, deskbot.Errorf(deskbot.ECONFLICT, "%s", words.AlreadyApprovedMessage(after))
	case deskbot.Halted:
		return nil, deskbot.Errorf(deskbot.ECONFLICT, "%s", words.HaltedAllowMessage(after.Desk))
	case deskbot.RoleNeeded:
		return nil, deskbot.Errorf(deskbot.ECONFLICT, "%s", words.RoleNeededMessage(after))
	}
	if out != deskbot.Applied || !resp.Allows() {
		g.held.forget(id) // decided, lapsing or gone: nobody decides it again here
	} // an allow that applied is forgotten once Run is done with it (what was shown)
	switch out {
	case deskbot.Applied:
		// The decision that ran may be narrower than the tap: an always
		// allow among allow-onces is an allow once (no grant).
		resp.Decision = after.Decision
		// Attrs, as Hold's line: every decision logs this one.
		g.log.LogAttrs(ctx, slog.LevelInfo, "decided", slog.String("desk", after.Desk), slog.String("request", id),
			slog.String("decision", string(after.Decision)), slog.String("by", by.Audited()))
		return resp, nil
	case deskbot.Expired:
		// The sweep has not reached it yet; lapse it now so the desk hears
		// of it promptly, and tell the person it lapsed.
		if lapsed, err := g.lapse(ctx, id); err == nil && lapsed != nil {
			after = lapsed
		}
		return nil, deskbot.Errorf(deskbot.ECONFLICT, "This request lapsed at %s IST.", words.Time(after.ExpiresAt))
	}
	return nil, deskbot.Errorf(deskbot.ECONFLICT, "%s", words.Describe(after))
}

// grantors names who gives a grant: by alone, or, when the request needs
// several approvers, those who approved before by too (read now; a failed
// read names by alone, the audit trail keeps every approval anyway).
func (g *Gate) grantors(ctx context.Context, r *deskbot.Request, by deskbot.Person) string {
	if r.Needs() < 2 {
		return by.Audited()
	}
	cur, err := g.store.Request(ctx, r.ID)
	if err != nil {
		return by.Audited()
	}
	var names []string
	for _, a := range cur.Approvals {
		if g.cfg.Approvers != nil && !slices.Contains(g.cfg.Approvers, a.ByID) {
			continue // removed since: the transition does not count it either
		}
		names = append(names, deskbot.Person{ID: a.ByID, Name: a.By}.Audited())
	}
	return strings.Join(append(names, by.Audited()), " and ")
}

// run runs the call of a request that decide left running, records the
// result with the request and hands the desk the response, in one store
// transition. It never runs a request that is not running, nor, with a
// Leader, one whose term is no longer surely this process's (EUNAVAILABLE:
// the leader that recovers it tells the desk).
func (g *Gate) run(ctx context.Context, resp *deskbot.PermissionResponse) (*deskbot.PermissionResponse, error) {
	r := resp.Request
	if r == nil || r.State != deskbot.StateRunning || !resp.Allows() {
		return nil, deskbot.Errorf(deskbot.ECONFLICT, "Request is not running; nothing was run.")
	}
	defer g.held.forget(r.ID)
	if g.cfg.Leader != nil {
		// The last check before the call: decide's fence proved this term
		// led when the call went to running, but a pause since (GC,
		// SIGSTOP, a frozen VM) may have outlasted the lease, and the next
		// leader's Recover then tells the desk the outcome is unknown and
		// that it was not run again. Running it now would make that report
		// false. Term.Valid is true only while no other process can hold
		// the lease (it ends a margin before the lease can lapse), and the
		// call must belong to the term that is valid: a new term of this
		// same process recovers the old term's calls as interrupted too.
		// The request itself is not changed here (a term that is not the
		// leader's cannot fence a write): it stays running under its old
		// token, and the leader's Recover, before or after this, ends it
		// as interrupted and tells the desk once. The audit trail, which
		// any instance may append to, keeps the fact that it did not run.
		if token, err := g.fence(); err != nil || token != r.Fence {
			g.log.ErrorContext(ctx, "held call not run: this instance's term as leader ended after the call was allowed; the leader reports it to the desk",
				"desk", r.Desk, "request", r.ID, "tool", r.Content.ToolName, "owner", r.Fence, "token", token)
			now := g.now()
			if err := g.store.Audit(ctx, deskbot.AuditEntry{Action: "not_run", Desk: r.Desk, Tool: r.Content.ToolName, RequestID: r.ID, By: "system", At: now,
				Detail: "this instance's term as leader ended before the call started"}); err != nil {
				g.log.ErrorContext(ctx, "could not audit a call not run", "request", r.ID, "err", err)
			}
			return nil, errLostBeforeRun
		}
	}
	start := g.now()
	// The call runs under the request's id as its key: the id is the
	// allowed call's, the same after a crash and a restart, so the broker
	// places at most one order for it however often it is asked
	// (deskbot.Broker.PlaceOrder), even if this call were ever run twice.
	var result deskbot.ToolResult
	var err error
	// The last check before the call, as close to it as it can be: the
	// book may have moved since the allow (another call of the desk).
	if changed, cerr := g.changedSinceShown(ctx, r); cerr != nil || changed != "" {
		why := changed
		if cerr != nil {
			why = "its book could not be read to check it (" + deskbot.ErrorMessage(cerr) + ")"
		}
		g.log.WarnContext(ctx, "allowed call not run: what it would do is no longer what was shown", "desk", r.Desk, "request", r.ID, "why", why)
		result = deskbot.ToolResult{Text: words.NotRunChanged(why), IsError: true}
	} else if result, err = g.runner.RunTool(deskbot.WithCallKey(ctx, r.ID), r.Desk, r.Call()); err != nil { // the changed call, when changed
		g.log.ErrorContext(ctx, "held call failed to run", "desk", r.Desk, "request", r.ID, "err", err)
		result = deskbot.ToolResult{Text: "The tool could not run: " + deskbot.ErrorMessage(err), IsError: true}
	}
	now := g.now()
	action := "ran"
	if result.IsError {
		action = "failed"
	}
	set := stored(*resp, &result)
	set.DeliveredAt = now
	t := deskbot.Transition{
		Kind:    deskbot.TransitionResult, // ran, or failed with an error result
		Now:     now,
		Set:     set,
		Audit:   &deskbot.AuditEntry{Action: action, Desk: r.Desk, Tool: r.Content.ToolName, RequestID: r.ID, By: "system", At: now, Detail: now.Sub(start).String()},
		Event:   &deskbot.Event{Kind: deskbot.EventRequestDecided, Desk: r.Desk, Time: now, RequestID: r.ID, TriggerID: r.TriggerID, Result: &result},
		Trigger: g.trigger(r, deskbot.TriggerPermission, set.Response, now),
		Held:    r, // as decide left it: only the decider changes a running request
	}
	// The call has run: recording that is worth a few tries, even when the
	// caller's context is cancelled (each try is made without it), because
	// if it is never recorded the request will later read as interrupted.
	// The waits between tries end with the context, so a stop is not held
	// up: the request then reads as interrupted, which is the truth as far
	// as anyone can tell.
	var after *deskbot.Request
	wait := retry.Backoff{Min: 100 * time.Millisecond, Max: 2 * time.Second}
	for attempt := 0; ; attempt++ {
		var out deskbot.Outcome
		after, out, err = g.store.Transition(context.WithoutCancel(ctx), r.ID, t)
		if err == nil && out == deskbot.WrongState && (after.State == deskbot.StateRan || after.State == deskbot.StateFailed) {
			// Only the decider runs a request, so a finished one is ours:
			// Redis applied it and the reply was lost before a retry.
			out = deskbot.Applied
		}
		if err == nil && out != deskbot.Applied {
			return nil, deskbot.Errorf(deskbot.ECONFLICT, "%s", words.Describe(after))
		}
		if err == nil || attempt == 4 {
			break
		}
		if retry.Sleep(ctx, wait.Next()) != nil {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	return &deskbot.PermissionResponse{Request: after, Decision: resp.Decision, Reason: resp.Reason}, nil
}

// AddReason completes a denial that is waiting for its reason: the desk is
// told now, with the reason if one is given (an empty reason, or one of
// spaces only, is a skip; surrounding space is trimmed).
// ECONFLICT if the desk was already told.
func (g *Gate) AddReason(ctx context.Context, id, reason string, by deskbot.Person) (*deskbot.Request, error) {
	r, err := g.Request(ctx, id)
	if err != nil {
		return nil, err
	}
	after, out, err := g.deliverDenial(ctx, r, strings.TrimSpace(reason), by.Audited())
	if err != nil {
		return nil, err
	}
	if out != deskbot.Applied {
		return after, deskbot.Errorf(deskbot.ECONFLICT, "The desk was already told of this denial.")
	}
	return after, nil
}

func (g *Gate) deliverDenial(ctx context.Context, r *deskbot.Request, reason, by string) (*deskbot.Request, deskbot.Outcome, error) {
	now := g.now()
	msg := ResponseMessage(deskbot.PermissionResponse{Request: r, Decision: deskbot.Deny, Reason: reason}, nil)
	action := "reason"
	if reason == "" {
		action = "reason_skipped"
	}
	return g.store.Transition(ctx, r.ID, deskbot.Transition{
		Kind:    deskbot.TransitionReason, // only while the desk has not been told
		Now:     now,
		Set:     deskbot.RequestPatch{Reason: reason, Response: msg, DeliveredAt: now},
		Audit:   &deskbot.AuditEntry{Action: action, Desk: r.Desk, Tool: r.Content.ToolName, RequestID: r.ID, By: by, At: now, Detail: reason},
		Trigger: g.trigger(r, deskbot.TriggerPermission, msg, now),
	})
}

// lapse closes an open request whose expiry has passed. It returns nil
// without error when another caller decided or lapsed it first.
func (g *Gate) lapse(ctx context.Context, id string) (*deskbot.Request, error) {
	r, ok := g.held.get(id)
	if !ok {
		var err error
		if r, err = g.store.Request(ctx, id); err != nil {
			return nil, err
		}
	}
	now := g.now()
	msg := LapseMessage(r)
	after, out, err := g.store.Transition(ctx, id, deskbot.Transition{
		Kind:    deskbot.TransitionLapse,
		Now:     now,
		Set:     deskbot.RequestPatch{Response: msg, DeliveredAt: now},
		Audit:   &deskbot.AuditEntry{Action: "lapse", Desk: r.Desk, Tool: r.Content.ToolName, RequestID: id, By: "system", At: now},
		Event:   &deskbot.Event{Kind: deskbot.EventRequestLapsed, Desk: r.Desk, Time: now, RequestID: id, TriggerID: r.TriggerID},
		Trigger: g.trigger(r, deskbot.TriggerLapse, msg, now),
		Held:    r,
	})
	if err != nil {
		return nil, err
	}
	if out != deskbot.NotDue {
		g.held.forget(id)
	}
	if out != deskbot.Applied {
		return nil, nil
	}
	return after, nil
}

func (g *Gate) trigger(r *deskbot.Request, kind deskbot.TriggerKind, text string, now time.Time) *deskbot.Trigger {
	return &deskbot.Trigger{Desk: r.Desk, Kind: kind, Text: text, RequestID: r.ID, CreatedAt: now}
}

// changedSinceShown says how what r would do now differs from what the
// chat last showed of it ("" when it is the same, or when the chat showed
// nothing that depends on the desk's book). What was shown is the chat's
// note (deskbot.ShownStateNote); an allow must not run a plan that is no
// longer the one the approver read.
func (g *Gate) changedSinceShown(ctx context.Context, r *deskbot.Request) (string, error) {
	shown, ok, held := g.held.shownOf(r.ID)
	if !ok && held {
		// This gate held it, and this process's chat (the leader's, which
		// shows every request) recorded nothing: nothing it showed
		// depends on the book. No round trip on the common path.
		return "", nil
	}
	if !ok {
		// Held by another process (a page deciding on a standby, a
		// restart): what the chat showed is in its note.
		var err error
		shown, err = g.store.Note(ctx, deskbot.ShownStateNote(r.ID))
		if deskbot.ErrorCode(err) == deskbot.ENOTFOUND {
			return "", nil
		} else if err != nil {
			return "", err
		}
	}
	if g.cfg.Books == nil {
		return "what it would do cannot be checked here", nil
	}
	book, err := g.cfg.Books.Book(ctx, r.Desk)
	if err != nil {
		return "", err
	}
	if now := deskbot.ShownState(r.Call(), book); now != shown {
		return words.StateChange(shown, now), nil
	}
	return "", nil
}

// showAgain asks the chat to show r again, with what it would do now, at
// the bottom of the chat: the allow that found it changed did nothing.
func (g *Gate) showAgain(ctx context.Context, r *deskbot.Request) {
	ev := deskbot.Event{Kind: deskbot.EventRequestChanged, Desk: r.Desk, Time: g.now(), RequestID: r.ID, TriggerID: r.TriggerID}
	if err := g.store.Publish(ctx, ev); err != nil {
		g.log.WarnContext(ctx, "could not ask the chat to show a changed request again", "request", r.ID, "err", err)
	}
}

// Shown records what the chat showed of request id's effect (a
// deskbot.ShownState), before its message goes out: an allow runs the call
// only while the desk's book still gives the same. It is kept in memory
// for this gate and in a note for every other process.
func (g *Gate) Shown(ctx context.Context, id, state string) error {
	g.held.setShown(id, state)
	return g.store.PutNote(ctx, deskbot.ShownStateNote(id), state, shownTTL)
}

// shownTTL bounds how long the note of what a request's message showed is
// kept: longer than any request stays open.
const shownTTL = 7 * 24 * time.Hour
