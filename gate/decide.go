package gate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"sync"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/words"
)

// The decision entry: the one flow the chat and the desks page both call.
// A person's decision (or change) is taken by the gate, an allowed call
// is run here on the lifetime the gate was started with (Start), never on
// the tap's or the request's context, which ends as soon as the person is
// answered, and the answer is worded here, the same wherever they decided.

// Decide takes by's decision on request id from a view that showed the
// call as seen says (deskbot.Gate.Decide). An allow is refused with
// ECONFLICT when the view did not show the call whole (words.NotShownWholeAnswer),
// and an always allow that would give a capped grant when its terms are
// not the ones the view asked to confirm (seen.Terms; words.GrantTermsChanged).
// A counted allow is answered with how many more approvers it needs, a
// won allow starts the call and is answered that it runs, a denial that
// it will not.
func (g *Gate) Decide(ctx context.Context, id string, seen deskbot.Seen, d deskbot.Decision, reason string, by deskbot.Person) (*deskbot.Answer, error) {
	if err := g.ready(); err != nil {
		return nil, err
	}
	if d.Allows() && !seen.Whole {
		// No button offers it: a tap that does is forged or stale.
		g.log.WarnContext(ctx, "refused an allow of a call not shown whole", "request", id, "by", by.Audited())
		return nil, deskbot.Errorf(deskbot.ECONFLICT, "%s", words.NotShownWholeAnswer)
	}
	if d == deskbot.AlwaysAllow {
		if err := g.confirmed(ctx, id, seen.Terms, by); err != nil {
			return nil, err
		}
	}
	resp, err := g.decide(ctx, id, seen.Changes, d, reason, by)
	if err != nil {
		return nil, err
	}
	ans := &deskbot.Answer{Request: resp.Request, Decision: resp.Decision, Counted: resp.Counted}
	switch {
	case resp.Counted:
		ans.Text = words.CountedMessage(resp.Request)
	case !resp.Allows():
		ans.Text, ans.AwaitsReason = words.DeniedAnswer, resp.Request.DeliveredAt.IsZero()
	default:
		g.start(ctx, resp)
		// The decision that ran, not the tap: a changed call, or an order
		// that no grant can be capped for, is allowed once.
		ans.Text = words.AllowedAnswer(resp.Decision)
	}
	return ans, nil
}

// Change takes by's change of request id's call (change): the same flow
// as an allow, since a change is its author's approval.
func (g *Gate) Change(ctx context.Context, id, changes string, version int, by deskbot.Person) (*deskbot.Answer, error) {
	if err := g.ready(); err != nil {
		return nil, err
	}
	resp, err := g.change(ctx, id, changes, version, by)
	if err != nil {
		return nil, err
	}
	ans := &deskbot.Answer{Request: resp.Request, Decision: resp.Decision, Counted: resp.Counted}
	if resp.Counted || !resp.Allows() {
		ans.Text = words.ChangedCountedMessage(resp.Request)
		return ans, nil
	}
	g.start(ctx, resp)
	ans.Text = words.ChangedAllowedAnswer
	return ans, nil
}

// confirmed checks an always allow of request id against the terms its
// view asked to confirm: when the gate would give a capped grant now, the
// view must have shown exactly those terms (a confirmation whose terms
// went stale, or a tap that never asked, changes nothing). An always
// allow that gives no capped grant needs no confirmation.
func (g *Gate) confirmed(ctx context.Context, id, shown string, by deskbot.Person) error {
	gr, key, ok, err := g.GrantTerms(ctx, id)
	if err != nil {
		return err
	}
	if !ok || gr.Limit <= 0 || shown == key {
		return nil
	}
	g.log.WarnContext(ctx, "refused an always allow whose grant's terms were not the ones shown", "request", id, "by", by.Audited(), "shown", shown, "now", key)
	return deskbot.Errorf(deskbot.ECONFLICT, "%s", words.GrantTermsChanged)
}

