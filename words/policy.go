package words

import (
	"fmt"
	"strings"

	"github.com/deskbot/deskbot"
)

// Words says a desk's policy for tool as a desk team reads it, e.g.
// "place_order: 2 approvers above ₹5,00,000.00 notional, an order or the desk's India day (1 at or below);
// refused above ₹20,00,000.00 an order, above ₹50,00,000.00 a position,
// after 40 orders a day".
func Policy(tool string, p deskbot.ToolPolicy) string {
	var parts []string
	n := max(p.Approvals, 1)
	switch {
	case n > 1 && p.TwoApproversAbove > 0:
		parts = append(parts, fmt.Sprintf("%d approvers above %s notional, an order or the desk's India day (1 at or below)", n, Rupees(p.TwoApproversAbove)))
	case n > 1:
		parts = append(parts, fmt.Sprintf("%d approvers for every call", n))
	default:
		parts = append(parts, "1 approver when held")
	}
	var refused []string
	if p.MaxOrderNotional > 0 {
		refused = append(refused, "above "+Rupees(p.MaxOrderNotional)+" an order")
	}
	if p.MaxPositionNotional > 0 {
		refused = append(refused, "above "+Rupees(p.MaxPositionNotional)+" a position")
	}
	if p.MaxOrdersPerDay > 0 {
		refused = append(refused, fmt.Sprintf("after %d orders a day", p.MaxOrdersPerDay))
	}
	if p.FromRole != "" {
		parts = append(parts, fmt.Sprintf("one of them from %s (%d members)", p.FromRole, len(p.RoleMembers)))
	}
	s := tool + ": " + strings.Join(parts, ", ")
	if len(refused) > 0 {
		s += "; refused " + strings.Join(refused, ", ")
	}
	return s
}

// LimitMessage is what a desk's model is told when a hard limit refused its
// call: nothing ran, nobody was asked, and splitting it will not help.
func LimitMessage(tool, why string) string {
	return fmt.Sprintf("%s was refused by a hard limit of this desk, so it was not run and nobody was asked: %s. Do not split it into smaller calls or reach the same result another way; tell the user if it still matters.", tool, why)
}
