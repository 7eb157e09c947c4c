// Package gate is the one permission service: it answers every desk's
// call (Ask: run, held or refused, with the desk's hard limits, its
// four-eyes policy, the standing grants and the hold inside), takes every
// person's decision on a held call (Decide, Change: given what their view
// showed, from the chat and the desks page alike), runs exactly the held
// call once when it is allowed, on the lifetime it was started with
// (Start, Stop), and lapses what nobody answered. The chat and the page
// only render its answers.
//
// Concurrency and delivery: every change of a request's state is one atomic
// store transition that also carries its audit entry, its event and the
// message for the desk, so any number of goroutines or processes may call
// Decide, Change, AddReason or Sweep at once: the first to change the state
// wins (resolve) and the others are told what already happened. A call runs
// only after the transition that moved the request to running, once; a
// crash after that leaves it running, and Recover reports it as
// interrupted instead of running it again. With several processes on one
// Redis only the leader decides and recovers (Config.Leader): a running
// call carries its leader's fencing token, Recover interrupts only calls
// whose leader's lease is gone, and a process that lost the lease can
// neither start nor interrupt a call: a decision is fenced in Redis, and the
// call runs only while the term that allowed it is still surely this
// process's, so a call the next leader reports as interrupted never runs
// after all.
//
// The gate remembers the requests it held (held.go) so that deciding one
// needs no read of it first; the decision itself is still the store's
// transition, which checks state and expiry in Redis, so a memory that is
// stale or missing (another process held it) costs a read, never a wrong
// decision.
//
// Four eyes: a held call needs as many distinct approvers as its desk's
// policy said when it was held (deskbot.Policies.Required, kept with
// the request). An order counts its desk's running total of notional for
// the India day, which the desk's hard limits (Config.Limits) add the
// order to in Ask before it is held: once the day passes
// two_approvers_above, every further order needs the larger count and no
// grant covers it, so splitting an order never lowers the count. An
// order is counted at its exposure as it was read and sized where it
// entered (deskbot.ToolCall.Order, package sizing): by its contract size,
// at the market's price where its own does not bound it, a sold option
// at its underlying's; the gate never reads the market for it, and an
// order not sized needs the larger count. Each allow is counted in the same
// transition that decides, once per person, so the count is met exactly
// once and the call runs only then.
package gate

import (
	"context"
	"log/slog"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/argtext"
	"github.com/deskbot/deskbot/words"
	"github.com/google/uuid"
)

// Config is the gate's part of the service configuration.
type Config struct {
	Tools    []string      // APPROVAL_TOOLS
	Expiry   time.Duration // APPROVAL_EXPIRY
	GrantTTL time.Duration // GRANT_TTL; 0 keeps grants until revoked
	// GrantMaxNotional (GRANT_MAX_NOTIONAL, rupees) caps what a place_order
	// grant covers; 0: the exposure of the order it was given on
	// (deskbot.Policies.GrantCap).
	GrantMaxNotional float64
	DenyReasonWait   time.Duration // DENY_REASON_WAIT; 0 tells the desk at once
	// Policies say how many distinct approvers a desk's held call needs
	// (fixed with the request when it is held) and how far a grant reaches;
	// nil: one approver, grants without limit.
	Policies deskbot.Policies
	// Approvers are the people whose allows count (TELEGRAM_APPROVERS): an
	// approval recorded by someone since removed counts for nothing, as a
	// stranger's tap does. nil: every recorded approval counts (tests, and
	// callers that check the approvers themselves).
	Approvers []int64
	// Leader, when set, fences what only the leader may do: a decision and
	// an interruption carry its token, and Redis refuses them once another
	// process leads. nil: one process, nothing to fence.
	Leader deskbot.Leadership
	// Books reads a desk's book, so that an allow runs a call whose shown
	// effect depends on it (deskbot.ShownState) only while the book still
	// gives what the chat showed. nil: such a call that the chat showed
	// with its effect is not run (it cannot be checked).
	Books interface {
		Book(ctx context.Context, desk string) (deskbot.Book, error)
	}
	// Limits are the desks' hard limits: a desk's call is checked against
	// them (Ask), an approver's change of a call re-checked (Gate.Change),
	// and a changed order sized by them. Required: New refuses a gate
	// without them, since a gate that skipped them would run a desk's
	// calls unlimited.
	Limits Limits
}