// termsKey is the key of a grant's terms as the approver confirms them:
// the request, its desk and tool, the cap, how many give it and how long
// it lasts. Its end is kept as a length, not a time, because the grant
// starts when it is confirmed. Short, to fit in a button's data.
func termsKey(gr deskbot.Grant) string {
	ttl := int64(0)
	if !gr.ExpiresAt.IsZero() {
		ttl = int64(gr.ExpiresAt.Sub(gr.GrantedAt))
	}
	h := sha256.New()
	for _, s := range []string{gr.RequestID, gr.Desk, gr.Tool, strconv.FormatFloat(gr.Limit, 'f', -1, 64), strconv.Itoa(max(gr.Approvers, 1)), strconv.FormatInt(ttl, 10)} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// start runs resp's allowed call on the gate's lifetime, tracked so that
// Stop returns only once it is done. A gate not started yet decides
// nothing (Decide, Change refuse first: errNotStarted), so there is one
// way a call runs. After Stop returned the call is not run: it stays
// running, and the next start reports it interrupted.
func (g *Gate) start(ctx context.Context, resp *deskbot.PermissionResponse) {
	r := resp.Request
	life, ok := g.life.add()
	if !ok {
		g.log.WarnContext(ctx, "held call allowed while stopping; not run, the next start reports it", "desk", r.Desk, "request", r.ID)
		return
	}
	go func() {
		defer g.life.done()
		g.runLogged(life, resp)
	}()
}

// ready says why the gate decides nothing now: a standby (errNotLeader,
// as the decision's own fence would say) or, on the leader, a gate not
// started yet (errNotStarted: no lifetime to run an allowed call on).
func (g *Gate) ready() error {
	if _, err := g.fence(); err != nil {
		return err
	}
	if !g.life.started() {
		return errNotStarted
	}
	return nil
}

// errNotStarted answers a decision taken before the gate was started.
var errNotStarted = deskbot.Errorf(deskbot.EUNAVAILABLE, "deskbot is still starting; nothing was decided. Try again in a few seconds.")

// runLogged runs an allowed call. Its outcome reaches the chat through
// the event stream and the desk through its inbox; here it is only
// logged.
func (g *Gate) runLogged(ctx context.Context, resp *deskbot.PermissionResponse) {
	r := resp.Request
	if _, err := g.run(ctx, resp); err != nil {
		if deskbot.ErrorCode(err) == deskbot.EINTERNAL {
			g.log.ErrorContext(ctx, "held call was allowed but not recorded as run", "desk", r.Desk, "request", r.ID, "err", err)
		} else {
			g.log.WarnContext(ctx, "held call not run", "desk", r.Desk, "request", r.ID, "err", deskbot.ErrorMessage(err))
		}
	}
}

// Start makes life the lifetime of the calls the gate allows from now on,
// once: later calls of it change nothing.
func (g *Gate) Start(life context.Context) { g.life.begin(life) }

// Stop waits for the calls the gate started to finish; a call allowed
// meanwhile still runs and is waited for, one allowed after Stop returned
// is not run (it stays running, and the next start reports it
// interrupted). The service stops it once nothing decides any more.
func (g *Gate) Stop() { g.life.close() }

// lifetime counts the calls the gate runs, so that Stop can wait for them.
type lifetime struct {
	mu     sync.Mutex
	idle   sync.Cond // on mu; close waits on it for n to reach 0
	ctx    context.Context
	n      int
	closed bool // close returned: nothing more runs
}

// begin sets the lifetime, once.
func (l *lifetime) begin(ctx context.Context) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ctx == nil {
		l.ctx = ctx
	}
}

// started reports whether begin was called.
func (l *lifetime) started() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ctx != nil
}

// add counts a call about to run, on the lifetime it returns; false once
// close returned.
func (l *lifetime) add() (context.Context, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, false
	}
	l.n++
	return l.ctx, true
}

func (l *lifetime) done() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n--
	if l.n == 0 {
		l.idle.Broadcast()
	}
}

// close waits until no counted call is left, then refuses more.
func (l *lifetime) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.n > 0 {
		l.idle.Wait()
	}
	l.closed = true
}
