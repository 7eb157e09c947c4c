package store

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/redis/go-redis/v9"
)

// A request is one hash with one-letter field names. Redis keeps a small
// hash as a listpack (a few bytes a field) only while every value is at
// most hash-max-listpack-value bytes (64 by default); one longer value
// turns the whole hash into a table of separately allocated strings, more
// than twice the size (609 B against 272 B for a typical held order). So no
// value is longer than listpackValue when it need not be. Its creation data
// never changes: the desk in "w"; kind, tool and created (ms) in "c",
// joined by US (0x1f; none may hold US); the trigger id in "g" and the
// call id in "j"; and the model's arguments exactly as the model sent them
// (not even re-compacted, valid JSON or not), cut into pieces of
// listpackValue bytes: "a", then "a1", "a2", ... (bytes, not characters:
// put back together they are the arguments byte for byte). Requests
// written before keep trigger and call id in "c" (five parts) and the
// arguments whole in "a", and still read. The mutable fields
// are plain strings, times in ms since the epoch; the tool's result is the
// one JSON value. The approvals a request needs ("q", only when more than
// one) are fixed at creation; the approvals counted so far ("v") are
// records of approver id, decision, ms and name joined by US, each led by
// RS (0x1e), written only by allow.lua and change.lua, which read s, e,
// w, q and v (reason.lua reads l).
const (
	fCreation    = "c"
	fDesk        = "w"
	fTrigger     = "g"
	fCallID      = "j"
	fArgs        = "a" // then "a1", "a2", ...
	fState       = "s"
	fExpiresAt   = "e"
	fDecision    = "d"
	fDecidedBy   = "b"
	fDecidedByID = "i"
	fDecidedAt   = "t"
	fReason      = "r"
	fResult      = "x"
	fResponse    = "p"
	fDeliveredAt = "l"
	fDenyDueAt   = "n"
	fToken       = "k"
	fRequired    = "q"
	fApprovals   = "v"
	fFence       = "f" // the leader's fencing token (lease.go), checked by the scripts that fence
	fRole        = "o" // the role one approval must come from, fixed at creation
	fRoleMembers = "u" // its members' ids as "|111|222|", read by allow.lua and change.lua
	fOrder       = "z" // the held order as read and sized when held (deskbot.SizedOrder, JSON), fixed at creation
	// An approver's change of the call (deskbot.CallChange), written only
	// by change.lua: the changed arguments, what changed, by, by id, ms,
	// and how many changes were made (read by allow.lua and change.lua).
	fChangedArgs = "ca"
	fChangedWhat = "cw"
	fChangedBy   = "cb"
	fChangedByID = "ci"
	fChangedAt   = "ct"
	fChangeCount = "cn"
)

const (
	unitSep   = "\x1f"
	recordSep = "\x1e"
)

// separators makes the separators in free text U+FFFD. One for the process:
// a Replacer builds its tables on first use (kilobytes), and is safe for
// concurrent use.
var separators = strings.NewReplacer(unitSep, "\uFFFD", recordSep, "\uFFFD")

// approvalRecord is an approval as allow.lua and change.lua keep it. The name
// is the only free text: separators in it become U+FFFD, so no name can
// pass for another record or id.
func approvalRecord(a deskbot.Approval) string {
	name := separators.Replace(a.By)
	return strconv.FormatInt(a.ByID, 10) + unitSep + string(a.Decision) + unitSep +
		strconv.FormatInt(a.At.UnixMilli(), 10) + unitSep + name
}

// decodeApprovals reads the "v" field.
func decodeApprovals(v string) []deskbot.Approval {
	var out []deskbot.Approval
	for _, rec := range strings.Split(v, recordSep) {
		f := strings.SplitN(rec, unitSep, 4)
		if len(f) != 4 {
			continue
		}
		id, _ := strconv.ParseInt(f[0], 10, 64)
		out = append(out, deskbot.Approval{ByID: id, Decision: deskbot.Decision(f[1]), At: msField(f[2]), By: f[3]})
	}
	return out
}

