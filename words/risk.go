package words

import (
	"fmt"
	"strings"
	"time"

	"github.com/deskbot/deskbot"
)

// The risk rules' words: a desk's rules as `deskbot check` prints them, the
// figures a halt records, and what the chat and the desk's model are told.

// RiskRules is a desk's [desk.risk] table in words, one rule a line.
func RiskRules(r deskbot.RiskRules) []string {
	var out []string
	if r.MaxDailyLoss > 0 {
		out = append(out, "halt when the India day's P&L (realised plus open) reaches "+Rupees(-r.MaxDailyLoss))
	}
	if r.MaxDrawdown > 0 {
		out = append(out, "halt when the day's P&L falls "+Rupees(r.MaxDrawdown)+" below its best of the day")
	}
	if r.SquareOffAt != "" {
		out = append(out, "at "+r.SquareOffAt+" IST on trading days close the desk's positions, then refuse orders that open or grow one until the next day")
	}
	if r.MaxDenialsInARow > 0 {
		out = append(out, fmt.Sprintf("halt after %d denials, lapses and hard-limit refusals in a row", r.MaxDenialsInARow))
	}
	if r.MaxModelTokensPerDay > 0 {
		out = append(out, fmt.Sprintf("halt when its models have spent %s tokens in the India day", GroupedQuantity(float64(r.MaxModelTokensPerDay))))
	}
	if len(out) > 0 {
		if r.FlattenOnHalt {
			out = append(out, "a halt also closes its positions (flatten_on_halt)")
		} else {
			out = append(out, "a halt leaves its positions open (flatten_on_halt is off)")
		}
	}
	return out
}

// LossFigures is what a daily-loss halt records: the day's P&L against
// its limit, counted from from (0, or the P&L at the last resume).
func LossFigures(pnl, from, limit float64) string {
	if from != 0 {
		return "P&L today " + SignedRupees(pnl) + ", " + Rupees(from-pnl) + " lost since it was resumed at " + SignedRupees(from) + ", limit " + Rupees(limit)
	}
	return "P&L today " + SignedRupees(pnl) + ", limit " + Rupees(-limit)
}

// DrawdownFigures is what a drawdown halt records.
func DrawdownFigures(pnl, best, limit float64) string {
	return "P&L today " + SignedRupees(pnl) + ", " + Rupees(best-pnl) + " below the day's best of " + SignedRupees(best) + ", limit " + Rupees(limit)
}

// InARowFigures is what a halt for refusals in a row records.
func InARowFigures(n int) string {
	return fmt.Sprintf("%d denials, lapses and hard-limit refusals in a row", n)
}

// TokensFigures is what a token halt records, counted from from (0, or
// the tokens at the last resume).
func TokensFigures(spent, from, limit int64) string {
	if from != 0 {
		return fmt.Sprintf("%s model tokens today, %s since it was resumed, limit %s", GroupedQuantity(float64(spent)), GroupedQuantity(float64(spent-from)), GroupedQuantity(float64(limit)))
	}
	return fmt.Sprintf("%s model tokens today, limit %s", GroupedQuantity(float64(spent)), GroupedQuantity(float64(limit)))
}

// HaltChat is the group's message when a rule halts a desk: which rule,
// the figures, what was done and who can resume it.
func HaltChat(desk string, h deskbot.Halt, did string) string {
	return fmt.Sprintf("🛑 %s halted at %s IST by its risk rule %s: %s.\nDone: %s.\nAn approver can /resume %s.", desk, Time(h.At), h.Rule, h.Figures, did, desk)
}

// HaltTrigger is the one message a halted desk's model is told. The words
// are part of the contract with the desk's model.
func HaltTrigger(desk string, h deskbot.Halt) deskbot.Trigger {
	return deskbot.Trigger{
		Desk: desk, Kind: deskbot.TriggerHalt, CreatedAt: h.At,
		Text: fmt.Sprintf("The harness halted this desk at %s India time: its risk rule %s tripped (%s). Nothing you hold can run until an approver resumes the desk; when you are resumed, start from the book as it is then.", Time(h.At), h.Rule, h.Figures),
	}
}

