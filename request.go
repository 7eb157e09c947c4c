package deskbot

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"time"
)

// Decision is a person's answer to a permission request.
type Decision string

const (
	AllowOnce   Decision = "allow_once"
	AlwaysAllow Decision = "always_allow"
	Deny        Decision = "deny"
)

// ParseDecision validates a decision given as text. The message is part of
// the contract: models and people read it.
func ParseDecision(s string) (Decision, error) {
	switch d := Decision(s); d {
	case AllowOnce, AlwaysAllow, Deny:
		return d, nil
	}
	return "", Errorf(EINVALID, "Permission is allow_once, always_allow or deny, not '%s'", s)
}

// Allows reports whether the decision lets the call run.
func (d Decision) Allows() bool { return d == AllowOnce || d == AlwaysAllow }

// RequestState is where a request is in its life:
//
//	open ──allow──▶ running ──▶ ran | failed
//	  │                 └─(crash)─▶ interrupted   (never run again)
//	  ├──deny──▶ denied
//	  └──expiry──▶ lapsed
type RequestState string

const (
	StateOpen        RequestState = "open"
	StateRunning     RequestState = "running"
	StateRan         RequestState = "ran"
	StateFailed      RequestState = "failed"
	StateInterrupted RequestState = "interrupted"
	StateDenied      RequestState = "denied"
	StateLapsed      RequestState = "lapsed"
)

// KindPermission is the only request kind so far.
const KindPermission = "permission"

// PermissionContent is what a permission request asks: exactly this call.
type PermissionContent struct {
	ToolName  string          `json:"tool_name"`
	Arguments json.RawMessage `json:"arguments"`
	CallID    string          `json:"call_id"`
	// Order is the held order as it was read and sized when it was held
	// (ToolCall.Order): what the approver is shown and four eyes counted.
	Order *SizedOrder `json:"order,omitempty"`
}

// Call returns the held call as a ToolCall.
func (c PermissionContent) Call() ToolCall {
	return ToolCall{ID: c.CallID, Name: c.ToolName, Arguments: c.Arguments, Order: c.Order}
}

// Request is a user request: today always a permission request for one held
// tool call. The content never changes after it is created.
type Request struct {
	ID        string            `json:"request_id"` // a UUID
	Desk      string            `json:"desk"`
	Kind      string            `json:"kind"`
	Content   PermissionContent `json:"content"`
	TriggerID string            `json:"trigger_id,omitempty"`
	CreatedAt time.Time         `json:"created_at"`
	ExpiresAt time.Time         `json:"expires_at"`

	State       RequestState `json:"state"`
	Decision    Decision     `json:"decision,omitempty"`
	DecidedBy   string       `json:"decided_by,omitempty"` // a person's display name
	DecidedByID int64        `json:"decided_by_id,omitempty"`
	DecidedAt   time.Time    `json:"decided_at,omitzero"`
	Reason      string       `json:"reason,omitempty"`
	Result      *ToolResult  `json:"result,omitempty"`   // what the allowed call produced
	Response    string       `json:"response,omitempty"` // the message handed to the desk
	DeliveredAt time.Time    `json:"delivered_at,omitzero"`
	DenyDueAt   time.Time    `json:"deny_due_at,omitzero"` // when a denial is handed over without a reason
	// DecisionToken is unique to the call that decided: a caller whose
	// reply from Redis was lost, and whose retry finds the request already
	// decided, can tell its own decision from someone else's.
	DecisionToken string `json:"decision_token,omitempty"`
	// Required is how many distinct approvers the call needs, fixed when
	// it was held (a later policy or restart cannot lower it); 0 reads as 1.
	Required int `json:"required,omitempty"`
	// Role, when set, is the role (RoleMembers its approvers' ids) from
	// which at least one of the counted approvals must come, fixed when the
	// call is held, as Required is.
	Role        string  `json:"role,omitempty"`
	RoleMembers []int64 `json:"role_members,omitempty"`
	// Approvals are the allows counted so far, in order, one per person;
	// the one that met Required is the last.
	Approvals []Approval `json:"approvals,omitempty"`
	// Fence is the fencing token of the leader that made the request's
	// last leader-only change: while it runs, the leader that runs it (see
	// Transition.Fence). 0 when no leader has touched it.
	Fence int64 `json:"fence,omitempty"`
	// Changed, when set, is the approvers' change of the desk's call
	// ("Change…"): the call that runs instead of Content's, which stays
	// as the desk asked it. Changes counts the changes made (each one
	// restarts the approvals): a message that showed another count showed
	// another call, and an allow from it is refused.
	Changed *CallChange `json:"changed,omitempty"`
	Changes int         `json:"changes,omitempty"`
}

