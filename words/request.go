// Package words holds the words people and models read: the answers a
// person gets when they decide a request, in the chat or on the desks page,
// and how a request's state is told to them. One text, one place: the chat
// and the page quote these, never their own copies.
package words

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/deskbot/deskbot"
)

// More says how many approvers r still needs: "one more", "2 more", and
// with a role none of them is from yet, "one more from risk" or "2 more,
// one from risk".
func More(r *deskbot.Request) string {
	n := r.Needs() - len(r.Approvals)
	role := !r.RoleApproved()
	switch {
	case n == 1 && role:
		return "one more from " + r.Role
	case n == 1:
		return "one more"
	case role:
		return itoa(int64(max(n, 0))) + " more, one from " + r.Role
	}
	return itoa(int64(max(n, 0))) + " more"
}

// Approvers is how many approvers r needs, in words: "2 approvers", "2
// approvers, one from risk", "1 approver from risk".
func Approvers(r *deskbot.Request) string {
	n := r.Needs()
	switch {
	case n == 1 && r.Role != "":
		return "1 approver from " + r.Role
	case n == 1:
		return "1 approver"
	case r.Role != "":
		return itoa(int64(n)) + " approvers, one from " + r.Role
	}
	return itoa(int64(n)) + " approvers"
}

// RoleNeededMessage answers an approver outside r's role whose approval
// would fill its count without one from the role.
func RoleNeededMessage(r *deskbot.Request) string {
	return "Not counted: this call needs one approver from " + r.Role + ", and the last approval must be theirs. Nothing was changed."
}

// WhyTrigger is the team's question to a desk about its held call r,
// asked before anyone decides. The words are part of the contract with the
// desk's model.
func WhyTrigger(r *deskbot.Request, at time.Time) deskbot.Trigger {
	return deskbot.Trigger{
		Desk: r.Desk, Kind: deskbot.TriggerWhy, RequestID: r.ID, CreatedAt: at,
		Text: fmt.Sprintf("The team asks why you want to run %s (request %s) before they decide. Explain in a few lines what you expect from it, its risk, and what you will do if it is denied. You cannot call tools in this turn.", r.Content.ToolName, r.ID),
	}
}

// AlreadyApprovedMessage answers a person who allows a request they
// already approved.
func AlreadyApprovedMessage(r *deskbot.Request) string {
	return "You already approved; it needs " + More(r) + "."
}

// CountedMessage answers an approval counted short of the count.
func CountedMessage(r *deskbot.Request) string {
	return fmt.Sprintf("Approved (%d of %d); it needs %s before it runs.", len(r.Approvals), r.Needs(), More(r))
}

// DecidedBy names who decided r: every approver of an allow that needed
// more than one ("Asha and Ravi"), else the one who decided.
func DecidedBy(r *deskbot.Request) string {
	if r.State == deskbot.StateDenied || r.State == deskbot.StateOpen || r.State == deskbot.StateLapsed || len(r.Approvals) < 2 {
		return r.DecidedBy
	}
	names := make([]string, len(r.Approvals))
	for i, a := range r.Approvals {
		names[i] = a.By
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// Describe says what already happened to a request, for a person who taps
// a button too late ("Already allowed by Asha at 14:02 IST").
func Describe(r *deskbot.Request) string {
	switch r.State {
	case deskbot.StateOpen:
		return "This request is still open; it lapses at " + Time(r.ExpiresAt) + " IST."
	case deskbot.StateLapsed:
		return "This request lapsed at " + Time(r.ExpiresAt) + " IST."
	case deskbot.StateDenied:
		return "Already denied by " + r.DecidedBy + " at " + Time(r.DecidedAt) + " IST."
	}
	verb := "allowed"
	if r.Decision == deskbot.AlwaysAllow {
		verb = "always allowed"
	}
	s := "Already " + verb + " by " + DecidedBy(r) + " at " + Time(r.DecidedAt) + " IST"
	switch r.State {
	case deskbot.StateRunning:
		s += "; it is running."
	case deskbot.StateRan:
		s += "; it ran."
	case deskbot.StateFailed:
		s += "; it failed."
	case deskbot.StateInterrupted:
		s += "; the service stopped while it ran, outcome unknown."
	default:
		s += "."
	}
	return s
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// The answers to a person's decision, the same in the chat (a tap's
// toast) and on the desks page.
const (
	// DeniedAnswer answers a denial.
	DeniedAnswer = "Denied; it will not run."
	// NotShownWholeAnswer refuses an allow of a call that could not be
	// shown whole: Allow is never offered on a call shown cut.
	NotShownWholeAnswer = "This call is too long to be shown whole, so it cannot be allowed. Deny it; the desk can make it shorter."
	// GrantTermsChanged refuses the confirmation of a grant whose terms
	// are not the ones the gate would grant now (they changed since they
	// were shown, or the confirmation is forged): nothing is decided.
	GrantTermsChanged = "This grant's terms are not the ones shown (they changed, or this confirmation is not valid), so nothing was granted or run. Tap Always allow again to see them."
)

// AllowedAnswer answers an allow that met its count: the call now runs.
func AllowedAnswer(d deskbot.Decision) string {
	if d == deskbot.AlwaysAllow {
		return "Always allowed; running…"
	}
	return "Allowed; running…"
}

// ShortID is how a request is named where people read it: the first 8
// characters of its id, enough to tell the requests open at once apart at
// a glance. The whole id stays in the audit and in the buttons' data.
func ShortID(id string) string {
	if len(id) <= 8 {
		return id
	}
	return id[:8]
}

// StateChange says, for the approver, how the book a held call's effect
// depends on moved since it was shown (two deskbot.ShownState values).
func StateChange(shown, now string) string {
	return "the desk's book moved from «" + shown + "» to «" + now + "»"
}

// ChangedSinceShown answers an allow of a call whose effect changed since
// its message showed it: nothing was decided, and the request is shown
// again below with what it would do now. It fits a tap's answer.
const ChangedSinceShown = "Not allowed: what this call would do changed since it was shown. It is shown again below with what it would do now; decide there."

// NotRunChanged is the result of an allowed call found changed right
// before it would have run: nothing ran.
func NotRunChanged(why string) string {
	return "Not run: what this call would do changed between the allow and the run (" + why + "). Nothing was done."
}

// ChangeNotApprover refuses a change of a held call by someone who is not
// an approver.
const ChangeNotApprover = "Only approvers can change a held call; nothing was changed."

// ChangedAgain refuses an allow or a change made from a view of a held
// call that was changed since: it showed another call.
const ChangedAgain = "Not done: this call was changed since it was shown to you, so it is another call now. Read it again as it stands and decide there; nothing was changed."

// ChangedAllowedAnswer answers a change that was its author's allow and
// met the count: the changed call runs.
const ChangedAllowedAnswer = "Changed and allowed; running the changed call…"

// ChangedCountedMessage answers a change that counts as its author's
// approval and needs more.
func ChangedCountedMessage(r *deskbot.Request) string {
	return fmt.Sprintf("Changed; your change counts as your approval (%d of %d). It needs %s before the changed call runs.", len(r.Approvals), r.Needs(), More(r))
}
