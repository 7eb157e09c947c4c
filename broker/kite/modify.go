package kite

// Modifications of a desk's open order at Kite (modify_order): one allowed
// call makes at most one. Before anything is sent the order's record is
// marked with the call's tag (PlacedOrder.Modifying, moved from the
// version the approver's view was checked against), so two calls cannot
// modify one order at once, across instances, and a call that finds its
// own mark (a crash after sending, a lost answer) reads the order back
// from Kite before it sends anything again. Kite's answer moves the record
// on: the order as it became, the tag counted among its modifications
// (at most deskbot.MaxModifications), the mark cleared.

import (
	"context"
	"slices"
	"strings"
	"time"

	kiteconnect "github.com/zerodha/gokiteconnect/v4"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/retry"
	"github.com/deskbot/deskbot/words"
)

// modifyParams is the one form of a modification sent to Kite: what o,
// the order as it becomes, trades as (quantity, type, price, trigger,
// validity), market protection for an order at the market (Kite refuses
// API market orders without it), and the desk's algo id, on every
// modification.
func modifyParams(o deskbot.Order, algoID string) kiteconnect.OrderParams {
	p := kiteconnect.OrderParams{OrderType: o.Kind(), Quantity: int(o.Quantity), Validity: kiteconnect.ValidityDay, AlgoID: algoID}
	if !o.AtMarket() {
		p.Price = o.Price
	} else {
		p.MarketProtection = kiteconnect.MarketProtectionAuto
	}
	if k := o.Kind(); k == deskbot.OrderSL || k == deskbot.OrderSLM {
		p.TriggerPrice = o.TriggerPrice
	}
	return p
}

// becomes reports whether Kite's order ko trades as o: the modification
// to o was made.
func becomes(ko kiteconnect.Order, o deskbot.Order) bool {
	p := modifyParams(o, "")
	return ko.OrderType == p.OrderType && ko.Quantity == float64(p.Quantity) && ko.Price == p.Price && ko.TriggerPrice == p.TriggerPrice
}

// ModifyOrder modifies one of the desk's open orders at Kite from m.From
// to m.To for the call key: see the file's comment.
func (b *Broker) ModifyOrder(ctx context.Context, desk, key string, m deskbot.Modification) (deskbot.PlacedOrder, error) {
	if err := deskbot.ValidDeskName(desk); err != nil {
		return deskbot.PlacedOrder{}, err
	}
	if key == "" {
		return deskbot.PlacedOrder{}, broker.ErrNoKey
	}
	if err := b.Check(m.To); err != nil {
		return deskbot.PlacedOrder{}, err
	}
	m.To.Symbol = deskbot.OneSpelling(m.To.Symbol)
	po, err := b.orders.Find(ctx, desk, deskbot.OrderDay(b.now()), m.ID)
	if err != nil || po.ID != m.ID {
		// Only the desk's own orders, by Kite's id: another desk's, one
		// placed by hand, a tag, a made-up id are not there.
		return deskbot.PlacedOrder{}, deskbot.Errorf(deskbot.ENOTFOUND, "This desk has no order %s today; get_orders lists its orders.", m.ID)
	}
	tag := broker.Tag(key)
	if slices.Contains(po.Modifications, tag) {
		return po, nil // made before: asked again, it answers
	}
	s, err := b.session(ctx)
	if err != nil {
		return po, err
	}
	if po.Modifying != "" {
		// A modification that may be at Kite: its outcome is read back
		// before anything else is sent.
		if po, err = b.readBack(ctx, po, tag, m.To); err != nil {
			return po, err
		}
		if slices.Contains(po.Modifications, tag) {
			return po, nil
		}
	}
	if err := broker.CheckModification(po, m); err != nil {
		return po, err
	}
	if b.admit != nil {
		if err := b.admit(ctx, desk, m.To, func(ctx context.Context) (deskbot.Book, error) { return b.orders.Book(ctx, desk, nil) }); err != nil {
			return po, err
		}
	}
	variety := b.cancelVariety(ctx, po)
	marked := po
	marked.Modifying, marked.ModifyingAt, marked.Updated = tag, b.now(), b.now()
	rec, moved, err := b.orders.Move(ctx, broker.Version(po), marked, true)
	if err != nil {
		return po, err
	}
	if !moved {
		return rec, deskbot.Errorf(deskbot.ECONFLICT, "Order %s changed while it was being modified (now %s), so it was not modified; look at it with get_orders and ask again if it still should be.", m.ID, words.PlacedLine(rec))
	}
	ko, err := b.kite.modify(ctx, variety, po.ID, modifyParams(m.To, b.algoIDOf(desk)), func(ko kiteconnect.Order) bool { return becomes(ko, m.To) })
	switch {
	case err == nil:
		return b.modified(ctx, rec, &m.To, ko)
	case IsUnknown(err):
		b.log.WarnContext(ctx, "kite: a modification's outcome is not known yet", "desk", desk, "id", po.ID, "err", scrub(err.Error(), b.kite.secrets()...))
		return rec, deskbot.Errorf(deskbot.EUNAVAILABLE, "Kite's answer to the modification of order %s was lost, so whether it was made is not known yet; it is read back from Kite before anything is sent again. Do not modify it again now.", po.ID)
	case IsSession(err):
		got, _ := b.modified(ctx, rec, nil, nil)
		return got, b.sessionEnded(ctx, s)
	case IsSourceIP(err):
		// Refused for the address before anything was changed: the group
		// is told (once a day), as of a placement.
		b.sourceRefused(ctx)
		got, merr := b.modified(ctx, rec, nil, nil)
		if merr != nil {
			return got, merr
		}
		return got, err
	default:
		// Kite's refusal (the order filled or ended meanwhile, its price
		// bands, its limit of modifications): nothing was changed.
		got, merr := b.modified(ctx, rec, nil, nil)
		if merr != nil {
			return got, merr
		}
		return got, err
	}
}