// CallChange is an approver's change of a held call: the arguments that
// run instead of the desk's, what changed in words ("quantity 50 → 25"),
// and who changed it when.
type CallChange struct {
	Arguments json.RawMessage `json:"arguments"`
	What      string          `json:"what"`
	// Order is the changed order as it was sized when changed; nil when
	// read back from the store, which keeps the arguments only.
	Order *SizedOrder `json:"order,omitempty"`
	By    string      `json:"by"`
	ByID  int64       `json:"by_id"`
	At    time.Time   `json:"at"`
}

// Call is the call that runs when r is allowed: the desk's, or the
// approvers' change of it.
func (r *Request) Call() ToolCall {
	c := r.Content.Call()
	if r.Changed != nil {
		c.Arguments, c.Order = r.Changed.Arguments, r.Changed.Order
	}
	return c
}

// Needs is how many distinct approvers r needs: never below 1.
func (r *Request) Needs() int { return max(r.Required, 1) }

// RoleApproved reports whether one of r's counted approvals comes from its
// role (true when it has none).
func (r *Request) RoleApproved() bool {
	if r.Role == "" {
		return true
	}
	for _, a := range r.Approvals {
		if slices.Contains(r.RoleMembers, a.ByID) {
			return true
		}
	}
	return false
}

// Approval is one person's allow, counted toward a request's Required.
type Approval struct {
	By       string    `json:"by"` // display name
	ByID     int64     `json:"by_id"`
	Decision Decision  `json:"decision"` // allow_once or always_allow
	At       time.Time `json:"at"`
}

// Person is someone in the chat who acts on a request.
type Person struct {
	ID   int64
	Name string
}

// Audited names p in the audit trail: the name people know and the id that
// cannot be faked by changing it. An id of 0 is no one's (a test, a caller
// that knows only a name), so it is left out rather than written as "(0)".
func (p Person) Audited() string {
	if p.ID == 0 {
		return p.Name
	}
	return p.Name + " (" + strconv.FormatInt(p.ID, 10) + ")"
}

// PersonOf names a Telegram user the way people in the chat know them
// ("Already allowed by Asha"): first name, else username, else the id. The
// id is what access is decided on; a name can be changed by its owner at will.
func PersonOf(id int64, firstName, username string) Person {
	name := cmp.Or(firstName, username, strconv.FormatInt(id, 10))
	return Person{ID: id, Name: name}
}

// TransitionKind names one kind of change of a request's state. The
// store applies each kind with its own script, which checks only what
// that kind depends on and writes only what it records.
type TransitionKind int

const (
	// TransitionAllow moves an open request, before its expiry, to
	// running: an approver's allow (counted with Approve, always bound to
	// UnlessHalted).
	TransitionAllow TransitionKind = iota + 1
	// TransitionChange is an approver's change of an open request's call,
	// before its expiry: its author's approval (Approve) of the changed
	// call (Change), which runs it once the count is met.
	TransitionChange
	// TransitionDeny moves an open request, before its expiry, to denied.
	TransitionDeny
	// TransitionResult records a running request's result: ran, or failed
	// when Set.Result.IsError.
	TransitionResult
	// TransitionReason completes a denial the desk has not been told of
	// yet: its reason, and the response that tells the desk.
	TransitionReason
	// TransitionLapse moves an open request whose expiry has passed to
	// lapsed (the sweep).
	TransitionLapse
	// TransitionInterrupt ends a running request whose leader is gone
	// (Recover): interrupted, not run again.
	TransitionInterrupt
)

var transitionKinds = [...]string{"", "allow", "change", "deny", "result", "reason", "lapse", "interrupt"}

func (k TransitionKind) String() string {
	if k > 0 && int(k) < len(transitionKinds) {
		return transitionKinds[k]
	}
	return "transition(" + strconv.Itoa(int(k)) + ")"
}

// RequestPatch is the mutable part of a request that a transition sets.
// Zero fields are left as they are.
type RequestPatch struct {
	Decision    Decision
	DecidedBy   Person
	DecidedAt   time.Time
	Reason      string
	Result      *ToolResult
	Response    string
	DeliveredAt time.Time
	DenyDueAt   time.Time
	Token       string // DecisionToken
}