// listpackValue is Redis's default hash-max-listpack-value: the longest
// value a hash may hold and stay a listpack.
const listpackValue = 64

// appendCreation adds r's creation data but its desk to f as HSET field,
// value pairs (hold.lua writes the desk from its ARGV 2).
func appendCreation(f []any, r *deskbot.Request) ([]any, error) {
	for _, v := range []string{r.Kind, r.Content.ToolName} {
		if strings.Contains(v, unitSep) {
			return nil, deskbot.Errorf(deskbot.EINVALID, "A request's kind and tool may not contain a unit separator")
		}
	}
	args := r.Content.Arguments
	f = append(f, fCreation, r.Kind+unitSep+r.Content.ToolName+unitSep+strconv.FormatInt(r.CreatedAt.UnixMilli(), 10),
		fTrigger, r.TriggerID, fCallID, r.Content.CallID)
	if r.Content.Order != nil {
		// Kept as read: a restart does not size it again, differently.
		b, err := json.Marshal(r.Content.Order)
		if err != nil {
			return nil, err
		}
		f = append(f, fOrder, b)
	}
	for i := 0; i == 0 || len(args) > 0; i++ {
		n := min(len(args), listpackValue)
		name := fArgs
		if i > 0 {
			name += strconv.Itoa(i)
		}
		f = append(f, name, []byte(args[:n]))
		args = args[n:]
	}
	return f, nil
}

// creationArgs is how many ARGV appendCreation adds for r, at most (an
// order adds two more).
func creationArgs(r *deskbot.Request) int {
	return 8 + 2*(len(r.Content.Arguments)/listpackValue)
}

// joinArgs puts the arguments back together from their pieces.
func joinArgs(h map[string]string) json.RawMessage {
	a := h[fArgs]
	if _, more := h[fArgs+"1"]; !more {
		if a == "" {
			return nil
		}
		return json.RawMessage(a)
	}
	b := []byte(a)
	for i := 1; ; i++ {
		p, ok := h[fArgs+strconv.Itoa(i)]
		if !ok {
			return b
		}
		b = append(b, p...)
	}
}

// CreateRequest saves r as open, with its audit entry and event, in one
// script that reads nothing back (createScript); the desk's count of open
// requests goes up in the same step. Like a transition, it returns once the
// primary's replicas have it: people are shown the request and its buttons. Times are cut to milliseconds (what
// Redis keeps) and r is updated to match, so Go and the Lua expiry check
// agree to the ms.
func (s *Store) CreateRequest(ctx context.Context, r *deskbot.Request, audit deskbot.AuditEntry, ev deskbot.Event) error {
	if r.ID == "" || r.Desk == "" || r.ExpiresAt.IsZero() {
		return deskbot.Errorf(deskbot.EINVALID, "A request needs an id, a desk and an expiry")
	}
	if r.Kind == "" {
		r.Kind = deskbot.KindPermission
	}
	r.State = deskbot.StateOpen
	r.CreatedAt = msTime(r.CreatedAt)
	r.ExpiresAt = msTime(r.ExpiresAt)
	keys, args, err := s.createCall(r, audit, ev)
	if err != nil {
		return err
	}
	_, err = s.runDecisive(ctx, createScript, keys, args...)
	return err
}

// createCall is KEYS and ARGV of hold.lua for r, as its header names them,
// in one slice: hold.lua writes the state, the desk (ARGV 2) and the
// expiry (ARGV 3) itself.
func (s *Store) createCall(r *deskbot.Request, audit deskbot.AuditEntry, ev deskbot.Event) ([]string, []any, error) {
	audit = auditFor(audit, r.ID, r.Desk)
	if ev.RequestID == "" {
		ev.RequestID = r.ID
	}
	evJSON, err := encodeEvent(ev)
	if err != nil {
		return nil, nil, err
	}
	exp := r.ExpiresAt.UnixMilli()
	args := make([]any, 0, 14+creationArgs(r)+6)
	args = append(args, r.ID, r.Desk, exp, r.ExpiresAt.Add(s.opts.Retention).UnixMilli(), evJSON, s.opts.EventsMaxLen)
	args = s.appendAuditArgv(args, audit)
	if args, err = appendCreation(args, r); err != nil {
		return nil, nil, err
	}
	if r.Required > 1 {
		args = append(args, fRequired, r.Required)
	}
	if r.Role != "" {
		args = append(args, fRole, r.Role, fRoleMembers, idsArg(r.RoleMembers))
	}
	keys := []string{s.requestKey(r.ID), s.openKey(), s.openByDeskKey(), s.auditKey(), s.auditHeadKey(), s.eventsKey()}
	return keys, args, nil
}

