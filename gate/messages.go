package gate

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/words"
)

// The texts below are what a desk's model reads. They are part of the
// product's contract, quoted word for word in README and in the tests:
// change a word in all three at once, or not at all.

// HoldMessage tells the model its call was held. Its words are defined
// once, in the root package (words.HoldMessage), because the store keeps
// only the words and rebuilds the text from them.
func HoldMessage(r *deskbot.Request) string {
	return words.HoldMessage(r.Content.ToolName, r.ID, r.ExpiresAt)
}

// LapseMessage tells the model nobody answered in time.
func LapseMessage(r *deskbot.Request) string {
	return fmt.Sprintf("Request %s for %s lapsed at %s India time without an answer, so it was not run. Ask the user again only if it still matters.",
		r.ID, r.Content.ToolName, words.Time(r.ExpiresAt))
}

// InterruptedMessage tells the model a call it was allowed may or may not
// have taken effect: it must check before it acts, and it must not be run
// again.
func InterruptedMessage(r *deskbot.Request) string {
	return fmt.Sprintf("The user allowed %s (request %s), but the service stopped while it was running, so its outcome is unknown. It was not run again. Check its effect (for example with get_positions) before you act on it.",
		r.Content.ToolName, r.ID)
}

// PermissionResponse is a person's answer to a request, and what follows
// from it for the desk.
type PermissionResponse struct {
	Request  *deskbot.Request // as it stands after the decision (and the run)
	Decision deskbot.Decision
	Reason   string
	// Counted: the allow was counted and more approvers are needed; the
	// request is still open and nothing may run.
	Counted bool
}

// Check validates the decision.
func (p PermissionResponse) Check() error {
	_, err := deskbot.ParseDecision(string(p.Decision))
	return err
}

// Allows reports whether the call may run.
func (p PermissionResponse) Allows() bool { return p.Decision.Allows() }

// Stored is what is recorded with the request once the desk is told.
func (p PermissionResponse) Stored(result *deskbot.ToolResult) deskbot.RequestPatch {
	return deskbot.RequestPatch{Result: result, Response: p.Message(result)}
}

// Message is what the desk is told. result is nil for a denial. An allowed
// call without a result did not run, and the desk is told so in the words of
// a denial (without the allow's note, which is no reason for refusing): the
// model must never read that a call ran when nothing ran.
func (p PermissionResponse) Message(result *deskbot.ToolResult) string {
	tool, id := p.Request.Content.ToolName, p.Request.ID
	if !p.Allows() || result == nil {
		var b strings.Builder
		fmt.Fprintf(&b, "The user denied %s (request %s), so it was not run.", tool, id)
		if p.Reason != "" && !p.Allows() {
			fmt.Fprintf(&b, " Their reason: %s", p.Reason)
		}
		b.WriteString(" Do not try to reach the same result another way; ask them if it still matters.")
		return b.String()
	}
	outcome, text := "was run", result.Text
	if result.IsError {
		outcome = "failed"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "The user allowed %s (request %s), and the harness ran it with the arguments you gave. It %s:\n%s", tool, id, outcome, text)
	if p.Decision == deskbot.AlwaysAllow {
		fmt.Fprintf(&b, "\nThey also allowed you to use %s without asking from now on.", tool)
	}
	if p.Reason != "" {
		fmt.Fprintf(&b, "\nThey added: %s", p.Reason)
	}
	return b.String()
}

// The texts below are for people (tap answers), not for a desk's model.

// More says how many approvers r still needs: "one more", "2 more".
func More(r *deskbot.Request) string {
	n := r.Needs() - len(r.Approvals)
	if n == 1 {
		return "one more"
	}
	return itoa(int64(max(n, 0))) + " more"
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
		return "This request is still open; it lapses at " + words.Time(r.ExpiresAt) + " IST."
	case deskbot.StateLapsed:
		return "This request lapsed at " + words.Time(r.ExpiresAt) + " IST."
	case deskbot.StateDenied:
		return "Already denied by " + r.DecidedBy + " at " + words.Time(r.DecidedAt) + " IST."
	}
	verb := "allowed"
	if r.Decision == deskbot.AlwaysAllow {
		verb = "always allowed"
	}
	s := "Already " + verb + " by " + DecidedBy(r) + " at " + words.Time(r.DecidedAt) + " IST"
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