// Transition is one atomic change of a request's state. The store applies
// it, with everything it carries (audit entry, event, trigger for the desk,
// grant), in one step or not at all, so that exactly one of any number of
// concurrent callers wins and nothing is half-recorded after a crash.
//
// Kind says which change it is; the store refuses (EINVALID) a transition
// that carries what its kind does not apply (a grant on a denial, a fence
// on a result), so nothing a caller sets is silently dropped.
type Transition struct {
	Kind    TransitionKind
	Now     time.Time // an allow, change, deny or lapse is checked against the expiry at Now
	Set     RequestPatch
	Audit   *AuditEntry
	Event   *Event   // published when the transition applies
	Trigger *Trigger // handed to the desk's inbox when it applies
	Grant   *Grant   // recorded when it applies (TransitionAllow)
	// Approve makes an allow (or a change) count toward the
	// request's Required, one per person (by ID): short of the count only
	// the approval is recorded (with an "approve" audit entry and Approved,
	// outcome Counted); the approval that meets it applies the transition.
	// A grant is recorded only if every counted approval is always_allow
	// (else the decision reads allow_once).
	Approve  *Approval
	Approved *Event // published when an approval is counted short of the count
	// Approvers, when not empty, are the people whose approvals count now
	// (TELEGRAM_APPROVERS): an approval recorded earlier by someone no
	// longer among them (removed since, with the request still open) is
	// dropped from the request's approvals before Approve is counted, so
	// that it never makes up a count that today's approvers have not met.
	// The audit trail keeps it. Empty: every recorded approval counts.
	Approvers []int64
	// Fence, when not 0, makes the transition a leader's: it applies only
	// while Fence is the fencing token of the current leader lease, and is
	// kept as the request's Fence; otherwise the outcome is Stale. An
	// allow, change, deny or interrupt may carry it.
	Fence int64
	// Held, when set, is the request as it stood before the transition, as
	// the caller holds it: a request's content never changes, and the
	// mutable fields the caller cannot know (the approvals counted) come
	// back from the store. An applied transition then returns Held with the
	// transition applied, without reading the whole request back from
	// Redis; any other outcome returns the request as it stands there.
	// Held itself is not changed. Neither a reason nor an interrupt carries
	// it: their callers do not hold the request.
	Held *Request
	// UnlessHalted, when set, is the request's desk: the transition applies
	// only while no risk rule holds that desk halted, else the outcome is
	// Halted. Every allow and change must carry it, so nothing of a
	// halted desk runs, whichever request an approver taps.
	UnlessHalted string
	// Version, when not nil, is the count of changes (Request.Changes)
	// the caller's view showed: the transition applies only while the
	// request still has that count, else the outcome is Rechanged. A
	// change must carry it.
	Version *int
	// Change is what a TransitionChange changes (with Approve, the
	// changer's approval): recorded with the approvals restarted at the
	// changer's and the count set to Required.
	Change *ChangeRecord
}

// ChangeRecord is what a change transition writes beside the desk's call.
type ChangeRecord struct {
	CallChange
	Required int // approvers the changed call needs
}

// Outcome says what a transition did.
type Outcome int

const (
	Applied         Outcome = iota
	WrongState              // another caller got there first; Request is as it now stands
	Expired                 // an allow, change or deny, and the request's expiry had passed
	NotDue                  // a lapse, and the request's expiry has not passed
	Counted                 // Approve: the approval was recorded; more are needed
	AlreadyApproved         // Approve: this person's approval was already counted; nothing changed
	Stale                   // Fence is not the current leader's token: another process leads
	Halted                  // UnlessHalted: a risk rule holds the desk halted; nothing changed
	RoleNeeded              // Approve: this approval would fill the count without the request's role; nothing changed
	Rechanged               // Version: the call was changed since the caller's view showed it; nothing changed
)

// OpenRequests lists the requests still waiting for a decision.
type OpenRequests interface {
	// OpenRequests returns every open request, soonest expiry first.
	OpenRequests(ctx context.Context) ([]*Request, error)
}

// RequestStore keeps requests. Keys vanish by themselves some time after the
// request closes (the store's retention window).
type RequestStore interface {
	// CreateRequest saves an open request with its audit entry and event.
	CreateRequest(ctx context.Context, r *Request, audit AuditEntry, ev Event) error
	// Request returns ENOTFOUND for an unknown or vanished request.
	Request(ctx context.Context, id string) (*Request, error)
	// Transition applies t atomically and returns the request as it stands
	// afterwards (applied or not).
	Transition(ctx context.Context, id string, t Transition) (*Request, Outcome, error)
	// DueRequests returns up to limit ids of open requests whose expiry is at
	// or before now, in order of expiry. Its cost grows with what is due.
	DueRequests(ctx context.Context, now time.Time, limit int) ([]string, error)
	// DenialsDue returns ids of denied requests whose response is due.
	DenialsDue(ctx context.Context, now time.Time, limit int) ([]string, error)
	OpenRequests
	// RunningRequests returns requests that were allowed and not yet finished.
	RunningRequests(ctx context.Context) ([]*Request, error)
}

