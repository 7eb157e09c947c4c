package gate

import (
	"fmt"

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

// stored is what is recorded with the request once the desk is told.
func stored(p deskbot.PermissionResponse, result *deskbot.ToolResult) deskbot.RequestPatch {
	return deskbot.RequestPatch{Result: result, Response: ResponseMessage(p, result)}
}

// ResponseMessage is what the desk is told of p. result is nil for a denial. An allowed
// call without a result did not run, and the desk is told so in the words of
// a denial (without the allow's note, which is no reason for refusing): the
// model must never read that a call ran when nothing ran.
func ResponseMessage(p deskbot.PermissionResponse, result *deskbot.ToolResult) string {
	// Joined, not formatted: every allow and denial writes one, and the
	// words are only ever strings put in place.
	tool, id := p.Request.Content.ToolName, p.Request.ID
	if !p.Allows() || result == nil {
		msg := "The user denied " + tool + " (request " + id + "), so it was not run."
		if p.Reason != "" && !p.Allows() {
			msg += " Their reason: " + p.Reason
		}
		return msg + " Do not try to reach the same result another way; ask them if it still matters."
	}
	outcome, text := "was run", result.Text
	if result.IsError {
		outcome = "failed"
	}
	added := ""
	if p.Reason != "" {
		added = "\nThey added: " + p.Reason
	}
	if c := p.Request.Changed; c != nil {
		// A changed call is never granted, whatever was tapped.
		return ChangedResponseMessage(tool, id, c.What, outcome, text) + added
	}
	always := ""
	if p.Decision == deskbot.AlwaysAllow {
		always = "\nThey also allowed you to use " + tool + " without asking from now on."
	}
	return "The user allowed " + tool + " (request " + id + "), and the harness ran it with the arguments you gave. It " + outcome + ":\n" + text + always + added
}

// ChangedResponseMessage is what the desk is told of a call an approver
// changed before allowing it (Gate.Change): exactly what ran. outcome is
// "was run" or "failed".
func ChangedResponseMessage(tool, id, what, outcome, result string) string {
	return fmt.Sprintf("The user allowed %s (request %s) with changes: %s. The harness ran it with those arguments instead of yours. It %s:\n%s", tool, id, what, outcome, result)
}