// Store is what the gate keeps in Redis, the desks' running totals of
// order notional for the day that four eyes reads, the notes where the
// chat keeps what it showed of each request (deskbot.ShownStateNote), and
// the event stream that asks the chat to show a changed request again.
type Store interface {
	deskbot.RequestStore
	deskbot.GrantStore
	deskbot.Auditor
	deskbot.DayNotional
	deskbot.Notes
	deskbot.Publisher
}

// Gate is the permission gate.
// It is the one deskbot.Gate the chat and the desks page decide through.
type Gate struct {
	cfg    Config
	tools  map[string]bool
	store  Store
	runner deskbot.ToolRunner
	now    deskbot.Now
	log    *slog.Logger
	held   *heldCache
	life   lifetime // of the calls it runs (Run)
}

var _ deskbot.Gate = (*Gate)(nil)

// heldCacheMax bounds the requests a gate remembers as held: far more than
// are open at once in practice (each is also a message in the chat).
const heldCacheMax = 10000

// New builds a gate. runner runs an allowed call through its desk's tools.
// A configuration without the desks' hard limits (Config.Limits) is an
// EINVALID error and builds nothing: a mistake there must never let a
// desk's calls through unchecked.
func New(cfg Config, store Store, runner deskbot.ToolRunner, now deskbot.Now, log *slog.Logger) (*Gate, error) {
	if noLimits(cfg.Limits) {
		return nil, errNoLimits
	}
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	tools := make(map[string]bool, len(cfg.Tools))
	for _, t := range cfg.Tools {
		tools[t] = true
	}
	g := &Gate{cfg: cfg, tools: tools, store: store, runner: runner, now: now, log: log, held: newHeldCache(heldCacheMax)}
	g.life.idle.L = &g.life.mu
	return g, nil
}

var errNoLimits = deskbot.Errorf(deskbot.EINVALID, "The permission gate was given no hard limits (gate.Config.Limits), so it was not built: without them no desk's call could be checked against its limits. Build the gate with the desks' gate.HardLimits.")

// noLimits reports whether l checks nothing: nil, or a nil *HardLimits
// (a nil pointer in the interface is not a nil interface).
func noLimits(l Limits) bool {
	if l == nil {
		return true
	}
	hl, ok := l.(*HardLimits)
	return ok && hl == nil
}

// fence is the token a leader-only transition carries: 0 with no Leader
// configured; EUNAVAILABLE when one is configured and this process does
// not lead (nothing may be decided or interrupted from here).
func (g *Gate) fence() (int64, error) {
	if g.cfg.Leader == nil {
		return 0, nil
	}
	if t := g.cfg.Leader.Token(); t != 0 && g.cfg.Leader.Valid() {
		return t, nil
	}
	return 0, errNotLeader
}

var errNotLeader = deskbot.Errorf(deskbot.EUNAVAILABLE, "This deskbot is not the one in charge right now (another instance is taking over); nothing was changed. Try again in a few seconds.")

var errLostBeforeRun = deskbot.Errorf(deskbot.EUNAVAILABLE, "This deskbot stopped being the one in charge after the call was allowed and before it ran, so it was not run. The instance now in charge tells the desk.")

