package deskbot

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
)

// MaxModifications is how many times one order may be modified: Kite's
// limit, kept for every broker so that a desk learns it on paper.
const MaxModifications = 25

// modifyArgs are modify_order's arguments; order_id is required, and at
// least one of the others.
var modifyArgs = []string{"order_id", "quantity", "price", "trigger_price", "order_type"}

// OrderChanges are modify_order's arguments as read: the order they
// change, and the fields they give (nil: unchanged).
type OrderChanges struct {
	ID           string
	Quantity     *float64
	Price        *float64
	TriggerPrice *float64
	Type         *string
}

// ParseOrderChanges reads modify_order's arguments exactly as given: an
// order id, and at least one of quantity, price, trigger_price and
// order_type, each as place_order reads it (whole quantities, numbers of
// at most 15 significant digits, nothing sent as a string).
func ParseOrderChanges(args json.RawMessage) (OrderChanges, error) {
	var c OrderChanges
	fields, err := ArgumentFields(ToolModifyOrder, args)
	if err != nil {
		return c, err
	}
	for k := range fields {
		if !slices.Contains(modifyArgs, k) {
			return c, Errorf(EINVALID, "modify_order has no argument %q; it takes %s (the symbol, side, product and variety of an order cannot change: cancel it and place another)", k, strings.Join(modifyArgs, ", "))
		}
	}
	if _, ok := fields["order_id"]; !ok {
		return c, Errorf(EINVALID, "modify_order needs order_id, the order's id as a string (get_orders lists them)")
	}
	if err := field(fields, "order_id", &c.ID, "the order's id as a string (get_orders lists them)"); err != nil {
		return c, err
	}
	if c.ID == "" || len(c.ID) > 64 {
		return c, Errorf(EINVALID, "modify_order needs order_id, the order's id as a string (get_orders lists them)")
	}
	if len(fields) == 1 {
		return c, Errorf(EINVALID, "modify_order needs at least one of quantity, price, trigger_price and order_type: what the order becomes")
	}
	for _, f := range []struct {
		k    string
		dst  **float64
		want string
	}{
		{"quantity", &c.Quantity, "a whole number, e.g. 10"},
		{"price", &c.Price, "a number, e.g. 2500.5"},
		{"trigger_price", &c.TriggerPrice, "a number, e.g. 2490"},
	} {
		if _, ok := fields[f.k]; !ok {
			continue
		}
		var x float64
		if err := field(fields, f.k, &x, f.want); err != nil {
			return c, err
		}
		if n := significantDigits(fields[f.k]); n > maxDigits {
			return c, Errorf(EINVALID, "%s has %d significant digits; at most %d are kept exactly, so send it rounded", f.k, n, maxDigits)
		}
		*f.dst = &x
	}
	if _, ok := fields["order_type"]; ok {
		var t string
		if err := field(fields, "order_type", &t, `one of "MARKET", "LIMIT", "SL", "SL-M"`); err != nil {
			return c, err
		}
		c.Type = &t
	}
	if q := c.Quantity; q != nil && (!positive(*q) || *q != math.Trunc(*q)) {
		return c, Errorf(EINVALID, "quantity must be a whole number of units greater than 0, not %v", *q)
	}
	return c, nil
}

// Apply is the order po becomes with c: its symbol, side, product and
// variety stay; what c gives changes; a type that takes no price (MARKET,
// SL-M) drops the price, one that takes no trigger (MARKET, LIMIT) the
// trigger. The result is checked as a new order would be (CheckOrder), and
// refused when it is not open, when it changes nothing, when its quantity
// is not above what already filled, or when po was modified
// MaxModifications times. Every refusal is EINVALID with words for the
// model.
func (c OrderChanges) Apply(po PlacedOrder) (Order, error) {
	if !po.Open() || po.State == OrderPending {
		return Order{}, Errorf(EINVALID, "order %s is %s, so it cannot be modified: only an open order can", c.ID, po.State)
	}
	if n := len(po.Modifications); n >= MaxModifications {
		return Order{}, Errorf(EINVALID, "order %s was modified %d times already, the most an order may be; cancel it and place another", c.ID, n)
	}
	o := po.Order
	if c.Type != nil {
		o.Type = *c.Type
		if *c.Type == "" {
			return Order{}, Errorf(EINVALID, `order_type must be one of "MARKET", "LIMIT", "SL", "SL-M", not ""`)
		}
		if c.Price == nil && (o.Kind() == OrderMarket || o.Kind() == OrderSLM) {
			o.Price = 0
		}
		if c.TriggerPrice == nil && (o.Kind() == OrderMarket || o.Kind() == OrderLimit) {
			o.TriggerPrice = 0
		}
	}
	if c.Quantity != nil {
		o.Quantity = *c.Quantity
	}
	if c.Price != nil {
		o.Price = *c.Price
	}
	if c.TriggerPrice != nil {
		o.TriggerPrice = *c.TriggerPrice
	}
	o.Type = o.Kind()
	if err := CheckOrder(o); err != nil {
		return Order{}, err
	}
	if o.Quantity <= po.Filled {
		return Order{}, Errorf(EINVALID, "quantity %v is not above the %v of order %s already filled; send a larger quantity, or cancel the order to stop it", o.Quantity, po.Filled, c.ID)
	}
	from := po.Order
	from.Type = from.Kind()
	if o == from {
		return Order{}, Errorf(EINVALID, "modify_order would leave order %s as it is; send the quantity, price, trigger_price or order_type it should have", c.ID)
	}
	return o, nil
}

// Modification is an allowed modify_order as it runs: the desk's order ID,
// as it stood when shown (From: its order, and Filled, what had filled),
// and the order it becomes (To).
type Modification struct {
	ID     string
	From   Order
	Filled float64
	To     Order
}

// Stands reports whether po is still the order m was made from: the same
// order, as much filled, open, and not being modified by another call.
func (m Modification) Stands(po PlacedOrder) bool {
	from, now := m.From, po.Order
	from.Type, now.Type = from.Kind(), now.Kind()
	return po.Open() && po.State != OrderPending && now == from && po.Filled == m.Filled
}

// ModifiedOrder is the order a held or running modify_order changes and
// what it becomes, as read where the call entered (ToolCall.Order with its
// From); ok is false for any other call.
func ModifiedOrder(call ToolCall) (m Modification, ok bool) {
	s := call.Order
	if call.Name != ToolModifyOrder || s == nil || s.From == nil {
		return m, false
	}
	return Modification{ID: s.From.ID, From: s.From.Order, Filled: s.From.Filled, To: s.Order}, true
}
