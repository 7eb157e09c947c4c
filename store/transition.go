package store

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/deskbot/deskbot"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// Each kind of transition has its own script (deskbot.TransitionKind):
// it checks only what that kind depends on, writes only what it records,
// and takes only the KEYS and ARGV it needs, which its header names. The
// scripts share prelude.lua (after audit.lua), concatenated in front.
var (
	//go:embed prelude.lua
	preludeSrc string
	//go:embed allow.lua
	allowSrc string
	//go:embed change.lua
	changeSrc string
	//go:embed deny.lua
	denySrc string
	//go:embed result.lua
	resultSrc string
	//go:embed reason.lua
	reasonSrc string
	//go:embed lapse.lua
	lapseSrc string
	//go:embed interrupt.lua
	interruptSrc string
)

// transitionScript is a transition's script: EVALSHA, loaded on first use.
func transitionScript(src string) *redis.Script {
	return redis.NewScript(auditSrc + preludeSrc + src)
}

// carries is what a transition carries besides its kind and request: its
// fields, and the fields of its patch it sets.
type carries uint32

const (
	cNow carries = 1 << iota
	cAudit
	cEvent
	cTrigger
	cGrant
	cApprove
	cApproved
	cApprovers
	cFence
	cHeld
	cUnlessHalted
	cVersion
	cChange
	cDecision
	cDecidedBy
	cDecidedAt
	cReason
	cResult
	cResponse
	cDeliveredAt
	cDenyDueAt
	cToken
)

// carryNames name the bits of carries, in order, as deskbot.Transition
// names them.
var carryNames = [...]string{"Now", "Audit", "Event", "Trigger", "Grant", "Approve", "Approved", "Approvers",
	"Fence", "Held", "UnlessHalted", "Version", "Change", "Set.Decision", "Set.DecidedBy", "Set.DecidedAt",
	"Set.Reason", "Set.Result", "Set.Response", "Set.DeliveredAt", "Set.DenyDueAt", "Set.Token"}

// carried is what t carries.
func carried(t *deskbot.Transition) carries {
	var c carries
	for _, f := range [...]struct {
		set bool
		bit carries
	}{
		{!t.Now.IsZero(), cNow}, {t.Audit != nil, cAudit}, {t.Event != nil, cEvent}, {t.Trigger != nil, cTrigger},
		{t.Grant != nil, cGrant}, {t.Approve != nil, cApprove}, {t.Approved != nil, cApproved},
		{len(t.Approvers) > 0, cApprovers}, {t.Fence != 0, cFence}, {t.Held != nil, cHeld},
		{t.UnlessHalted != "", cUnlessHalted}, {t.Version != nil, cVersion}, {t.Change != nil, cChange},
		{t.Set.Decision != "", cDecision}, {t.Set.DecidedBy != (deskbot.Person{}), cDecidedBy},
		{!t.Set.DecidedAt.IsZero(), cDecidedAt}, {t.Set.Reason != "", cReason}, {t.Set.Result != nil, cResult},
		{t.Set.Response != "", cResponse}, {!t.Set.DeliveredAt.IsZero(), cDeliveredAt},
		{!t.Set.DenyDueAt.IsZero(), cDenyDueAt}, {t.Set.Token != "", cToken},
	} {
		if f.set {
			c |= f.bit
		}
	}
	return c
}