// Permission reports whether desk's call must be held (need): the tool is
// guarded and no standing grant covers it, with the grant a call that
// need not be held runs under (nil: the tool is not guarded), so what runs
// under a grant says whose. A grant covers a call only if as many people
// gave it as the call needs now, and only up to its limit (an order above
// the two-approver threshold is always held). An error means the answer
// is unknown, and the caller must not run the call.
func (g *Gate) Permission(ctx context.Context, desk string, call deskbot.ToolCall) (need bool, under *deskbot.Grant, err error) {
	if !g.tools[call.Name] {
		return false, nil, nil
	}
	gr, err := g.store.Grant(ctx, desk, call.Name, g.now())
	switch deskbot.ErrorCode(err) {
	case "":
		n, total, err := g.required(ctx, desk, call)
		if err != nil {
			return true, nil, err
		}
		// However many gave the grant: it covers no order above its limit
		// (Grant.Covers: the order's exposure as it was sized, an order
		// not sized never), and past its limit over the day, the order is
		// as large as one order past it.
		if gr.Limit > 0 && total > gr.Limit {
			return true, nil, nil
		}
		if !gr.Covers(call, n) {
			return true, nil, nil
		}
		return false, gr, nil
	case deskbot.ENOTFOUND:
		return true, nil, nil
	}
	return true, nil, err
}

// required is how many approvers call needs now
// (deskbot.Policies.Required), with the desk's day total of order
// exposure it was counted against (read only when the policy has a
// threshold, else 0). The order's own exposure is the one it was sized
// at where it entered (call.Order); an error (Redis) means the count is
// unknown: the call is neither held nor run.
func (g *Gate) required(ctx context.Context, desk string, call deskbot.ToolCall) (n int, total float64, err error) {
	tp := g.cfg.Policies.For(desk, call.Name)
	if !deskbot.OrderTool(call.Name) || tp.TwoApproversAbove <= 0 {
		return g.cfg.Policies.Required(desk, call, 0), 0, nil
	}
	if total, err = g.store.DayNotional(ctx, desk, deskbot.OrderDay(g.now())); err != nil {
		return 0, 0, err
	}
	return g.cfg.Policies.Required(desk, call, total), total, nil
}

// Hold saves call as an open permission request and returns it with the
// tool result that tells the model to end its turn. On error nothing was
// held and the call must not run.
//
// A call whose arguments cannot be shown whole to an approver (longer than
// argtext.MaxArguments as shown) is refused with EINVALID and
// deskbot.TooLongToShowMessage: Allow must never be offered on a call that
// was shown cut. Ask refuses such calls first; this is Hold's
// own guarantee, whoever calls it.
// So is one whose arguments as sent are more than a request keeps
// (argtext.MaxRawArguments; words.TooLargeToKeepMessage).
func (g *Gate) Hold(ctx context.Context, desk, triggerID string, call deskbot.ToolCall) (*deskbot.Request, deskbot.ToolResult, error) {
	now := g.now()
	args := call.Arguments
	if len(args) == 0 {
		args = []byte("{}")
	}
	if msg := tooLargeToKeep(call.Name, args); msg != "" {
		return nil, deskbot.ToolResult{}, deskbot.Errorf(deskbot.EINVALID, "%s", msg)
	}
	// One parse gives what the approver is shown and the audit entry.
	shown, canonical := argtext.ArgumentsAndCanonical(args)
	if n := argtext.Length(shown); n > argtext.MaxArguments {
		return nil, deskbot.ToolResult{}, deskbot.Errorf(deskbot.EINVALID, "%s", words.TooLongToShowMessage(call.Name, n))
	}
	required, _, err := g.required(ctx, desk, call)
	if err != nil {
		return nil, deskbot.ToolResult{}, err
	}
	r := &deskbot.Request{
		ID:        uuid.NewString(),
		Desk:      desk,
		Kind:      deskbot.KindPermission,
		Content:   deskbot.PermissionContent{ToolName: call.Name, Arguments: args, CallID: call.ID, Order: call.Order},
		TriggerID: triggerID,
		CreatedAt: now,
		ExpiresAt: now.Add(g.cfg.Expiry),
		State:     deskbot.StateOpen,
		Required:  required,
	}
	if tp := g.cfg.Policies.For(desk, call.Name); tp.FromRole != "" {
		// Fixed now, as the count is: a restart or a change of the file
		// while it waits cannot loosen who must say yes.
		r.Role, r.RoleMembers = tp.FromRole, tp.RoleMembers
	}
	audit := deskbot.AuditEntry{Action: "hold", Desk: desk, Tool: call.Name, RequestID: r.ID, By: "desk " + desk, At: now, Detail: canonical}
	ev := deskbot.Event{Kind: deskbot.EventUserRequest, Desk: desk, Time: now, TriggerID: triggerID, RequestID: r.ID}
	if err := g.store.CreateRequest(ctx, r, audit, ev); err != nil {
		return nil, deskbot.ToolResult{}, err
	}
	g.held.put(r)
	// Attrs, not key, value pairs: every hold logs this line, and pairs
	// box each string into an interface first.
	g.log.LogAttrs(ctx, slog.LevelInfo, "held", slog.String("desk", desk), slog.String("request", r.ID),
		slog.String("tool", call.Name), slog.String("trigger", triggerID))
	return r, deskbot.ToolResult{Text: HoldMessage(r)}, nil
}

