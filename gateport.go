package deskbot

import "context"

// Gate is the permission gate as the chat and the desks page use it: the
// one port both decide through (the gate package implements it). Neither
// needs more of the gate than this, and neither imports it. Both only
// render what it answers: the gate takes the decision, runs an allowed
// call on the lifetime it was started with, and words the answer.
type Gate interface {
	// Request returns a request as it stands.
	Request(ctx context.Context, id string) (*Request, error)
	// Decide takes by's decision on request id, from a view that showed
	// the call as seen says: an allow of a call the view did not show
	// whole, or of another call than the one that would run, or an always
	// allow whose grant's terms are not the ones the view asked to
	// confirm, is refused with ECONFLICT and changes nothing. A won allow
	// runs the call on the gate's lifetime (never ctx, which ends as soon
	// as the person is answered); the answer says what came of it.
	Decide(ctx context.Context, id string, seen Seen, d Decision, reason string, by Person) (*Answer, error)
	// Change is by's change of the call ("quantity 25", "price 24500"),
	// from a view that showed version changes of it: refused unless it
	// lowers the call's risk; it counts as by's approval, and a change
	// that meets the count runs the changed call as Decide's allow does.
	Change(ctx context.Context, id, changes string, version int, by Person) (*Answer, error)
	// AddReason completes a denial waiting for its reason ("" skips it).
	AddReason(ctx context.Context, id, reason string, by Person) (*Request, error)
	// Shown records what the chat showed of a request's effect on the
	// desk's book (ShownState), before the message goes out: an allow runs
	// the call only while the book still gives the same.
	Shown(ctx context.Context, id, state string) error
	// GrantTerms is the grant an always allow of request id would give
	// now (its desk, tool, cap and end), for the approver to confirm, and
	// the key of those terms (GrantTermsKey) that the confirmation carries
	// back in Seen.Terms; ok false: an always allow of it grants nothing
	// and runs it once.
	GrantTerms(ctx context.Context, id string) (g Grant, key string, ok bool, err error)
	// Grants lists the standing grants; Revoke removes one.
	Grants(ctx context.Context) ([]Grant, error)
	Revoke(ctx context.Context, desk, tool string, by Person) error
}

// Seen is what a person's view showed of a held call when they decided
// on it.
type Seen struct {
	// Changes is how many times the call had been changed
	// (Request.Changes); -1: a view that cannot say, which decides the
	// call as it stands.
	Changes int
	// Whole: the view showed the call whole. An allow from a view that
	// did not is refused: nobody says yes to what they did not see.
	Whole bool
	// Terms is the key of the grant's terms the view asked the person to
	// confirm (Gate.GrantTerms; "" when it asked none): an always allow
	// that gives a capped grant runs only when they are the terms the
	// gate would grant now.
	Terms string
}

// Answer is what a person's decision (or change) comes to, as the chat
// and the page both tell it.
type Answer struct {
	// Text is what the person is told, in the words of package words.
	Text string
	// Request is the request as it stands after the decision: running
	// for a won allow (or ran, when the gate runs calls in the caller's
	// goroutine), open for a counted one.
	Request *Request
	// Decision is the decision taken, which may be narrower than the
	// person's: an always allow that grants nothing is an allow once.
	Decision Decision
	// Counted: the allow was counted and more approvers are needed; the
	// request is still open and nothing runs.
	Counted bool
	// AwaitsReason: a denial whose desk is not told yet (it waits for a
	// reason or for the caller to skip it).
	AwaitsReason bool
}

// PermissionResponse is a person's decision on a request, as it travels
// inside the gate from the decision to the run.
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

// Verdict is the gate's answer to a desk's call: it runs now, it is held
// for a person's decision, or it is refused.
type Verdict struct {
	// Held is the request the call became; Result tells the model to end
	// its turn.
	Held *Request
	// Refused: the call passes a hard limit (Result.Limit), or it cannot
	// be shown to an approver as it would run. Result tells the model why;
	// nothing ran and nothing was held.
	Refused bool
	Result  ToolResult
	// Grant is the standing grant the call runs under, when one lets it
	// run (nil: its tool is not guarded).
	Grant *Grant
	// Release frees what the desk's hard limits reserved for the call,
	// once it is held or has run, or at once when it does not run. Never
	// nil.
	Release func()
}

// Runs reports whether the call is to run now.
func (v Verdict) Runs() bool { return v.Held == nil && !v.Refused }