// readBack settles po's mark (a modification that may be at Kite) from
// Kite's order before anything is sent again: when Kite's order no longer
// trades as the record says, the marked modification was made (as want
// says, for the asking call's own mark; for another call's, as Kite's
// order says); when it still does, it was not, once the settling time
// since the mark has passed. Until then the mark stays and the call is
// refused: nothing is sent while it may land.
func (b *Broker) readBack(ctx context.Context, po deskbot.PlacedOrder, tag string, want deskbot.Order) (deskbot.PlacedOrder, error) {
	h, err := b.kite.OrderHistory(ctx, po.ID)
	if err != nil || len(h) == 0 {
		return po, deskbot.Errorf(deskbot.EUNAVAILABLE, "order %s has a modification whose outcome is not known yet, and Kite could not be read just now; nothing was sent", po.ID)
	}
	ko := h[len(h)-1]
	if !becomes(ko, po.Order) {
		got := adopt(po.Order, ko)
		if po.Modifying == tag && becomes(ko, want) {
			got = want
		}
		return b.modified(ctx, po, &got, &ko)
	}
	if b.now().Sub(po.ModifyingAt) < b.kite.settle {
		return po, deskbot.Errorf(deskbot.EUNAVAILABLE, "order %s has a modification under way; nothing was sent. Look at it with get_orders in a moment.", po.ID)
	}
	return b.modified(ctx, po, nil, &ko)
}

// adopt is o trading as Kite's order ko does.
func adopt(o deskbot.Order, ko kiteconnect.Order) deskbot.Order {
	o.Type, o.Quantity, o.Price, o.TriggerPrice = ko.OrderType, ko.Quantity, ko.Price, ko.TriggerPrice
	return o
}

// modified records the outcome of rec's marked modification: made (to,
// the order as it became, its tag counted) or not (to nil), the mark
// cleared, and ko, Kite's order read back (nil: unread), for its state. A
// record moved meanwhile (a fill heard) is read again and the outcome
// applied to it.
func (b *Broker) modified(ctx context.Context, rec deskbot.PlacedOrder, to *deskbot.Order, ko *kiteconnect.Order) (deskbot.PlacedOrder, error) {
	tag := rec.Modifying
	for range 5 {
		got := rec
		if ko != nil {
			if k := fromKite(rec, *ko); k.Filled >= rec.Filled && !rec.State.Final() {
				got = k
			}
		}
		if to != nil {
			got.Order = *to
			got.Modifications = append(slices.Clone(rec.Modifications), tag)
		}
		got.Modifying, got.ModifyingAt, got.Updated = "", time.Time{}, b.now()
		cur, moved, err := b.orders.Move(ctx, broker.Version(rec), got, true)
		if err != nil || moved {
			return cur, err
		}
		if cur.Modifying != tag {
			return cur, nil // another read settled it
		}
		rec = cur
	}
	return rec, deskbot.Errorf(deskbot.EUNAVAILABLE, "order %s kept changing while its modification was recorded; get_orders shows it as it stands", rec.ID)
}

