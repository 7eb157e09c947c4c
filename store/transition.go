package store

import (
	"cmp"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/deskbot/deskbot"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

//go:embed transition.lua
var transitionSrc string

// One script for every state change: EVALSHA, loaded on first use.
var transitionScript = redis.NewScript(auditSrc + transitionSrc)

// Transition applies t to request id in one Lua script, so that of any
// number of concurrent callers in any number of processes exactly one
// applies it, and its audit entry, event, trigger and grant are recorded
// with it or not at all. It returns the request as it stands afterwards,
// once the primary's replicas have the change (replicas.go): read back by
// the script, or, when the caller holds the request (t.Held) and the
// transition applied, t.Held with the transition applied, so that the
// script's reply carries only what the caller could not know (the
// approvals counted).
// With t.Approve the script counts the approval first (deskbot.Transition):
// outcome Counted or AlreadyApproved leaves the request open.
func (s *Store) Transition(ctx context.Context, id string, t deskbot.Transition) (*deskbot.Request, deskbot.Outcome, error) {
	if err := checkTransition(t); err != nil {
		return nil, 0, err
	}
	enc, err := s.encodeTransition(id, t)
	if err != nil {
		return nil, 0, err
	}
	res, err := s.runDecisive(ctx, transitionScript, s.transitionKeys(id, enc.inbox, t.UnlessHalted), s.transitionArgv(id, t, enc)...)
	if err != nil {
		return nil, 0, err
	}
	return transitionReply(id, t, res, enc.result)
}

// checkTransition refuses a t the script could not apply as meant.
func checkTransition(t deskbot.Transition) error {
	if len(t.From) == 0 || t.To == "" {
		return deskbot.Errorf(deskbot.EINVALID, "A transition needs a from and a to state")
	}
	if t.Change != nil && (t.Approve == nil || len(t.Change.Arguments) == 0) {
		return deskbot.Errorf(deskbot.EINVALID, "A change is its author's approval and needs its arguments")
	}
	if t.Expiry != deskbot.AnyTime && t.Now.IsZero() {
		return deskbot.Errorf(deskbot.EINVALID, "A transition that depends on expiry needs the time")
	}
	return nil
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
func (s *Store) encodeTransition(id string, t deskbot.Transition) (encodedTransition, error) {
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
		if enc.trigger, err = encode(tr); err != nil {
			return enc, err
		}
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
		b, err := json.Marshal(t.Set.Result)
		if err != nil {
			return enc, fmt.Errorf("store: encode result: %w", err)
		}
		enc.result = string(b)
	}
	return enc, nil
}

// transitionKeys are KEYS as transition.lua lists them.
func (s *Store) transitionKeys(id, inbox, haltDesk string) []string {
	return []string{
		s.requestKey(id), s.openKey(), s.runningKey(), s.denialsKey(),
		s.auditKey(), s.eventsKey(), inbox, s.grantsKey(), s.openByDeskKey(),
		s.leaderKey(), s.deskKey(cmp.Or(haltDesk, "-")), // named even when unused, as the inbox is
		s.auditHeadKey(),
	}
}

// transitionArgv is ARGV as transition.lua lists them, in one slice of the
// size they need.
func (s *Store) transitionArgv(id string, t deskbot.Transition, enc encodedTransition) []any {
	args := make([]any, 0, transitionArgs+2*patchFields)
	args = append(args, fromArg(t.From), string(t.To), t.Now.UnixMilli(), int(t.Expiry), boolArg(t.RequireUndelivered),
		id, s.opts.EventsMaxLen)
	if t.Audit != nil {
		args = append(args, "1", enc.event, enc.trigger, enc.grantField, enc.grant, s.auditMinID())
		for _, v := range auditValues(auditFor(*t.Audit, id, "")) {
			args = append(args, v)
		}
	} else {
		args = append(args, "", enc.event, enc.trigger, enc.grantField, enc.grant, "", "", "", "", "", "", "", "")
	}
	args = append(args, enc.approval, enc.approved, boolArg(t.Held != nil), "", approversArg(t))
	if t.Fence != 0 {
		// The script checks it against the lease before anything else, and
		// keeps it as the request's owner.
		args[fenceArg] = t.Fence
	}
	version := ""
	if t.Version != nil {
		version = strconv.Itoa(*t.Version)
	}
	if c := t.Change; c != nil {
		args = append(args, version, "1", max(c.Required, 1), string(c.Arguments), c.What, c.By, c.ByID, c.At.UnixMilli())
	} else {
		args = append(args, version, "", "", "", "", "", "", "")
	}
	return appendEncodedPatch(args, t.Set, enc.result)
}

// fromArg is the states a transition may start from as the script matches
// them ("|open|running|").
func fromArg(from []deskbot.RequestState) string {
	if len(from) == 1 {
		return "|" + string(from[0]) + "|"
	}
	b := "|"
	for _, f := range from {
		b += string(f) + "|"
	}
	return b
}

// transitionReply reads the script's reply to t on request id: the
// request as it stands, and the outcome.
func transitionReply(id string, t deskbot.Transition, res []any, resultJSON string) (*deskbot.Request, deskbot.Outcome, error) {
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
		r, err := appliedTo(t.Held, t, approvals, narrowed == "1", resultJSON)
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

// transitionArgs is how many ARGV come before the patch (transition.lua);
// patchFields is how many fields a patch has at most.
const (
	transitionArgs = 33
	fenceArg       = 23 // ARGV[24], 0-based
	patchFields    = 10
)

// approversArg is t.Approvers as the script matches them ("|101|102|"), or
// "" when every recorded approval counts (or t counts none).
func approversArg(t deskbot.Transition) string {
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

// appliedTo is held after transition t applied to it, as decodeRequest
// would read it back: the state, the patch (times cut to ms, the result as
// its JSON decodes), the fence, and the approvals the script counted.
// held is not changed.
func appliedTo(held *deskbot.Request, t deskbot.Transition, approvals string, narrowed bool, resultJSON string) (*deskbot.Request, error) {
	r := *held
	r.State = t.To
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

// appendPatch adds the non-zero fields of p as field, value pairs.
func appendPatch(args []any, p deskbot.RequestPatch) ([]any, error) {
	var resultJSON string
	if p.Result != nil {
		b, err := json.Marshal(p.Result)
		if err != nil {
			return nil, fmt.Errorf("store: encode result: %w", err)
		}
		resultJSON = string(b)
	}
	return appendEncodedPatch(args, p, resultJSON), nil
}

// appendEncodedPatch is appendPatch with the result given encoded.
func appendEncodedPatch(args []any, p deskbot.RequestPatch, resultJSON string) []any {
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
	return args
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