// Grant is a standing permission for one tool on one desk.
type Grant struct {
	Desk      string    `json:"desk"`
	Tool      string    `json:"tool"`
	GrantedBy string    `json:"granted_by"`
	GrantedAt time.Time `json:"granted_at"`
	ExpiresAt time.Time `json:"expires_at,omitzero"` // zero: until revoked
	RequestID string    `json:"request_id,omitempty"`
	// Limit is the largest notional (rupees) of an order the grant covers;
	// 0: no limit. A grant never covers an order above its policy's
	// two-approver threshold.
	Limit float64 `json:"limit,omitempty"`
	// Approvers is how many people gave the grant (0 reads as 1): it covers
	// only calls that need no more approvers than that.
	Approvers int `json:"approvers,omitempty"`
}

// Covers reports whether the grant lets call run without asking, given
// that it needs required approvers. A grant with a limit covers only an
// order read and sized (call.Order) whose exposure is within it: an order
// not sized is never covered.
func (g Grant) Covers(call ToolCall, required int) bool {
	if max(g.Approvers, 1) < required {
		return false
	}
	if g.Limit <= 0 {
		return true
	}
	return call.Order != nil && call.Order.Exposure <= g.Limit
}

// Active reports whether the grant still holds at now.
func (g Grant) Active(now time.Time) bool { return g.ExpiresAt.IsZero() || now.Before(g.ExpiresAt) }

// GrantStore keeps standing grants.
type GrantStore interface {
	// Grant returns the grant for (desk, tool), ENOTFOUND if none (lapsed
	// grants count as none).
	Grant(ctx context.Context, desk, tool string, now time.Time) (*Grant, error)
	Grants(ctx context.Context, now time.Time) ([]Grant, error)
	PutGrant(ctx context.Context, g Grant, audit AuditEntry) error
	// RevokeGrant returns ENOTFOUND if there was no such grant.
	RevokeGrant(ctx context.Context, desk, tool string, audit AuditEntry) error
}

// AuditEntry is one line of the append-only audit trail.
type AuditEntry struct {
	Action    string    `json:"action"` // hold, approve, allow_once, always_allow, deny, refuse, ran, failed, not_run, lapse, interrupted, reason, grant, revoke, flatten, pause, resume
	Desk      string    `json:"desk,omitempty"`
	Tool      string    `json:"tool,omitempty"`
	RequestID string    `json:"request_id,omitempty"`
	By        string    `json:"by"` // a person's name and id, or "system"
	At        time.Time `json:"at"`
	Detail    string    `json:"detail,omitempty"`
}

// AuditLedger is the audit trail as evidence (package store keeps it): a
// chain, each entry carrying the hash of the one before it, that shows an
// entry changed, removed or slipped in by hand, and the trail read a day
// at a time for its export.
type AuditLedger interface {
	// VerifyAudit checks the chain of every entry kept, oldest first; the
	// first kept entry's previous hash is taken as given (older entries
	// were trimmed, AUDIT_KEEP).
	VerifyAudit(ctx context.Context) (AuditCheck, error)
	// AuditDay is the entries of an India day ("2006-01-02"), oldest
	// first.
	AuditDay(ctx context.Context, day string) ([]AuditEntry, error)
}

// AuditCheck is what AuditLedger.VerifyAudit found.
type AuditCheck struct {
	Checked int // chained entries whose hash was checked
	// Unchained is how many entries came before the chain's first entry
	// (written before the chain was), unchecked.
	Unchained int
	// First and Last are the first and last chained entries' ids.
	First, Last string
	// Broken is the first entry that does not match; nil when the chain
	// holds.
	Broken *AuditBreak
}

// AuditBreak is the first entry of the trail that does not match its
// chain, and why.
type AuditBreak struct {
	ID    string // its stream id
	Entry AuditEntry
	Why   string
}

// Auditor appends to and reads the audit trail.
type Auditor interface {
	Audit(ctx context.Context, e AuditEntry) error
	AuditTrail(ctx context.Context, limit int) ([]AuditEntry, error) // oldest first, the last limit entries
}
