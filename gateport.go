package deskbot

import "context"

// Gate is the permission gate as the chat and the desks page use it: the
// one port both decide through (the gate package implements it). Neither
// needs more of the gate than this, and neither imports it.
type Gate interface {
	// Request returns a request as it stands.
	Request(ctx context.Context, id string) (*Request, error)
	// Decide decides a request; a won allow leaves it running, and the
	// caller must then call Run exactly once with the response.
	Decide(ctx context.Context, id string, d Decision, reason string, by Person) (*PermissionResponse, error)
	// DecideShown is Decide from a view that showed version changes of
	// the call (Request.Changes; -1: unknown): an allow from a view of
	// another call than the one that would run is refused.
	DecideShown(ctx context.Context, id string, version int, d Decision, reason string, by Person) (*PermissionResponse, error)
	// Change is by's change of the call ("quantity 25", "price 24500"),
	// from a view that showed version changes of it: refused unless it
	// lowers the call's risk; it counts as by's approval, and a change
	// that meets the count leaves the request running, to be Run.
	Change(ctx context.Context, id, changes string, version int, by Person) (*PermissionResponse, error)
	// Run runs the call of a request Decide left running.
	Run(ctx context.Context, resp *PermissionResponse) (*PermissionResponse, error)
	// AddReason completes a denial waiting for its reason ("" skips it).
	AddReason(ctx context.Context, id, reason string, by Person) (*Request, error)
	// Shown records what the chat showed of a request's effect on the
	// desk's book (ShownState), before the message goes out: an allow runs
	// the call only while the book still gives the same.
	Shown(ctx context.Context, id, state string) error
	// GrantTerms is the grant an always allow of request id would give
	// now (its desk, tool, cap and end), for the approver to confirm; ok
	// false: an always allow of it grants nothing and runs it once.
	GrantTerms(ctx context.Context, id string) (g Grant, ok bool, err error)
	// Grants lists the standing grants; Revoke removes one.
	Grants(ctx context.Context) ([]Grant, error)
	Revoke(ctx context.Context, desk, tool string, by Person) error
}

// PermissionResponse is a person's decision on a request, as it travels
// from Gate.Decide to Gate.Run.
type PermissionResponse struct {
	Request  *Request // as it stands after the decision (and the run)
	Decision Decision
	Reason   string
	// Counted: the allow was counted and more approvers are needed; the
	// request is still open and nothing may run.
	Counted bool
}

// Allows reports whether the call may run.
func (p PermissionResponse) Allows() bool { return p.Decision.Allows() }
