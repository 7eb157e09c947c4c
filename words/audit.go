package words

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/argtext"
)

// The audit trail as people read it: the trail keeps its own codes
// ("allow_once", "ran" with a Go duration), the page and the chat show
// them in words.

// auditActions are the trail's actions in words.
var auditActions = map[string]string{
	"allow_once":     "Allowed once",
	"always_allow":   "Always allowed",
	"deny":           "Denied",
	"hold":           "Held",
	"ran":            "Ran",
	"failed":         "Failed",
	"lapse":          "Lapsed",
	"not_run":        "Not run",
	"interrupted":    "Interrupted",
	"refuse":         "Refused by a hard limit",
	"reason":         "Reason given",
	"reason_skipped": "No reason given",
	"revoke":         "Grant revoked",
	"grant":          "Granted",
	"flatten":        "Flattened",
	"halt":           "Halted",
	"resume":         "Resumed",
	"pause":          "Paused",
	"why":            "Asked why",
	"change":         "Changed",
}

// AuditAction is an audit entry's action in words: "Allowed once" for
// allow_once. An action without words is shown as it is, its underscores
// as spaces.
func AuditAction(action string) string {
	if w, ok := auditActions[action]; ok {
		return w
	}
	return strings.ReplaceAll(action, "_", " ")
}

// AuditDetail is an audit entry's detail as people read it: how long a
// call took (the trail keeps a Go duration) as Duration says it, anything
// else as it is.
func AuditDetail(action, detail string) string {
	if action == "ran" || action == "failed" {
		if d, err := time.ParseDuration(detail); err == nil {
			return "took " + Duration(d)
		}
	}
	return detail
}

// Duration is a duration rounded as people say it: "5 ms", "1.2 s",
// "42 s", "3 min", "3 min 20 s", "2 h", "2 h 5 min".
func Duration(d time.Duration) string {
	switch {
	case d < 0:
		d = -d
	case d == 0:
		return "0 s"
	}
	switch {
	case d < time.Second:
		return fmt.Sprintf("%d ms", max(int64(math.Round(float64(d)/float64(time.Millisecond))), 1))
	case d < 10*time.Second:
		s := math.Round(d.Seconds()*10) / 10
		if s == math.Trunc(s) {
			return fmt.Sprintf("%.0f s", s)
		}
		return fmt.Sprintf("%.1f s", s)
	case d < time.Minute:
		return fmt.Sprintf("%d s", int64(math.Round(d.Seconds())))
	case d < time.Hour:
		d = d.Round(time.Second)
		m, s := int(d/time.Minute), int(d%time.Minute/time.Second)
		if s == 0 {
			return fmt.Sprintf("%d min", m)
		}
		return fmt.Sprintf("%d min %d s", m, s)
	}
	d = d.Round(time.Minute)
	h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
	if m == 0 {
		return fmt.Sprintf("%d h", h)
	}
	return fmt.Sprintf("%d h %d min", h, m)
}

// HeldCall is a held call as its approver's message said it first, for
// the audit's export: an order in trading words, resolved for its desk's
// product (the first line of TradingWords), any other call its tool and
// arguments as shown.
func HeldCall(tool string, args []byte, product string) string {
	if tool == deskbot.ToolPlaceOrder {
		if o, ok := OrderOf(args); ok {
			return argtext.Show(FormatOrder(o.ForDesk(product)))
		}
	}
	return argtext.Show(tool + " " + string(args))
}

// BrokerDid is what the broker did with an order, for the audit's export:
// its state, with the broker's reason for a rejection or a cancellation,
// and what filled ("50 @ 1,499.50 avg", or "none").
func BrokerDid(po deskbot.PlacedOrder) (state, fills string) {
	state = string(po.State)
	if r := reason(po); r != "" && (po.State == deskbot.OrderRejected || po.State == deskbot.OrderCancelled) {
		state += ": " + r
	}
	if po.Filled > 0 {
		return state, filledAt(po)
	}
	return state, "none"
}

// AuditChecked says what a check of the audit chain found, on one line:
//
//	The audit chain holds: 50,000 entries checked, from 1733300000000-0 (04 Dec 2026 09:15:00 India time) to 1733400000000-0.
//	The audit chain breaks at entry 1733300000000-3 (04 Dec 2026 09:15:00 India time, Allowed once, desk alpha, by Asha (42)): <why>.
func AuditChecked(chk deskbot.AuditCheck) string {
	before := ""
	if chk.Unchained > 0 {
		before = fmt.Sprintf("; %s earlier entries, from before the chain, were not checked", GroupedQuantity(float64(chk.Unchained)))
	}
	if b := chk.Broken; b != nil {
		e := b.Entry
		what := e.At.In(deskbot.IST).Format("02 Jan 2006 15:04:05") + " India time, " + AuditAction(e.Action)
		if e.Desk != "" {
			what += ", desk " + e.Desk
		}
		if e.By != "" {
			what += ", by " + e.By
		}
		return "The audit chain breaks at entry " + b.ID + " (" + argtext.Show(what) + "): " + b.Why + before + "."
	}
	if chk.Checked == 0 {
		return "The audit chain holds: it has no entries yet" + before + "."
	}
	return fmt.Sprintf("The audit chain holds: %s entries checked, from %s to %s%s.", GroupedQuantity(float64(chk.Checked)), chk.First, chk.Last, before)
}
