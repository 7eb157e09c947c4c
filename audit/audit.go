// Package audit owns the audit trail as evidence: checking its chain
// (Verify) and writing a day of it as CSV (Export), for `deskbot audit`
// and the page's Audit tab. It reads the trail through deskbot.AuditLedger
// and what the broker did through deskbot.OrderStore, and writes nothing
// to either; the words are package words'. A call is safe from any
// goroutine: it holds no state between calls.
package audit

import (
	"context"
	"encoding/csv"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/argtext"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/words"
)

// Deps is what Export reads.
type Deps struct {
	Ledger deskbot.AuditLedger
	// Orders is the order log, read for what the broker did with an
	// allowed order (its id, final state and fills).
	Orders deskbot.OrderStore
	// Product is a desk's product (deskbot.Policies.Product), which an
	// order that names none trades as: the chat's words name it.
	Product func(desk string) string
}

// Verify checks the audit chain and writes what it found, one line; ok is
// false when the chain breaks.
func Verify(ctx context.Context, l deskbot.AuditLedger, w io.Writer) (ok bool, err error) {
	chk, err := l.VerifyAudit(ctx)
	if err != nil {
		return false, err
	}
	_, err = fmt.Fprintln(w, words.AuditChecked(chk))
	return chk.Broken == nil, err
}

// Header is the export's first row.
var Header = []string{"time (India)", "desk", "tool", "order", "requested by", "approvers", "broker order id", "algo id", "final state", "fills", "trail"}

// decisions are the actions that are an approver's decision on a held
// call.
var decisions = map[string]bool{"approve": true, "allow_once": true, "always_allow": true, "deny": true, "change": true}

// Export writes the India day (YYYY-MM-DD) of the audit trail as CSV: one
// row per held call (its entries of the day together, in the order of the
// first), one per entry of no call (a pause, a halt, a refusal), each
// with every entry of it in words (trail). Every cell that a spreadsheet
// would read as a formula is neutralised (cell).
func Export(ctx context.Context, d Deps, day string, w io.Writer) error {
	entries, err := d.Ledger.AuditDay(ctx, day)
	if err != nil {
		return err
	}
	var rows [][]deskbot.AuditEntry
	byRequest := map[string]int{}
	for _, e := range entries {
		if e.RequestID == "" {
			rows = append(rows, []deskbot.AuditEntry{e})
			continue
		}
		i, ok := byRequest[e.RequestID]
		if !ok {
			i = len(rows)
			byRequest[e.RequestID] = i
			rows = append(rows, nil)
		}
		rows[i] = append(rows[i], e)
	}
	cw := csv.NewWriter(w)
	if err := cw.Write(Header); err != nil {
		return err
	}
	for _, es := range rows {
		r, err := d.row(ctx, day, es)
		if err != nil {
			return err
		}
		for i := range r {
			r[i] = cell(r[i])
		}
		if err := cw.Write(r); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// row is the export's row of one held call's entries (or of one entry of
// no call).
func (d Deps) row(ctx context.Context, day string, es []deskbot.AuditEntry) ([]string, error) {
	first := es[0]
	var order, requestedBy, orderID, algoID, state, fills string
	var approvers, trail []string
	ran := false
	for _, e := range es {
		switch {
		case e.Action == "hold":
			requestedBy = e.By
			product := ""
			if d.Product != nil {
				product = d.Product(e.Desk)
			}
			order = words.HeldCall(e.Tool, []byte(e.Detail), product)
		case decisions[e.Action]:
			a := e.By + ": " + words.AuditAction(e.Action) + " at " + clock(e)
			if e.Detail != "" {
				a += " (" + argtext.Show(e.Detail) + ")"
			}
			approvers = append(approvers, a)
		case e.Action == "ran" || e.Action == "failed":
			ran = true
		}
		line := clock(e) + " " + words.AuditAction(e.Action) + " by " + e.By
		if e.Action != "hold" && e.Detail != "" {
			line += ": " + argtext.Show(words.AuditDetail(e.Action, e.Detail))
		}
		trail = append(trail, line)
	}
	if ran && first.Tool == deskbot.ToolPlaceOrder && d.Orders != nil {
		po, err := d.Orders.LoggedOrder(ctx, first.Desk, day, broker.Tag(first.RequestID))
		switch {
		case err == nil:
			orderID, algoID = po.ID, po.AlgoID
			state, fills = words.BrokerDid(po)
		case deskbot.ErrorCode(err) == deskbot.ENOTFOUND:
			state = "not in the order log"
		default:
			return nil, err
		}
	}
	return []string{
		first.At.In(deskbot.IST).Format("2006-01-02 15:04:05"), first.Desk, first.Tool, order, requestedBy,
		strings.Join(approvers, "; "), orderID, algoID, state, fills, strings.Join(trail, "; "),
	}, nil
}

// clock is an entry's time of day in India.
func clock(e deskbot.AuditEntry) string { return e.At.In(deskbot.IST).Format("15:04:05") }

// cell is s as a spreadsheet reads it as text: a cell that starts with
// what makes a formula (=, +, -, @, or a tab or carriage return before
// one) gets a leading "'", so that a desk's text (a reason, a symbol, a
// note) is never run as a formula when the export is opened.
func cell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

// Usage is what `deskbot audit` without a command prints.
const Usage = `Usage:
  deskbot audit verify                    check the audit trail's chain; exit 1 if it breaks
  deskbot audit export --day YYYY-MM-DD   write that India day of the trail as CSV to stdout
`

// Run runs `deskbot audit <args...>` and returns the exit status: 0 done
// (the chain holds), 1 the chain breaks or the trail could not be read, 2
// the command was wrong. open opens what it reads, once the command is
// known to be right.
func Run(ctx context.Context, args []string, open func(context.Context) (Deps, func(), error), stdout, stderr io.Writer) int {
	fail := func(code int, msg string) int {
		fmt.Fprintln(stderr, "deskbot audit: "+msg)
		return code
	}
	if len(args) == 0 {
		fmt.Fprint(stderr, Usage)
		return 2
	}
	var day string
	switch args[0] {
	case "verify":
		if len(args) != 1 {
			return fail(2, "verify takes no arguments\n\n"+Usage)
		}
	case "export":
		fs := flag.NewFlagSet("deskbot audit export", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		fs.StringVar(&day, "day", "", "the India day to export, YYYY-MM-DD")
		if err := fs.Parse(args[1:]); err != nil || fs.NArg() != 0 || day == "" {
			return fail(2, "export needs --day YYYY-MM-DD and nothing else\n\n"+Usage)
		}
		if _, err := time.Parse(time.DateOnly, day); err != nil {
			return fail(2, fmt.Sprintf("--day is written YYYY-MM-DD, such as 2026-12-04; %q is not one", day))
		}
	default:
		return fail(2, fmt.Sprintf("unknown command %q\n\n%s", args[0], Usage))
	}
	d, closeDeps, err := open(ctx)
	if err != nil {
		return fail(1, deskbot.ErrorMessage(err))
	}
	defer closeDeps()
	if day != "" {
		if err := Export(ctx, d, day, stdout); err != nil {
			return fail(1, deskbot.ErrorMessage(err))
		}
		return 0
	}
	ok, err := Verify(ctx, d.Ledger, stdout)
	if err != nil {
		return fail(1, deskbot.ErrorMessage(err))
	}
	if !ok {
		return 1
	}
	return 0
}