// modify sends a modification of order id and returns Kite's order read
// back, keeping to the package's rule for orders: a 429 is waited out and
// sent again; a lost answer is never resent blindly: the order is read
// back, a settling time after the loss, and the modification counts as
// made when it trades as made says; only then, if it does not, is it sent
// again. Its errors are classified as Place's: a refusal made nothing, an
// IsUnknown one may have.
func (c *Client) modify(ctx context.Context, variety, id string, p kiteconnect.OrderParams, made func(kiteconnect.Order) bool) (*kiteconnect.Order, error) {
	if variety == "" {
		variety = kiteconnect.VarietyRegular
	}
	resend := retry.Backoff{Min: c.backoffMin, Max: c.backoffMax}
	for {
		maybe := false
		err := c.attempt(ctx, c.orderLim, c.accessToken(), func(k *kiteconnect.Client) (err error) {
			maybe = true
			_, err = k.ModifyOrder(variety, id, p)
			maybe = err != nil && lostAnswer(err)
			return err
		})
		if err == nil {
			ko, _, rerr := c.readBack(ctx, id, made, time.Time{})
			if rerr != nil {
				// Made; its state comes with the next read of the orders.
				return nil, nil
			}
			return &ko, nil
		}
		if !maybe {
			if ctx.Err() != nil {
				return nil, &notSentError{tag: id, err: ctx.Err()}
			}
			if !lostAnswer(err) {
				return nil, c.classify(ctx, "modification", err)
			}
		}
		c.log.Warn("kite: the answer to a modification was lost; reading the order back", "id", id, "error", scrub(errText(err), c.secrets()...))
		ko, ok, rerr := c.readBack(ctx, id, made, c.now().Add(c.settle))
		if rerr != nil {
			return nil, placeUnknown(id, rerr)
		}
		if ok {
			return &ko, nil
		}
		if !open(ko.Status) {
			return &ko, deskbot.Errorf(deskbot.ECONFLICT, "order %s is %s at Kite, so it was not modified", id, strings.ToLower(ko.Status))
		}
		c.log.Warn("kite: the order does not show the modification after a lost answer; sending it again", "id", id)
		if err := c.sleep(ctx, resend.Next()); err != nil {
			return nil, &notSentError{tag: id, err: err}
		}
	}
}

// open reports whether Kite's status leaves an order modifiable.
func open(status string) bool {
	return !(status == "COMPLETE" || strings.HasPrefix(status, "REJECTED") || strings.HasPrefix(status, "CANCELLED"))
}

// readBack reads order id's last state until it says made, or, in a read
// that started no earlier than notBefore, that it is not. Transient
// failures are retried with backoff until ctx ends.
func (c *Client) readBack(ctx context.Context, id string, made func(kiteconnect.Order) bool, notBefore time.Time) (kiteconnect.Order, bool, error) {
	b := retry.Backoff{Min: c.backoffMin, Max: c.backoffMax}
	for {
		start := c.now()
		h, err := c.OrderHistory(ctx, id)
		switch {
		case err == nil && len(h) > 0:
			ko := h[len(h)-1]
			if made(ko) {
				return ko, true, nil
			}
			if !start.Before(notBefore) {
				return ko, false, nil
			}
			if err := c.sleep(ctx, notBefore.Sub(start)); err != nil {
				return ko, false, err
			}
			continue
		case ctx.Err() != nil:
			return kiteconnect.Order{}, false, ctx.Err()
		case err != nil && deskbot.ErrorCode(err) != deskbot.EUNAVAILABLE:
			return kiteconnect.Order{}, false, err
		}
		if err := c.sleep(ctx, b.Next()); err != nil {
			return kiteconnect.Order{}, false, err
		}
	}
}