// createScript saves a new request (hold.lua names its KEYS and ARGV).
var createScript = redis.NewScript(auditSrc + holdSrc)

//go:embed hold.lua
var holdSrc string

// OpenRequestCount is the number of the desk's open requests, kept by
// CreateRequest and the transitions' scripts: constant time whatever is open.
func (s *Store) OpenRequestCount(ctx context.Context, desk string) (int64, error) {
	n, err := s.rdb.HGet(ctx, s.openByDeskKey(), desk).Int64()
	if err == redis.Nil {
		return 0, nil
	}
	return max(n, 0), s.wrap(err)
}

// Request returns the request as it stands; ENOTFOUND once it has vanished.
func (s *Store) Request(ctx context.Context, id string) (*deskbot.Request, error) {
	h, err := s.rdb.HGetAll(ctx, s.requestKey(id)).Result()
	if err != nil {
		return nil, s.wrap(err)
	}
	return decodeRequest(id, h)
}

// DueRequests returns the open requests due at now, in order of expiry. It
// reads only what is due.
func (s *Store) DueRequests(ctx context.Context, now time.Time, limit int) ([]string, error) {
	return s.dueIn(ctx, s.openKey(), now, limit)
}

// DenialsDue returns denied requests whose response is due to the desk.
func (s *Store) DenialsDue(ctx context.Context, now time.Time, limit int) ([]string, error) {
	return s.dueIn(ctx, s.denialsKey(), now, limit)
}

// dueScript reads the due part of an index and drops ids whose request has
// vanished (its retention ran out while it was still indexed, e.g. after a
// long outage), so that a sweep never spins on ids it cannot act on. It
// touches only what is due. The request keys it checks are built from the
// prefix rather than declared, which standalone Redis allows.
var dueScript = redis.NewScript(`
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
local live = {}
for _, id in ipairs(ids) do
  if redis.call('EXISTS', ARGV[3] .. id) == 1 then
    live[#live + 1] = id
  else
    redis.call('ZREM', KEYS[1], id)
  end
end
return live`)

func (s *Store) dueIn(ctx context.Context, key string, now time.Time, limit int) ([]string, error) {
	if limit <= 0 {
		limit = -1 // all of them
	}
	ids, err := dueScript.Run(ctx, s.rdb, []string{key}, now.UnixMilli(), limit, s.requestKey("")).StringSlice()
	if err == redis.Nil {
		return nil, nil
	}
	return ids, s.wrap(err)
}

// OpenRequests returns every open request, soonest expiry first.
func (s *Store) OpenRequests(ctx context.Context) ([]*deskbot.Request, error) {
	ids, err := s.rdb.ZRange(ctx, s.openKey(), 0, -1).Result()
	if err != nil {
		return nil, s.wrap(err)
	}
	return s.requests(ctx, ids)
}

