// Approval policies: how many distinct people must allow a desk's held
// call (four eyes), and hard limits that refuse a broker order outright.

package deskbot

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"
)

// MaxApprovals bounds a policy's approvals: more than that is a typo, and
// a count nobody can reach would hold every call until it lapses.
const MaxApprovals = 5

// ToolPolicy is how one desk's calls to one tool are guarded beyond
// APPROVAL_TOOLS. The zero value is the rule without a policy: one
// approver, no limits.
type ToolPolicy struct {
	// Approvals is how many distinct approvers a held call needs; below 1
	// counts as 1, so no value can let a held call run on nobody's yes.
	Approvals int
	// TwoApproversAbove (place_order only): Approvals applies to an order
	// whose exposure (Exposure, rupees) is above it, and to every order
	// once the desk's orders of the India day, that one included, add up
	// to more than it (Required); other orders need one approver. 0:
	// Approvals applies to every order.
	TwoApproversAbove float64
	// Hard limits (place_order only; 0: none). A call over one is refused
	// before the gate sees it: no request, nobody is asked.
	MaxOrderNotional    float64 // one order's exposure (Exposure)
	MaxPositionNotional float64 // the exposure of the security's position after the order (waiting orders on its side counted as filled; NSE and BSE shares of one name together), at the market's price or the order's if higher
	MaxOrdersPerDay     int     // orders put forward (run or held) in an India day
	// FromRole names a role of DESKS_FILE's [roles] (RoleMembers, its
	// approvers' Telegram ids): among a held call's counted approvals at
	// least one must come from it. "": any approvers.
	FromRole    string
	RoleMembers []int64
	// Product (place_order only) is the desk's default product for an
	// order that names none: one of the Product* products; "": MIS.
	Product string
}

// Limited reports whether the policy has a hard limit.
func (p ToolPolicy) Limited() bool {
	return p.MaxOrderNotional > 0 || p.MaxPositionNotional > 0 || p.MaxOrdersPerDay > 0
}

// Policies is desk → tool → policy. A nil Policies is the rule without
// policies: one approver for every held call, no limits.
type Policies map[string]map[string]ToolPolicy

// For returns the policy of desk's calls to tool (the zero policy if none).
// A modify_order's is place_order's: a modification is approved and
// limited as the order it becomes.
func (p Policies) For(desk, tool string) ToolPolicy {
	if tool == ToolModifyOrder {
		tool = ToolPlaceOrder
	}
	return p[desk][tool]
}

// OrderTool reports whether tool puts an order forward: place_order, and
// modify_order (the order it becomes). Both are sized where they enter
// (ToolCall.Order), limited, approved and granted by place_order's policy.
func OrderTool(tool string) bool { return tool == ToolPlaceOrder || tool == ToolModifyOrder }

// Product is the product desk's orders take when they name none: its
// place_order policy's Product, else MIS.
func (p Policies) Product(desk string) string {
	if pr := p.For(desk, ToolPlaceOrder).Product; pr != "" {
		return pr
	}
	return ProductMIS
}

// Required is how many distinct approvers the held call needs under p:
// never below 1. An order needs the larger count when its exposure
// (call.Order, deskbot.Exposure) is above two_approvers_above, when it
// was not sized, and when the desk's orders of the India day, this one
// included, add up past it (dayTotal, rupees of exposure): splitting an
// order into small ones never lowers how many people must say yes.
func (p Policies) Required(desk string, call ToolCall, dayTotal float64) int {
	tp := p.For(desk, call.Name)
	n := max(tp.Approvals, 1)
	if n > 1 && tp.TwoApproversAbove > 0 && OrderTool(call.Name) &&
		call.Order != nil && call.Order.Exposure <= tp.TwoApproversAbove && dayTotal <= tp.TwoApproversAbove {
		return 1
	}
	return n
}

// GrantLimit is the largest notional a standing grant for desk's tool may
// cover: the policy's TwoApproversAbove for place_order (a grant never
// covers an order above the threshold, nor one that takes the desk's day
// total above it, however many gave it), else 0 (no limit).
func (p Policies) GrantLimit(desk, tool string) float64 {
	if !OrderTool(tool) {
		return 0
	}
	return p.For(desk, tool).TwoApproversAbove
}

// GrantCap is how far a standing grant given by an always allow of call
// on desk reaches, and whether the tool's grants are capped at all: a
// place_order grant covers orders of at most cap rupees of exposure each
// (and of the day, Gate.Permission). The cap is maxNotional
// (GRANT_MAX_NOTIONAL), or, when that is 0, the exposure of the order the
// approver was shown (call.Order), and never more than the policy's
// two-approver threshold. A capped tool with no cap to give (an order not
// sized, with neither set) gets no grant: cap 0, capped true.
func (p Policies) GrantCap(desk string, call ToolCall, maxNotional float64) (limit float64, capped bool) {
	if !OrderTool(call.Name) {
		return 0, false
	}
	limit = maxNotional
	if limit <= 0 && call.Order != nil {
		limit = call.Order.Exposure
	}
	if policy := p.GrantLimit(desk, call.Name); policy > 0 && (limit <= 0 || policy < limit) {
		limit = policy
	}
	return max(limit, 0), true
}

