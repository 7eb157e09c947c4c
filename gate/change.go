package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/words"
)

// Limits is the desks' hard limits as the gate uses them: HardLimits in
// the service, a stand-in in tests of four eyes.
type Limits interface {
	// Check checks desk's call against its hard limits (Ask): refusal is
	// why it may not run, and release nil, or release frees what it
	// reserved once the call is held or has run.
	Check(ctx context.Context, desk string, call deskbot.ToolCall) (release func(), refusal string)
	// Recheck checks a changed call against its desk's hard limits as if
	// the desk had asked for it, without counting it as another order. why
	// is the limit it passes ("" for none).
	Recheck(ctx context.Context, desk string, call deskbot.ToolCall) (why string, err error)
	// Size sizes o, a changed order, as the desk's orders are sized where
	// they enter (package sizing): the same refusals (a stop the market
	// has crossed, no usable price) and the exposure four eyes counts.
	Size(ctx context.Context, o deskbot.Order) (*deskbot.SizedOrder, error)
}

// change takes by's change of request id's call ("quantity 25", "price
// 24500", "trigger_price 24400", or several), made from a view that
// showed version changes of it (deskbot.Request.Changes). A change may
// only lower risk (ChangedArguments): a whole quantity smaller than the
// call's, a limit price (LIMIT, SL) or a trigger price (SL, SL-M) no
// worse for the desk (lower for a buy, higher for a sell); a MARKET or
// SL-M order has no price to change, and the symbol, the side, the
// order_type, the product and the variety stay. Anything else is an
// EINVALID error whose message says why, and nothing changes. The changed
// call is checked against the desk's hard limits and its policy's count
// as if the desk had asked for it; the change is one transition that
// keeps it beside the desk's call, restarts the approvals at the
// changer's own and applies the changed call's count. When that one approval meets the count the change is the
// allow: the request is running and the caller must call run exactly once
// (Change does); else resp.Counted, and the request is shown
// again with who changed what. A changed call is never granted.
func (g *Gate) change(ctx context.Context, id, changes string, version int, by deskbot.Person) (*deskbot.PermissionResponse, error) {
	if g.cfg.Approvers != nil && !slices.Contains(g.cfg.Approvers, by.ID) {
		return nil, deskbot.Errorf(deskbot.EUNAUTHORIZED, "%s", words.ChangeNotApprover)
	}
	r, err := g.asHeld(ctx, id)
	if err != nil {
		return nil, err
	}
	if r.Changes != version {
		// Memory may be behind another process's change: the store says.
		if r, err = g.store.Request(ctx, id); err != nil {
			return nil, err
		}
	}
	if r.State != deskbot.StateOpen {
		return nil, deskbot.Errorf(deskbot.ECONFLICT, "Nothing was changed. %s", words.Describe(r))
	}
	if r.Changes != version {
		return nil, deskbot.Errorf(deskbot.ECONFLICT, "%s", words.ChangedAgain)
	}
	if r.Content.ToolName != deskbot.ToolPlaceOrder {
		return nil, deskbot.Errorf(deskbot.EINVALID, "Only an order can be changed; nothing was changed.")
	}
	args, err := ChangedArguments(r.Call().Arguments, changes)
	if err != nil {
		return nil, err
	}
	call := r.Call()
	call.Arguments, call.Order = args, nil
	fence, err := g.fence()
	if err != nil {
		return nil, err
	}
	o, err := deskbot.ParseOrder(args)
	if err != nil {
		return nil, err
	}
	if call.Order, err = g.cfg.Limits.Size(ctx, o); err != nil {
		if deskbot.ErrorCode(err) == deskbot.EINVALID {
			return nil, deskbot.Errorf(deskbot.EINVALID, "Not changed: %s Nothing was changed.", deskbot.ErrorMessage(err))
		}
		return nil, deskbot.Errorf(deskbot.EUNAVAILABLE, "The changed call could not be sized (%s); nothing was changed.", deskbot.ErrorMessage(err))
	}
	why, err := g.cfg.Limits.Recheck(ctx, r.Desk, call)
	if err != nil {
		return nil, deskbot.Errorf(deskbot.EUNAVAILABLE, "The changed call could not be checked against the desk's hard limits (%s); nothing was changed.", deskbot.ErrorMessage(err))
	}
	if why != "" {
		return nil, deskbot.Errorf(deskbot.EINVALID, "Not changed: the changed call would pass a hard limit: %s. Nothing was changed.", why)
	}
	required, _, err := g.required(ctx, r.Desk, call)
	if err != nil {
		return nil, err
	}
	now := g.now()
	what := whatChanged(r.Content.Arguments, args)
	resp := &deskbot.PermissionResponse{Request: r, Decision: deskbot.AllowOnce}
	t := g.decision(ctx, resp, by, fence)
	t.Kind = deskbot.TransitionChange
	v := r.Changes
	t.Version = &v
	t.Change = &deskbot.ChangeRecord{
		CallChange: deskbot.CallChange{Arguments: args, What: what, By: by.Name, ByID: by.ID, At: now, Order: call.Order},
		Required:   required,
	}
	t.Audit.Detail = ""
	// Short of the count the chat edits the message: the changed call
	// whole, who changed what, the buttons again.
	t.Approved = &deskbot.Event{Kind: deskbot.EventRequestApproved, Desk: r.Desk, Time: now, RequestID: r.ID, TriggerID: r.TriggerID}
	after, out, err := g.resolve(ctx, id, t)
	if err != nil {
		return nil, err
	}
	switch out {
	case deskbot.Rechanged:
		return nil, deskbot.Errorf(deskbot.ECONFLICT, "%s", words.ChangedAgain)
	case deskbot.Counted:
		g.held.put(after) // the next approver decides the changed call
		g.log.InfoContext(ctx, "call changed", "desk", r.Desk, "request", id, "by", by.Audited(), "what", what, "needs", after.Needs())
	case deskbot.Applied:
		g.log.InfoContext(ctx, "call changed and allowed", "desk", r.Desk, "request", id, "by", by.Audited(), "what", what)
	}
	resp.Request = after
	return g.decided(ctx, resp, out, by)
}