// RunningRequests returns requests allowed and not yet finished, oldest first.
func (s *Store) RunningRequests(ctx context.Context) ([]*deskbot.Request, error) {
	ids, err := s.rdb.SMembers(ctx, s.runningKey()).Result()
	if err != nil {
		return nil, s.wrap(err)
	}
	rs, err := s.requests(ctx, ids)
	slices.SortFunc(rs, func(a, b *deskbot.Request) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return rs, err
}

// requests reads ids in one pipelined round trip, in order, leaving out any
// that vanished.
func (s *Store) requests(ctx context.Context, ids []string) ([]*deskbot.Request, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.HGetAll(ctx, s.requestKey(id))
		}
		return nil
	})
	if err != nil {
		return nil, s.wrap(err)
	}
	out := make([]*deskbot.Request, 0, len(ids))
	for i, c := range cmds {
		r, err := decodeRequest(ids[i], c.Val())
		if deskbot.ErrorCode(err) == deskbot.ENOTFOUND {
			continue
		} else if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func decodeRequest(id string, h map[string]string) (*deskbot.Request, error) {
	if len(h) > 0 && h[fCreation] == "" && h[oldData] != "" {
		return decodeOldRequest(id, h)
	}
	if len(h) == 0 || h[fCreation] == "" {
		return nil, deskbot.Errorf(deskbot.ENOTFOUND, "Request %s not found; it may have expired from the record", id)
	}
	c := strings.SplitN(h[fCreation], unitSep, 5)
	switch len(c) {
	case 3: // kind, tool, created; trigger and call id in their own fields
		c = []string{c[0], c[1], h[fTrigger], c[2], h[fCallID]}
	case 5: // written before: kind, tool, trigger, created, call id
	default:
		return nil, fmt.Errorf("store: decode request %s: creation record has %d parts, not 3", id, len(c))
	}
	r := &deskbot.Request{
		ID: id, Desk: h[fDesk], Kind: c[0], TriggerID: c[2],
		CreatedAt: msField(c[3]), ExpiresAt: msField(h[fExpiresAt]),
		Content: deskbot.PermissionContent{ToolName: c[1], CallID: c[4], Arguments: joinArgs(h), Order: decodeOrder(h[fOrder])},
		State:   deskbot.RequestState(h[fState]),
		// Decision etc. are plain strings; absent fields stay zero.
		Decision:  deskbot.Decision(h[fDecision]),
		DecidedBy: h[fDecidedBy],
		Reason:    h[fReason],
		Response:  h[fResponse],

		DecisionToken: h[fToken],
	}
	r.Fence, _ = strconv.ParseInt(h[fFence], 10, 64)
	r.DecidedByID, _ = strconv.ParseInt(h[fDecidedByID], 10, 64)
	r.DecidedAt = msField(h[fDecidedAt])
	r.DeliveredAt = msField(h[fDeliveredAt])
	r.DenyDueAt = msField(h[fDenyDueAt])
	r.Required, _ = strconv.Atoi(h[fRequired])
	r.Required = max(r.Required, 1)
	r.Approvals = decodeApprovals(h[fApprovals])
	if r.Role = h[fRole]; r.Role != "" {
		for _, s := range strings.Split(strings.Trim(h[fRoleMembers], "|"), "|") {
			if id, err := strconv.ParseInt(s, 10, 64); err == nil {
				r.RoleMembers = append(r.RoleMembers, id)
			}
		}
	}
	if ca := h[fChangedArgs]; ca != "" {
		r.Changed = &deskbot.CallChange{Arguments: json.RawMessage(ca), What: h[fChangedWhat], By: h[fChangedBy], At: msField(h[fChangedAt])}
		r.Changed.ByID, _ = strconv.ParseInt(h[fChangedByID], 10, 64)
	}
	r.Changes, _ = strconv.Atoi(h[fChangeCount])
	if res := h[fResult]; res != "" {
		r.Result = new(deskbot.ToolResult)
		if err := json.Unmarshal([]byte(res), r.Result); err != nil {
			return nil, fmt.Errorf("store: decode result of request %s: %w", id, err)
		}
	}
	return r, nil
}

// msTime is t as Redis keeps it: UTC, whole milliseconds.
func msTime(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return time.UnixMilli(t.UnixMilli()).UTC()
}

func msField(v string) time.Time {
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || v == "" {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// decodeOrder reads the "z" field: nil when there is none, or when it
// cannot be read (the order then counts as not sized: the larger count,
// no capped grant).
func decodeOrder(v string) *deskbot.SizedOrder {
	if v == "" {
		return nil
	}
	var o deskbot.SizedOrder
	if json.Unmarshal([]byte(v), &o) != nil {
		return nil
	}
	return &o
}