// names lists the fields c holds.
func (c carries) names() string {
	var out []string
	for i, n := range carryNames {
		if c&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return strings.Join(out, ", ")
}

// decided is what a decision sets: who decided, when, why, and its token.
const decided = cDecision | cDecidedBy | cDecidedAt | cReason | cToken

// transitionKind is how the store applies one kind of transition: its
// script (file), what a transition of the kind may carry and must carry,
// the state it ends in (for what the caller holds), and its KEYS and ARGV
// as the script's header names them.
type transitionKind struct {
	file       string
	script     *redis.Script
	may, needs carries
	to         deskbot.RequestState
	keys       func(s *Store, id string, t *deskbot.Transition, e *encodedTransition) []string
	argv       func(s *Store, id string, t *deskbot.Transition, e *encodedTransition) []any
}

// transitionKinds is every kind, by deskbot.TransitionKind.
var transitionKinds = [...]*transitionKind{
	deskbot.TransitionAllow: {
		file: "allow.lua", script: transitionScript(allowSrc), to: deskbot.StateRunning,
		may: cNow | cAudit | cEvent | cGrant | cApprove | cApproved | cApprovers | cFence | cHeld |
			cUnlessHalted | cVersion | decided,
		needs: cNow | cUnlessHalted,
		keys: func(s *Store, id string, t *deskbot.Transition, _ *encodedTransition) []string {
			return []string{s.requestKey(id), s.openKey(), s.openByDeskKey(), s.runningKey(), s.auditKey(),
				s.auditHeadKey(), s.eventsKey(), s.grantsKey(), s.leaderKey(), s.deskKey(t.UnlessHalted)}
		},
		argv: func(s *Store, id string, t *deskbot.Transition, e *encodedTransition) []any {
			args := make([]any, 0, 26)
			args = append(args, id, t.Now.UnixMilli(), held(t), fenceArg(t), versionArg(t), e.approval, approversArg(t))
			args = appendDecided(args, t.Set)
			args = append(args, e.event, e.approved, s.opts.EventsMaxLen, e.grantField, e.grant)
			return s.appendAudit(args, id, t)
		},
	},
	deskbot.TransitionChange: {
		file: "change.lua", script: transitionScript(changeSrc), to: deskbot.StateRunning,
		may: cNow | cAudit | cEvent | cApprove | cApproved | cApprovers | cFence | cHeld |
			cUnlessHalted | cVersion | cChange | decided,
		needs: cNow | cUnlessHalted | cApprove | cVersion | cChange,
		keys: func(s *Store, id string, t *deskbot.Transition, _ *encodedTransition) []string {
			return []string{s.requestKey(id), s.openKey(), s.openByDeskKey(), s.runningKey(), s.auditKey(),
				s.auditHeadKey(), s.eventsKey(), s.leaderKey(), s.deskKey(t.UnlessHalted)}
		},
		argv: func(s *Store, id string, t *deskbot.Transition, e *encodedTransition) []any {
			c := t.Change
			args := make([]any, 0, 30)
			args = append(args, id, t.Now.UnixMilli(), held(t), fenceArg(t), versionArg(t), e.approval, approversArg(t))
			args = appendDecided(args, t.Set)
			args = append(args, e.event, e.approved, s.opts.EventsMaxLen,
				max(c.Required, 1), string(c.Arguments), c.What, c.By, c.ByID, c.At.UnixMilli())
			return s.appendAudit(args, id, t)
		},
	},
	deskbot.TransitionDeny: {
		file: "deny.lua", script: transitionScript(denySrc), to: deskbot.StateDenied,
		may:   cNow | cAudit | cEvent | cTrigger | cFence | cHeld | decided | cResponse | cDeliveredAt | cDenyDueAt,
		needs: cNow,
		keys: func(s *Store, id string, _ *deskbot.Transition, e *encodedTransition) []string {
			return []string{s.requestKey(id), s.openKey(), s.openByDeskKey(), s.denialsKey(), s.auditKey(),
				s.auditHeadKey(), s.eventsKey(), e.inbox, s.leaderKey()}
		},
		argv: func(s *Store, id string, t *deskbot.Transition, e *encodedTransition) []any {
			args := make([]any, 0, 24)
			args = append(args, id, t.Now.UnixMilli(), held(t), fenceArg(t))
			args = appendDecided(args, t.Set)
			args = append(args, t.Set.Response, msArg(t.Set.DeliveredAt), msArg(t.Set.DenyDueAt),
				e.event, s.opts.EventsMaxLen, e.trigger)
			return s.appendAudit(args, id, t)
		},
	},
	deskbot.TransitionResult: {
		file: "result.lua", script: transitionScript(resultSrc),
		may:   cNow | cAudit | cEvent | cTrigger | cHeld | cResult | cResponse | cDeliveredAt,
		needs: cResult,
		keys: func(s *Store, id string, _ *deskbot.Transition, e *encodedTransition) []string {
			return []string{s.requestKey(id), s.runningKey(), s.auditKey(), s.auditHeadKey(), s.eventsKey(), e.inbox}
		},
		argv: func(s *Store, id string, t *deskbot.Transition, e *encodedTransition) []any {
			args := make([]any, 0, 17)
			args = append(args, id, held(t), string(resultState(t)), e.result, t.Set.Response, msArg(t.Set.DeliveredAt),
				e.event, s.opts.EventsMaxLen, e.trigger)
			return s.appendAudit(args, id, t)
		},
	},
	deskbot.TransitionReason: {
		file: "reason.lua", script: transitionScript(reasonSrc),
		may: cNow | cAudit | cTrigger | cReason | cResponse | cDeliveredAt,
		keys: func(s *Store, id string, _ *deskbot.Transition, e *encodedTransition) []string {
			return []string{s.requestKey(id), s.denialsKey(), s.auditKey(), s.auditHeadKey(), e.inbox}
		},
		argv: func(s *Store, id string, t *deskbot.Transition, e *encodedTransition) []any {
			args := make([]any, 0, 13)
			args = append(args, id, t.Set.Reason, t.Set.Response, msArg(t.Set.DeliveredAt), e.trigger)
			return s.appendAudit(args, id, t)
		},
	},
	deskbot.TransitionLapse: {
		file: "lapse.lua", script: transitionScript(lapseSrc), to: deskbot.StateLapsed,
		may:   cNow | cAudit | cEvent | cTrigger | cHeld | cResponse | cDeliveredAt,
		needs: cNow,
		keys: func(s *Store, id string, _ *deskbot.Transition, e *encodedTransition) []string {
			return []string{s.requestKey(id), s.openKey(), s.openByDeskKey(), s.auditKey(), s.auditHeadKey(),
				s.eventsKey(), e.inbox}
		},
		argv: func(s *Store, id string, t *deskbot.Transition, e *encodedTransition) []any {
			args := make([]any, 0, 16)
			args = append(args, id, t.Now.UnixMilli(), held(t), t.Set.Response, msArg(t.Set.DeliveredAt),
				e.event, s.opts.EventsMaxLen, e.trigger)
			return s.appendAudit(args, id, t)
		},
	},
	deskbot.TransitionInterrupt: {
		file: "interrupt.lua", script: transitionScript(interruptSrc),
		may: cNow | cAudit | cEvent | cTrigger | cFence | cResponse | cDeliveredAt,
		keys: func(s *Store, id string, _ *deskbot.Transition, e *encodedTransition) []string {
			return []string{s.requestKey(id), s.runningKey(), s.auditKey(), s.auditHeadKey(), s.eventsKey(),
				e.inbox, s.leaderKey()}
		},
		argv: func(s *Store, id string, t *deskbot.Transition, e *encodedTransition) []any {
			args := make([]any, 0, 15)
			args = append(args, id, fenceArg(t), t.Set.Response, msArg(t.Set.DeliveredAt),
				e.event, s.opts.EventsMaxLen, e.trigger)
			return s.appendAudit(args, id, t)
		},
	},
}

// Transition applies t to request id with its kind's script, so that of
// any number of concurrent callers in any number of processes exactly one
// applies it, and its audit entry, event, trigger and grant are recorded
// with it or not at all. It returns the request as it stands afterwards,
// once the primary's replicas have it (replicas.go): read back by the
// script, or, when the caller holds the request (t.Held) and the
// transition applied, t.Held with the transition applied, so that the
// script's reply carries only what the caller could not know (the
// approvals counted). An allow or a change counts its approval first
// (deskbot.Transition): outcome Counted or AlreadyApproved leaves the
// request open. A t that carries what its kind does not apply is refused
// (EINVALID), nothing written.
func (s *Store) Transition(ctx context.Context, id string, t deskbot.Transition) (*deskbot.Request, deskbot.Outcome, error) {
	k, err := kindOf(&t)
	if err != nil {
		return nil, 0, err
	}
	enc, err := s.encodeTransition(id, &t)
	if err != nil {
		return nil, 0, err
	}
	res, err := s.runDecisive(ctx, k.script, k.keys(s, id, &t, &enc), k.argv(s, id, &t, &enc)...)
	if err != nil {
		return nil, 0, err
	}
	return transitionReply(id, &t, k, res, enc.result)
}

// kindOf is how t's kind is applied, or the EINVALID error that refuses t:
// an unknown kind, or a t that carries what its kind does not apply, or
// lacks what it needs.
func kindOf(t *deskbot.Transition) (*transitionKind, error) {
	if t.Kind <= 0 || int(t.Kind) >= len(transitionKinds) {
		return nil, deskbot.Errorf(deskbot.EINVALID, "A transition needs a kind (%s is none)", t.Kind)
	}
	k, c := transitionKinds[t.Kind], carried(t)
	if extra := c &^ k.may; extra != 0 {
		return nil, deskbot.Errorf(deskbot.EINVALID, "A %s transition cannot carry %s", t.Kind, extra.names())
	}
	if missing := k.needs &^ c; missing != 0 {
		return nil, deskbot.Errorf(deskbot.EINVALID, "A %s transition needs %s", t.Kind, missing.names())
	}
	if t.Change != nil && len(t.Change.Arguments) == 0 {
		return nil, deskbot.Errorf(deskbot.EINVALID, "A change needs the changed arguments")
	}
	// Approvers and Approved only qualify the counting of Approve: without
	// it the script counts nothing, and they would be dropped unseen.
	if extra := c & (cApprovers | cApproved); extra != 0 && c&cApprove == 0 {
		return nil, deskbot.Errorf(deskbot.EINVALID, "A %s transition without Approve cannot carry %s", t.Kind, extra.names())
	}
	return k, nil
}

// resultState is the state a result ends its request in.
func resultState(t *deskbot.Transition) deskbot.RequestState {
	if t.Set.Result != nil && t.Set.Result.IsError {
		return deskbot.StateFailed
	}
	return deskbot.StateRan
}

// encodedTransition is what a transition records, encoded as the script
// takes it ("" for what it does not record), and the inbox its trigger
// goes to.
type encodedTransition struct {
	inbox                             string
	event, trigger, grantField, grant string
	approval, approved, result        string
}

// encodeTransition encodes what t records for request id.
func (s *Store) encodeTransition(id string, t *deskbot.Transition) (encodedTransition, error) {
	enc := encodedTransition{inbox: s.inboxKey("-")} // named even when unused: Redis wants every key named
	var err error
	if t.Event != nil {
		if enc.event, err = encodeEvent(eventFor(*t.Event, id)); err != nil {
			return enc, err
		}
	}
	if t.Trigger != nil {
		tr := *t.Trigger
		if tr.Desk == "" {
			return enc, deskbot.Errorf(deskbot.EINVALID, "A trigger needs a desk")
		}
		if tr.ID == "" {
			tr.ID = uuid.NewString()
		}
		if tr.CreatedAt.IsZero() {
			tr.CreatedAt = t.Now
		}
		tr.CreatedAt = tr.CreatedAt.UTC()
		enc.inbox = s.inboxKey(tr.Desk)
		b, err := appendTrigger(make([]byte, 0, 192+len(tr.Text)), &tr)
		if err != nil {
			return enc, fmt.Errorf("store: encode %T: %w", tr, err)
		}
		enc.trigger = string(b)
	}
	if t.Grant != nil {
		enc.grantField = grantKey(t.Grant.Desk, t.Grant.Tool)
		if enc.grant, err = encode(*t.Grant); err != nil {
			return enc, err
		}
	}
	if t.Approve != nil {
		enc.approval = approvalRecord(*t.Approve)
		if t.Approved != nil {
			if enc.approved, err = encodeEvent(eventFor(*t.Approved, id)); err != nil {
				return enc, err
			}
		}
	}
	if t.Set.Result != nil {
		enc.result = string(appendToolResult(make([]byte, 0, 32+len(t.Set.Result.Text)), t.Set.Result))
	}
	return enc, nil
}

// appendAudit adds the audit entry's ARGV, as every script names them
// last: the stream's MINID and the entry's seven values, all "" when t
// has none.
func (s *Store) appendAudit(args []any, id string, t *deskbot.Transition) []any {
	if t.Audit == nil {
		return append(args, "", "", "", "", "", "", "", "")
	}
	return s.appendAuditArgv(args, auditFor(*t.Audit, id, ""))
}

// appendDecided adds a decision's fields as allow.lua, change.lua and
// deny.lua take them: decision, by, by id, at, reason, token ("" where
// the patch leaves them).
func appendDecided(args []any, p deskbot.RequestPatch) []any {
	var byID any = ""
	if p.DecidedBy.ID != 0 {
		byID = p.DecidedBy.ID
	}
	return append(args, string(p.Decision), p.DecidedBy.Name, byID, msArg(p.DecidedAt), p.Reason, p.Token)
}

// msArg is a time as the scripts take it: ms since the epoch, "" for the
// zero time (the field is left as it is).
func msArg(t time.Time) any {
	if t.IsZero() {
		return ""
	}
	return t.UnixMilli()
}

// held is "1" when the caller holds the request (the script then answers
// an applied transition with only what the caller cannot know).
func held(t *deskbot.Transition) string {
	if t.Held != nil {
		return "1"
	}
	return ""
}

// fenceArg is the leader's fencing token, "" when t is not fenced: the
// script checks it against the lease before anything else, and keeps it
// as the request's owner.
func fenceArg(t *deskbot.Transition) any {
	if t.Fence == 0 {
		return ""
	}
	return t.Fence
}

// versionArg is the count of changes the caller saw, "" when unchecked.
func versionArg(t *deskbot.Transition) any {
	if t.Version == nil {
		return ""
	}
	return *t.Version
}

// transitionReply reads the script's reply to t on request id: the
// request as it stands, and the outcome.
func transitionReply(id string, t *deskbot.Transition, k *transitionKind, res []any, resultJSON string) (*deskbot.Request, deskbot.Outcome, error) {
	code, _ := res[0].(int64)
	if code < 0 {
		return nil, 0, deskbot.Errorf(deskbot.ENOTFOUND, "Request %s not found; it may have expired from the record", id)
	}
	if code == int64(deskbot.Applied) && t.Held != nil {
		if len(res) != 3 {
			return nil, 0, fmt.Errorf("store: unexpected transition reply of %d parts", len(res))
		}
		approvals, _ := res[1].(string)
		narrowed, _ := res[2].(string)
		to := k.to
		if t.Kind == deskbot.TransitionResult {
			to = resultState(t)
		}
		r, err := appliedTo(t.Held, t, to, approvals, narrowed == "1", resultJSON)
		return r, deskbot.Applied, err
	}
	h, err := flatMap(res[1])
	if err != nil {
		return nil, 0, err
	}
	r, err := decodeRequest(id, h)
	if err != nil {
		return nil, 0, err
	}
	return r, deskbot.Outcome(code), nil
}

// approversArg is t.Approvers as the script matches them ("|101|102|"), or
// "" when every recorded approval counts (or t counts none).
func approversArg(t *deskbot.Transition) string {
	if t.Approve == nil || len(t.Approvers) == 0 {
		return ""
	}
	return idsArg(t.Approvers)
}

// idsArg is ids as the script matches them: "|101|102|".
func idsArg(ids []int64) string {
	b := []byte{'|'}
	for _, id := range ids {
		b = strconv.AppendInt(b, id, 10)
		b = append(b, '|')
	}
	return string(b)
}

// eventFor is e as a transition of request id publishes it: naming the
// request, without it (readers get the request as it stands when they read).
func eventFor(e deskbot.Event, id string) deskbot.Event {
	if e.RequestID == "" {
		e.RequestID = id
	}
	e.Request = nil
	return e
}

// appliedTo is held after transition t applied to it (ending in state to), as decodeRequest
// would read it back: the state, the patch (times cut to ms, the result as
// its JSON decodes), the fence, and the approvals the script counted.
// held is not changed.
func appliedTo(held *deskbot.Request, t *deskbot.Transition, to deskbot.RequestState, approvals string, narrowed bool, resultJSON string) (*deskbot.Request, error) {
	r := *held
	r.State = to
	r.Required = max(r.Required, 1)
	p := t.Set
	if p.Decision != "" {
		r.Decision = p.Decision
	}
	if p.DecidedBy.Name != "" {
		r.DecidedBy = p.DecidedBy.Name
	}
	if p.DecidedBy.ID != 0 {
		r.DecidedByID = p.DecidedBy.ID
	}
	if !p.DecidedAt.IsZero() {
		r.DecidedAt = msTime(p.DecidedAt)
	}
	if p.Reason != "" {
		r.Reason = p.Reason
	}
	if p.Result != nil {
		res := *p.Result
		if !utf8.ValidString(res.Text) || !utf8.ValidString(res.Picture) {
			// JSON coerced them to valid UTF-8: what Redis keeps.
			if err := json.Unmarshal([]byte(resultJSON), &res); err != nil {
				return nil, fmt.Errorf("store: decode result: %w", err)
			}
		}
		r.Result = &res
	}
	if p.Response != "" {
		r.Response = p.Response
	}
	if !p.DeliveredAt.IsZero() {
		r.DeliveredAt = msTime(p.DeliveredAt)
	}
	if p.Token != "" {
		r.DecisionToken = p.Token
	}
	if !p.DenyDueAt.IsZero() {
		r.DenyDueAt = msTime(p.DenyDueAt)
	}
	if t.Fence != 0 {
		r.Fence = t.Fence
	}
	r.Approvals = decodeApprovals(approvals)
	if c := t.Change; c != nil {
		cc := c.CallChange
		cc.At = msTime(cc.At)
		r.Changed, r.Changes, r.Required = &cc, held.Changes+1, max(c.Required, 1)
	}
	if narrowed {
		r.Decision = deskbot.AllowOnce
	}
	return &r, nil
}

// appendPatch adds the non-zero fields of p as field, value pairs (the
// rewrite of old requests, oldformat.go; the transitions' scripts take
// their kind's fields by position instead).
func appendPatch(args []any, p deskbot.RequestPatch) ([]any, error) {
	var resultJSON string
	if p.Result != nil {
		b, err := json.Marshal(p.Result)
		if err != nil {
			return nil, fmt.Errorf("store: encode result: %w", err)
		}
		resultJSON = string(b)
	}
	if p.Decision != "" {
		args = append(args, fDecision, string(p.Decision))
	}
	if p.DecidedBy.Name != "" {
		args = append(args, fDecidedBy, p.DecidedBy.Name)
	}
	if p.DecidedBy.ID != 0 {
		args = append(args, fDecidedByID, p.DecidedBy.ID)
	}
	if !p.DecidedAt.IsZero() {
		args = append(args, fDecidedAt, p.DecidedAt.UnixMilli())
	}
	if p.Reason != "" {
		args = append(args, fReason, p.Reason)
	}
	if p.Result != nil {
		args = append(args, fResult, resultJSON)
	}
	if p.Response != "" {
		args = append(args, fResponse, p.Response)
	}
	if !p.DeliveredAt.IsZero() {
		args = append(args, fDeliveredAt, p.DeliveredAt.UnixMilli())
	}
	if p.Token != "" {
		args = append(args, fToken, p.Token)
	}
	if !p.DenyDueAt.IsZero() {
		args = append(args, fDenyDueAt, p.DenyDueAt.UnixMilli())
	}
	return args, nil
}

// flatMap turns a Lua HGETALL reply (field, value, ...) into a map.
func flatMap(v any) (map[string]string, error) {
	list, ok := v.([]any)
	if !ok || len(list)%2 != 0 {
		return nil, fmt.Errorf("store: unexpected transition reply %T", v)
	}
	m := make(map[string]string, len(list)/2)
	for i := 0; i < len(list); i += 2 {
		k, _ := list[i].(string)
		val, _ := list[i+1].(string)
		m[k] = val
	}
	return m, nil
}

func boolArg(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