// One change's number: a whole quantity, or a price as an approver
// types it.
var (
	quantityRx = regexp.MustCompile(`^[1-9][0-9]{0,14}$`)
	priceRx    = regexp.MustCompile(`^(0|[1-9][0-9]*)(\.[0-9]+)?$`)
)

// changeKeys are what a change may name, in the order whatChanged says
// them; fixedKeys are what makes the order the one the desk asked for,
// which no change touches.
var (
	changeKeys = []string{"quantity", "price", "trigger_price"}
	fixedKeys  = []string{"symbol", "side", "order_type", "product", "variety"}
)

// ChangedArguments is args (an order's) with changes applied: "quantity
// 25", "price 24500", "trigger_price 24400", each at most once, separated
// by spaces or a comma. It refuses, with an EINVALID error whose message
// is the approver's, anything that is not one of those or that would not
// lower the order's risk: a quantity that is not a whole number smaller
// than the current one; a price on an order that has none (MARKET and
// SL-M trade at the market's price), or one not better for the desk
// (lower for a buy, higher for a sell); a trigger_price on an order that
// has none (only SL and SL-M do), or one not tighter (lower for a buy,
// higher for a sell: a buy stop then fills lower, a stop-loss of a long
// sells sooner and higher); and any change of what the order is (its
// symbol, side, order_type, product, variety). The other arguments are
// kept byte for byte.
func ChangedArguments(args json.RawMessage, changes string) (json.RawMessage, error) {
	cur, err := deskbot.ParseOrder(args)
	if err != nil {
		return nil, deskbot.Errorf(deskbot.EINVALID, "This call is not an order that can be changed; nothing was changed.")
	}
	fields, err := deskbot.ArgumentFields(deskbot.ToolPlaceOrder, args)
	if err != nil {
		return nil, err
	}
	parts := strings.Fields(strings.ReplaceAll(changes, ",", " "))
	if len(parts) == 0 || len(parts)%2 != 0 || len(parts) > 2*len(changeKeys) {
		return nil, deskbot.Errorf(deskbot.EINVALID, "%s", changeUsage)
	}
	kind := cur.Kind()
	stop := kind == deskbot.OrderSL || kind == deskbot.OrderSLM
	seen := map[string]bool{}
	for i := 0; i < len(parts); i += 2 {
		k, v := parts[i], parts[i+1]
		if seen[k] {
			return nil, deskbot.Errorf(deskbot.EINVALID, "Not changed: %s is given twice. %s", k, changeUsage)
		}
		seen[k] = true
		switch {
		case k == "quantity":
			if !quantityRx.MatchString(v) {
				return nil, deskbot.Errorf(deskbot.EINVALID, "Not changed: the quantity must be a whole number greater than 0, not %s. Nothing was changed.", strconv.QuoteToASCII(v))
			}
			q, _ := strconv.ParseFloat(v, 64)
			if q >= cur.Quantity {
				return nil, deskbot.Errorf(deskbot.EINVALID, "Not changed: a change may only lower the quantity, and %s is not below %s. Nothing was changed.", v, num(cur.Quantity))
			}
			fields["quantity"] = json.RawMessage(v)
		case k == "price" && cur.AtMarket():
			return nil, deskbot.Errorf(deskbot.EINVALID, "Not changed: this %s order has no price to change (it trades at the market's price), and its order_type stays. Nothing was changed.", kind)
		case k == "trigger_price" && !stop:
			return nil, deskbot.Errorf(deskbot.EINVALID, "Not changed: this %s order has no trigger_price to change; only SL and SL-M orders have one. Nothing was changed.", kind)
		case k == "price" || k == "trigger_price":
			what, was := "price", cur.Price
			if k == "trigger_price" {
				what, was = "trigger_price", cur.TriggerPrice
			}
			if !priceRx.MatchString(v) || len(strings.Trim(strings.Replace(v, ".", "", 1), "0")) > 15 {
				return nil, deskbot.Errorf(deskbot.EINVALID, "Not changed: the %s must be a number such as 24500 or 2500.5, not %s. Nothing was changed.", what, strconv.QuoteToASCII(v))
			}
			p, _ := strconv.ParseFloat(v, 64)
			if p <= 0 {
				return nil, deskbot.Errorf(deskbot.EINVALID, "Not changed: the %s must be greater than 0. Nothing was changed.", what)
			}
			if k == "trigger_price" {
				// A stop trades once the market reaches its trigger: a buy
				// stop's trigger lowered (a sell stop's raised) trades
				// sooner, an entry stop below the market at once. A change
				// never makes an order fill sooner than the desk's would.
				if cur.Side == deskbot.Buy && p <= was {
					return nil, deskbot.Errorf(deskbot.EINVALID, "Not changed: a buy stop's trigger_price may only be raised, so that it trades no sooner than the desk's, and %s is not above %s. Nothing was changed.", v, num(was))
				}
				if cur.Side == deskbot.Sell && p >= was {
					return nil, deskbot.Errorf(deskbot.EINVALID, "Not changed: a sell stop's trigger_price may only be lowered, so that it trades no sooner than the desk's, and %s is not below %s. Nothing was changed.", v, num(was))
				}
			} else if cur.Side == deskbot.Buy && p >= was {
				return nil, deskbot.Errorf(deskbot.EINVALID, "Not changed: a buy's %s may only be lowered, and %s is not below %s. Nothing was changed.", what, v, num(was))
			} else if cur.Side == deskbot.Sell && p <= was {
				return nil, deskbot.Errorf(deskbot.EINVALID, "Not changed: a sell's %s may only be raised, and %s is not above %s. Nothing was changed.", what, v, num(was))
			}
			fields[k] = json.RawMessage(num(p))
		case slices.Contains(fixedKeys, k):
			return nil, deskbot.Errorf(deskbot.EINVALID, "Not changed: an order's symbol, side, order_type, product and variety stay as the desk asked; only the quantity and the price can be changed, and an SL or SL-M order's trigger_price. Nothing was changed.")
		default:
			return nil, deskbot.Errorf(deskbot.EINVALID, "Not changed: only the quantity and the price can be changed, and an SL or SL-M order's trigger_price, not %s; everything else stays. Nothing was changed.", strconv.QuoteToASCII(k))
		}
	}
	out, err := json.Marshal(fields) // keys sorted; the others' bytes kept
	if err != nil {
		return nil, err
	}
	// The whole changed order, read as the broker will read it, against
	// the desk's: the same order, only smaller or at better prices.
	changed, err := deskbot.ParseOrder(out)
	if err != nil {
		return nil, deskbot.Errorf(deskbot.EINVALID, "Not changed: the changed order would not be valid: %s. Nothing was changed.", strings.TrimSuffix(deskbot.ErrorMessage(err), "."))
	}
	better := func(now, was float64) bool {
		return cur.Side == deskbot.Buy && now <= was || cur.Side == deskbot.Sell && now >= was
	}
	if changed.Symbol != cur.Symbol || changed.Side != cur.Side || changed.Kind() != kind ||
		changed.Product != cur.Product || changed.Variety != cur.Variety || changed.Quantity > cur.Quantity ||
		!better(changed.Price, cur.Price) || better(changed.TriggerPrice, cur.TriggerPrice) && changed.TriggerPrice != cur.TriggerPrice {
		return nil, deskbot.Errorf(deskbot.EINVALID, "Not changed: the changed order would not be a smaller or better one. Nothing was changed.")
	}
	return out, nil
}

const changeUsage = "Reply with the changes, such as quantity 25 or price 24500 (or both; trigger_price 24400 for an SL or SL-M order); a change may only lower the order's risk. Nothing was changed."

func num(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// whatChanged says how changed differs from the desk's args, in the words
// the model and the chat read: "quantity 50 → 25, price 24600 → 24500".
func whatChanged(orig, changed json.RawMessage) string {
	a, _ := deskbot.ArgumentFields(deskbot.ToolPlaceOrder, orig)
	b, _ := deskbot.ArgumentFields(deskbot.ToolPlaceOrder, changed)
	var parts []string
	for _, k := range changeKeys {
		if x, y := bytes.TrimSpace(a[k]), bytes.TrimSpace(b[k]); !bytes.Equal(x, y) {
			parts = append(parts, k+" "+string(x)+" → "+string(y))
		}
	}
	return strings.Join(parts, ", ")
}