// GrantTerms is the grant an always allow of request id would give now,
// as the approver confirms it: its desk, tool, cap and end (GrantedBy and
// GrantedAt are the decision's), with the key of those terms (termsKey)
// that the confirmation carries back to Decide. ok is false when an
// always allow of it would grant nothing (a changed call, or a capped tool
// with no cap to give): it runs once.
func (g *Gate) GrantTerms(ctx context.Context, id string) (gr deskbot.Grant, key string, ok bool, err error) {
	r, err := g.asHeld(ctx, id)
	if err != nil {
		return deskbot.Grant{}, "", false, err
	}
	gr, ok = g.grantOf(r, g.now())
	return gr, termsKey(gr), ok && r.Changed == nil, nil
}

// grantOf is the grant an always allow of r gives at now, and whether it
// gives one at all (deskbot.Policies.GrantCap).
func (g *Gate) grantOf(r *deskbot.Request, now time.Time) (deskbot.Grant, bool) {
	limit, capped := g.cfg.Policies.GrantCap(r.Desk, r.Call(), g.cfg.GrantMaxNotional)
	gr := deskbot.Grant{Desk: r.Desk, Tool: r.Content.ToolName, GrantedAt: now, RequestID: r.ID, Limit: limit, Approvers: r.Needs()}
	if g.cfg.GrantTTL > 0 {
		gr.ExpiresAt = now.Add(g.cfg.GrantTTL)
	}
	return gr, !capped || limit > 0
}

// Grants lists the standing grants.
func (g *Gate) Grants(ctx context.Context) ([]deskbot.Grant, error) {
	return g.store.Grants(ctx, g.now())
}

// Revoke removes a standing grant, so the gate holds the tool again.
func (g *Gate) Revoke(ctx context.Context, desk, tool string, by deskbot.Person) error {
	now := g.now()
	return g.store.RevokeGrant(ctx, desk, tool, deskbot.AuditEntry{Action: "revoke", Desk: desk, Tool: tool, By: by.Audited(), At: now})
}

// Request returns a request as it stands.
func (g *Gate) Request(ctx context.Context, id string) (*deskbot.Request, error) {
	if _, err := uuid.Parse(id); err != nil {
		return nil, deskbot.Errorf(deskbot.EINVALID, "'%s' is not a request id.", id)
	}
	return g.store.Request(ctx, id)
}

// tooLargeToKeep is the words for the model when a guarded call's arguments
// as sent (args) are longer than a request keeps (argtext.MaxRawArguments:
// padding the approver is never shown, past which the store's script
// fails), and "" when they fit. Ask and Hold both ask it.
func tooLargeToKeep(tool string, args []byte) string {
	if len(args) <= argtext.MaxRawArguments {
		return ""
	}
	return words.TooLargeToKeepMessage(tool, len(args))
}
