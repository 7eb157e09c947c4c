package store

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/deskbot/deskbot"
	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

//go:embed transition.lua
var transitionSrc string

// One script for every state change: EVALSHA, loaded on first use.
var transitionScript = redis.NewScript(transitionSrc)

// Transition applies t to request id in one Lua script, so that of any
// number of concurrent callers in any number of processes exactly one
// applies it, and its audit entry, event, trigger and grant are recorded
// with it or not at all. It returns the request as it stands afterwards,
// once the primary's replicas have the change (replicas.go).
// With t.Approve the script counts the approval first (deskbot.Transition):
// outcome Counted or AlreadyApproved leaves the request open.
func (s *Store) Transition(ctx context.Context, id string, t deskbot.Transition) (*deskbot.Request, deskbot.Outcome, error) {
	if len(t.From) == 0 || t.To == "" {
		return nil, 0, deskbot.Errorf(deskbot.EINVALID, "A transition needs a from and a to state")
	}
	if t.Expiry != deskbot.AnyTime && t.Now.IsZero() {
		return nil, 0, deskbot.Errorf(deskbot.EINVALID, "A transition that depends on expiry needs the time")
	}
	from := make([]string, len(t.From))
	for i, f := range t.From {
		from[i] = string(f)
	}
	inbox := s.inboxKey("-") // declared even when unused: Redis wants every key named
	var hasAudit, eventJSON, triggerJSON, grantField, grantJSON string
	var err error
	audit := make([]string, len(auditNames))
	if t.Audit != nil {
		hasAudit, audit = "1", auditValues(auditFor(*t.Audit, id, ""))
	}
	if t.Event != nil {
		e := *t.Event
		if e.RequestID == "" {
			e.RequestID = id
		}
		e.Request = nil // readers get the request as it stands when they read
		if eventJSON, err = encodeEvent(e); err != nil {
			return nil, 0, err
		}
	}
	if t.Trigger != nil {
		tr := *t.Trigger
		if tr.Desk == "" {
			return nil, 0, deskbot.Errorf(deskbot.EINVALID, "A trigger needs a desk")
		}
		if tr.ID == "" {
			tr.ID = uuid.NewString()
		}
		if tr.CreatedAt.IsZero() {
			tr.CreatedAt = t.Now
		}
		tr.CreatedAt = tr.CreatedAt.UTC()
		inbox = s.inboxKey(tr.Desk)
		if triggerJSON, err = encode(tr); err != nil {
			return nil, 0, err
		}
	}
	if t.Grant != nil {
		grantField = grantKey(t.Grant.Desk, t.Grant.Tool)
		if grantJSON, err = encode(*t.Grant); err != nil {
			return nil, 0, err
		}
	}
	var approval, approvedJSON string
	if t.Approve != nil {
		approval = approvalRecord(*t.Approve)
		if t.Approved != nil {
			e := *t.Approved
			if e.RequestID == "" {
				e.RequestID = id
			}
			e.Request = nil
			if approvedJSON, err = encodeEvent(e); err != nil {
				return nil, 0, err
			}
		}
	}
	args := []any{
		"|" + strings.Join(from, "|") + "|", string(t.To), t.Now.UnixMilli(),
		int(t.Expiry), boolArg(t.RequireUndelivered), id, s.opts.EventsMaxLen,
		hasAudit, eventJSON, triggerJSON, grantField, grantJSON, s.auditMinID(),
	}
	for _, v := range audit {
		args = append(args, v)
	}
	args = append(args, approval, approvedJSON)
	args, err = appendPatch(args, t.Set)
	if err != nil {
		return nil, 0, err
	}
	if t.Fence != 0 {
		// A patch field like the others: the script checks it against the
		// lease before anything else, and keeps it as the request's owner.
		args = append(args, fFence, t.Fence)
	}
	keys := []string{
		s.requestKey(id), s.openKey(), s.runningKey(), s.denialsKey(),
		s.auditKey(), s.eventsKey(), inbox, s.grantsKey(), s.openByDeskKey(),
		s.leaderKey(),
	}
	res, err := s.runDecisive(ctx, transitionScript, keys, args...)
	if err != nil {
		return nil, 0, err
	}
	code, _ := res[0].(int64)
	if code < 0 {
		return nil, 0, deskbot.Errorf(deskbot.ENOTFOUND, "Request %s not found; it may have expired from the record", id)
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

// appendPatch adds the non-zero fields of p as field, value pairs.
func appendPatch(args []any, p deskbot.RequestPatch) ([]any, error) {
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
		b, err := json.Marshal(p.Result)
		if err != nil {
			return nil, fmt.Errorf("store: encode result: %w", err)
		}
		args = append(args, fResult, string(b))
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
