package broker

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/words"
)

// modifyTool is modify_order over b. The call was read where it entered
// (package sizing: the desk's own open order found, the order it becomes
// checked by the broker and sized) and runs that reading
// (deskbot.ReadOrder): the change the approver was shown, from the order
// as it stood then. A call that comes without it changes nothing.
func modifyTool(b deskbot.Broker) deskbot.Tool {
	return &tool{name: deskbot.ToolModifyOrder, desc: modifyOrderDesc, schema: modifyOrderSchema,
		check: func(args json.RawMessage) error { _, err := deskbot.ParseOrderChanges(args); return err },
		run: func(ctx context.Context, desk string, args json.RawMessage) (deskbot.ToolResult, error) {
			c, err := deskbot.ParseOrderChanges(args)
			if err != nil {
				return modelError(err)
			}
			s, ok := deskbot.ReadOrder(ctx)
			if !ok || s.From == nil || s.From.ID != c.ID {
				return modelError(deskbot.Errorf(deskbot.EINVALID, "modify_order was not run: the order it changes was not read where the call entered, so what it would change was never shown; nothing was changed"))
			}
			// The arguments and their reading say the same: what was shown
			// is what runs.
			if to, err := c.Apply(*s.From); err != nil || to != s.Order {
				return modelError(deskbot.Errorf(deskbot.EINVALID, "modify_order was not run: its arguments no longer read as the change that was shown; nothing was changed"))
			}
			if err := b.Check(s.Order); err != nil {
				return modelError(err)
			}
			key, ok := deskbot.CallKey(ctx)
			if !ok {
				return deskbot.ToolResult{}, ErrNoKey
			}
			m, _ := deskbot.ModifiedOrder(deskbot.ToolCall{Name: deskbot.ToolModifyOrder, Order: s})
			po, err := b.ModifyOrder(ctx, desk, key, m)
			if err != nil {
				if code := deskbot.ErrorCode(err); code == deskbot.ECONFLICT || code == deskbot.ENOTFOUND {
					return modelError(err)
				}
				return brokerError(err)
			}
			return deskbot.ToolResult{Text: "Modified: " + words.PlacedLine(po) + "."}, nil
		}}
}

const modifyOrderDesc = "Change one of this desk's own open orders, by its order id (from place_order or get_orders): its quantity, price, trigger_price or order_type, " +
	"keeping its place in the exchange's queue where the exchange allows, rather than cancelling it and placing another. Give order_id and only what changes. " +
	"The order as it becomes is checked as a new order would be (lot, tick, price bands, this desk's limits). An order may be modified at most 25 times. May need a person's approval."

var modifyOrderSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"order_id":{"type":"string","description":"The order's id, from place_order or get_orders"},` +
	`"quantity":{"type":"integer","minimum":1,"description":"The order's new total quantity (filled part included), a whole number (a multiple of the lot size)"},` +
	`"order_type":{"type":"string","enum":["MARKET","LIMIT","SL","SL-M"],"description":"The order's new type"},` +
	`"price":{"type":"number","description":"LIMIT and SL only: the new limit price, a multiple of the tick"},` +
	`"trigger_price":{"type":"number","description":"SL and SL-M only: the new trigger price"}},` +
	`"required":["order_id"],"additionalProperties":false}`)

// CheckModification refuses m of po before anything is sent: an order
// that is no longer the one shown (filled meanwhile, modified by another
// call, no longer open), one modified deskbot.MaxModifications times, and
// a change of what cannot change (symbol, side, product, variety). Its
// words are for the model.
func CheckModification(po deskbot.PlacedOrder, m deskbot.Modification) error {
	if !m.Stands(po) {
		return deskbot.Errorf(deskbot.ECONFLICT, "Order %s changed since the modification was shown (now %s), so it was not modified; look at it with get_orders and ask again if it still should be.", m.ID, words.PlacedLine(po))
	}
	if n := len(po.Modifications); n >= deskbot.MaxModifications {
		return deskbot.Errorf(deskbot.ECONFLICT, "Order %s was modified %d times already, the most an order may be, so it was not modified; cancel it and place another.", m.ID, n)
	}
	f, t := m.From, m.To
	if t.Symbol != f.Symbol || t.Side != f.Side || t.Product != f.Product || t.Variety != f.Variety {
		return deskbot.Errorf(deskbot.EINVALID, "a modification changes an order's quantity, price, trigger_price or order_type only; order %s was not modified", m.ID)
	}
	if t.Quantity <= po.Filled {
		return deskbot.Errorf(deskbot.EINVALID, "quantity %v is not above the %v of order %s already filled, so it was not modified", t.Quantity, po.Filled, m.ID)
	}
	return nil
}

// ModifyOrder changes one of the desk's open paper orders from m.From to
// m.To for the call key, at once: it fills then if the market allows
// (Sync's rule). A key that modified the order before answers with the
// order as it stands and changes nothing.
func (p *Paper) ModifyOrder(ctx context.Context, desk, key string, m deskbot.Modification) (deskbot.PlacedOrder, error) {
	if err := deskbot.ValidDeskName(desk); err != nil {
		return deskbot.PlacedOrder{}, err
	}
	if key == "" {
		return deskbot.PlacedOrder{}, ErrNoKey
	}
	if err := p.Check(m.To); err != nil {
		return deskbot.PlacedOrder{}, err
	}
	po, err := p.orders.Find(ctx, desk, deskbot.OrderDay(p.now()), m.ID)
	if err != nil || po.ID != m.ID {
		return deskbot.PlacedOrder{}, deskbot.Errorf(deskbot.ENOTFOUND, "This desk has no order %s today; get_orders lists its orders.", m.ID)
	}
	tag := Tag(key)
	if slices.Contains(po.Modifications, tag) {
		return po, nil
	}
	if err := CheckModification(po, m); err != nil {
		return po, err
	}
	if err := p.admitted(ctx, desk, m.To); err != nil {
		return po, err
	}
	market, ok, err := p.market.LastPrice(ctx, m.To.Symbol)
	if err != nil {
		return po, err
	}
	from := Version(po)
	next := po
	next.Order = m.To
	next.Modifications = append(slices.Clone(po.Modifications), tag)
	next.Updated = p.now()
	if ok && market.Value > 0 && fills(m.To, market.Value) {
		next.State, next.Filled, next.AvgPrice = deskbot.OrderComplete, m.To.Quantity, market.Value
	}
	rec, moved, err := p.orders.Move(ctx, from, next, true)
	if err != nil {
		return po, err
	}
	if !moved {
		if slices.Contains(rec.Modifications, tag) {
			return rec, nil
		}
		return rec, deskbot.Errorf(deskbot.ECONFLICT, "Order %s changed while it was being modified (now %s), so it was not modified.", m.ID, words.PlacedLine(rec))
	}
	return rec, nil
}