// Check refuses policies that a mistake made: a count for a tool the gate
// does not hold (it would guard nothing), a count more than the approvers
// could give, a negative number, a hard limit on a tool it cannot apply
// to. guarded is APPROVAL_TOOLS; approvers is how many people may decide
// (0: not known here, not checked).
func (p Policies) Check(guarded []string, approvers int) error {
	for _, desk := range slices.Sorted(maps.Keys(p)) {
		for _, tool := range slices.Sorted(maps.Keys(p[desk])) {
			tp := p[desk][tool]
			where := fmt.Sprintf("desk %q policy for %s", desk, tool)
			switch {
			case tp.Approvals < 0 || tp.TwoApproversAbove < 0 || tp.MaxOrderNotional < 0 || tp.MaxPositionNotional < 0 || tp.MaxOrdersPerDay < 0:
				return Errorf(EINVALID, "%s: numbers may not be negative", where)
			case tp.Approvals > MaxApprovals:
				return Errorf(EINVALID, "%s: approvals is %d; at most %d", where, tp.Approvals, MaxApprovals)
			case (tp.Approvals > 0 || tp.TwoApproversAbove > 0 || tp.FromRole != "") && !slices.Contains(guarded, tool):
				return Errorf(EINVALID, "%s: %s is not in APPROVAL_TOOLS, so nobody is asked before it runs and approvals would guard nothing; add it to APPROVAL_TOOLS or remove the policy", where, tool)
			case approvers > 0 && tp.Approvals > approvers:
				return Errorf(EINVALID, "%s: approvals is %d but TELEGRAM_APPROVERS names %d, so such a call could never be allowed", where, tp.Approvals, approvers)
			case tool == ToolModifyOrder:
				return Errorf(EINVALID, "%s: %s is approved and limited by the desk's %s policy (the order it becomes); remove this one", where, ToolModifyOrder, ToolPlaceOrder)
			case tool != ToolPlaceOrder && (tp.TwoApproversAbove > 0 || tp.Limited()):
				return Errorf(EINVALID, "%s: two_approvers_above and the hard limits apply to %s only", where, ToolPlaceOrder)
			case tp.TwoApproversAbove > 0 && tp.Approvals < 2:
				return Errorf(EINVALID, "%s: two_approvers_above needs approvals of 2 or more", where)
			}
		}
	}
	return nil
}

// CheckRoles refuses roles no held call could meet: a role member who is
// not among the approvers (their tap would never count), or a policy whose
// role has none of them.
func (p Policies) CheckRoles(approvers []int64) error {
	for _, desk := range slices.Sorted(maps.Keys(p)) {
		for _, tool := range slices.Sorted(maps.Keys(p[desk])) {
			tp := p[desk][tool]
			if tp.FromRole == "" {
				continue
			}
			where := fmt.Sprintf("desk %q policy for %s", desk, tool)
			if len(tp.RoleMembers) == 0 {
				return Errorf(EINVALID, "%s: from_role %q has no members, so such a call could never be allowed", where, tp.FromRole)
			}
			for _, id := range tp.RoleMembers {
				if !slices.Contains(approvers, id) {
					return Errorf(EINVALID, "%s: role %q names %d, who is not in TELEGRAM_APPROVERS, so their approval would never count", where, tp.FromRole, id)
				}
			}
		}
	}
	return nil
}

// OrderCounter counts the orders each desk puts forward (runs or has held)
// in a day, for max_orders_per_day, and adds up their notional, for the
// four-eyes threshold over the day.
type OrderCounter interface {
	// CountOrder counts one more order of desk on day (India date,
	// 2006-01-02, OrderDay) unless max are counted already, atomically; it
	// returns the count and whether this order was counted.
	CountOrder(ctx context.Context, desk, day string, max int) (int, bool, error)
	DayNotional
	// AddDayNotional adds amount (rupees) to desk's total for day,
	// atomically, and returns the total with it.
	AddDayNotional(ctx context.Context, desk, day string, amount float64) (float64, error)
}

// DayNotional reads a desk's running total of order notional for a day
// (OrderCounter.AddDayNotional), 0 if nothing was put forward.
type DayNotional interface {
	DayNotional(ctx context.Context, desk, day string) (float64, error)
}

// OrderDay is the India date of t (2006-01-02): the day the daily limits
// count in.
func OrderDay(t time.Time) string { return t.In(IST).Format("2006-01-02") }