// HaltedAllowMessage answers an allow of a halted desk's request.
func HaltedAllowMessage(desk string) string {
	return "Not run: " + desk + " is halted by a risk rule. /resume " + desk + " shows why."
}

// HaltedOrderMessage is the model's answer to an order of a halted desk
// that reached the harness (a turn that was under way).
func HaltedOrderMessage(tool string) string {
	return tool + " was not run: a risk rule halted this desk. Nothing runs until an approver resumes it. End this turn."
}

// ResumeHaltedPrompt asks an approver to confirm the resume of a halted
// desk, with the rule and the figures.
func ResumeHaltedPrompt(desk string, h deskbot.Halt) string {
	s := fmt.Sprintf("%s was halted at %s IST by its risk rule %s: %s.", desk, Time(h.At), h.Rule, h.Figures)
	if h.Did != "" {
		s += "\nDone then: " + h.Did + "."
	}
	return s + "\nResume it? Its rules then count from where it stands: a further loss of max_daily_loss, a new drawdown or a new day's allowance of tokens halts it again today."
}

// SquareOffChat is the group's message when a desk is squared off by the
// clock.
func SquareOffChat(desk, at, did string) string {
	return fmt.Sprintf("⏱ %s squared off at %s IST (its square_off_at): %s. Orders that open or grow a position are refused until the next trading day.", desk, at, did)
}

// SquareOffTrigger is what a squared-off desk's model is told.
func SquareOffTrigger(desk, at, did string, now time.Time) deskbot.Trigger {
	return deskbot.Trigger{
		Desk: desk, Kind: deskbot.TriggerFlatten, CreatedAt: now,
		Text: fmt.Sprintf("The harness squared off this desk at %s India time (its square_off_at): %s. Until the next trading day, orders that open or grow a position are refused.", at, did),
	}
}

// SquareOffReason is why a hard limit refuses an order that would open or
// grow a position after the desk's square-off (LimitMessage's why).
func SquareOffReason(at string) string {
	return "it would open or grow a position after the desk's square-off at " + at + " IST; until the next trading day only orders that reduce a position run"
}

// SquareOffFailed is the group's message, once a day, when a desk's
// square-off could not close its positions.
func SquareOffFailed(desk, at, why string) string {
	return "⏱ could not square off " + desk + " at " + at + " IST (" + why + "): its positions are still open; it is tried again at every check"
}

// RiskUnchecked is the group's message, once, when a desk's rules cannot
// be checked.
func RiskUnchecked(desk, why string) string {
	return "the risk rules of " + desk + " cannot be checked (" + why + "); they are checked again every 30 seconds and nothing is halted meanwhile"
}

// Closed is what the harness's flatten of a desk did, as a step of a
// halt or a square-off: "closed 1 position (sold 10 INFY @ 1646.36
// (realised -2.60)), realised -₹2.60", with the open orders it cancelled,
// the closing orders it placed (open until their fills come) and what it
// could not close, when there are any.
func Closed(r deskbot.FlattenReport) string {
	var parts []string
	if len(r.Cancelled) > 0 {
		parts = append(parts, "cancelled "+count(len(r.Cancelled), "open order")+" ("+orderList(r.Cancelled)+")")
	}
	if len(r.Closed) > 0 {
		parts = append(parts, fmt.Sprintf("closed %s (%s), realised %s", closedCount(r), closedFills(r), SignedRupees(r.RealisedPnL)))
	}
	if len(r.Placed) > 0 {
		parts = append(parts, "placed "+count(len(r.Placed), "closing market order")+" ("+orderList(r.Placed)+"), open until they fill")
	}
	if len(r.Left) > 0 {
		parts = append(parts, "could not close "+strings.Join(r.Left, "; "))
	}
	if len(parts) == 0 {
		return "had no open positions to close"
	}
	return strings.Join(parts, ", ")
}

// Did joins the steps a halt or a square-off took.
func Did(steps []string) string { return strings.Join(steps, "; ") }
