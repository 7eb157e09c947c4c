package words

import (
	"regexp"
	"strings"
	"time"

	"github.com/deskbot/deskbot"
)

// The words of a standing grant: what it covers and when it ends, as the
// approver confirms it, /grants and the desks page list it, and a call run
// under it tells the team whose grant let it run.

// GrantCap says how far a grant reaches: "orders up to ₹50,000.00 of
// exposure each and over the India day", or "every call" for a tool whose
// grants are not capped.
func GrantCap(g deskbot.Grant) string {
	if g.Limit <= 0 {
		return "every call"
	}
	return "orders up to " + Rupees(g.Limit) + " of exposure each and over the India day"
}

// GrantEnd says when a grant ends: "until 15:31 IST", "until 06 Dec 09:15
// IST" when not today (now's India day), "until revoked".
func GrantEnd(g deskbot.Grant, now time.Time) string {
	if g.ExpiresAt.IsZero() {
		return "until revoked"
	}
	return "until " + When(g.ExpiresAt, now)
}

// When is a time as a desk team reads it: "15:31 IST" today (now's India
// day), "06 Dec 15:31 IST" on another day.
func When(t, now time.Time) string {
	if t.In(deskbot.IST).Format("2006-01-02") == now.In(deskbot.IST).Format("2006-01-02") {
		return Time(t) + " IST"
	}
	return t.In(deskbot.IST).Format("02 Jan 15:04") + " IST"
}

// GrantConfirm is the confirmation an Always allow asks for before it
// grants, plain text (the caller escapes it): the desk, the tool, the cap
// and the end, and that it also lets this call run.
//
//	Always allow place_order for desk main?
//	main may then place orders up to ₹50,000.00 of exposure each and over the India day without asking, until 15:31 IST.
//	Larger orders are still held. Confirming also runs this call now.
func GrantConfirm(g deskbot.Grant, now time.Time) string {
	lines := []string{"Always allow " + g.Tool + " for desk " + g.Desk + "?"}
	if g.Limit > 0 {
		lines = append(lines,
			g.Desk+" may then call "+g.Tool+" without asking for "+GrantCap(g)+", "+GrantEnd(g, now)+".",
			"Larger orders are still held. Confirming also runs this call now.")
	} else {
		lines = append(lines,
			g.Desk+" may then call "+g.Tool+" without asking, "+GrantEnd(g, now)+".",
			"Confirming also runs this call now.")
	}
	return strings.Join(lines, "\n")
}

// GrantConfirmButton labels the button that gives the grant: unlike Allow
// once, it says that it grants, and until when.
func GrantConfirmButton(g deskbot.Grant, now time.Time) string {
	return "⚠️ Grant " + GrantEnd(g, now)
}

// GrantCancelled is what the confirmation reads once its Cancel is tapped.
const GrantCancelled = "No grant given; the call still waits for Allow once or Deny."

// auditedID is the " (id)" deskbot.Person.Audited puts after a name.
var auditedID = regexp.MustCompile(` \([0-9]+\)`)

// GrantGivers names who gave a grant as people say it: "Ravi", "Ravi and
// Asha" (their ids left out).
func GrantGivers(g deskbot.Grant) string { return auditedID.ReplaceAllString(g.GrantedBy, "") }

// RanUnderGrant says that a call ran without asking, and whose grant let
// it: "ran under Ravi's grant of 13:31".
func RanUnderGrant(g deskbot.Grant) string {
	return "ran under " + GrantGivers(g) + "'s grant of " + Time(g.GrantedAt)
}

// RanUnderGrantText is the chat's message for a call run under a standing
// grant, plain text: the call as a trader reads it, whose grant let it run
// and what that grant covers. What the tool answered is written for the
// desk's model and stays out, but for an order's id and where it stood
// when placed (OrderOutcome), as an allowed held order's outcome says it:
// a fill at once is told there, a later one on its own.
//
//	main: BUY 10 NSE:INFY LIMIT @ 1,604.35 ran under Ravi's grant of 13:31 (orders up to ₹20,000.00 of exposure each and over the India day, until 15:31 IST). Ran: order 2512040001 · complete 10 @ 1,604.30 avg.
func RanUnderGrantText(desk string, call deskbot.ToolCall, res deskbot.ToolResult, g deskbot.Grant, now time.Time) string {
	what := call.Name
	if call.Name == deskbot.ToolPlaceOrder {
		if o, ok := OrderOf(call.Arguments); ok {
			what = FormatOrder(o)
		}
	}
	text := desk + ": " + what + " " + RanUnderGrant(g) + " (" + GrantCap(g) + ", " + GrantEnd(g, now) + ")."
	if res.IsError {
		return text + " It failed; the desk was told why."
	}
	if call.Name == deskbot.ToolPlaceOrder {
		if o, ok := OrderOutcome(res.Text); ok {
			text += " Ran: " + o + "."
		}
	}
	return text
}
