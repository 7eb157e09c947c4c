package kite

// GTTs at Kite. Kite's GTT legs carry no tag (the official client sends
// none, and the order a GTT places is untagged), so a desk's GTT is known
// by the order log's record of it: written under the allowed call's tag
// before the GTT is sent (first caller wins), in one step with the check
// that it only closes the position beside the desk's other GTTs
// (broker.OrderLog.StartCheckedGTT), then given Kite's trigger id from
// the answer. One call sends at most one GTT: a record without an
// id is never sent again; a lost answer is settled by Sync from Kite's
// GTT list (an active GTT with exactly its legs that no record claims).
//
// A fired GTT's order is matched in Kite's day's orders (untagged, the
// fired leg's instrument, side, quantity, price and product, placed since
// the GTT, claimed by no record) and recorded as an order of the desk's
// under a tag of its own (broker.FiredKey): from then on Sync follows it
// by its order id like any order, its fills booked into the desk's book
// and told.
//
// A position that shrinks below an active GTT's quantity (a fill, a
// flatten by hand) would let the GTT over-close it, and Kite fires it
// anyway: Sync deletes such a GTT at Kite and tells the desk (its
// Reason); the desk may place a smaller one. A deletion Kite refuses for
// the server's address does not fail Sync (the desks' fills must still be
// booked): the group is told once, and the deletion is asked again every
// gttDeleteEvery.

import (
	"context"
	"math"
	"slices"
	"strconv"
	"time"

	kiteconnect "github.com/zerodha/gokiteconnect/v4"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/words"
)

// PlaceGTT sends GTT params; its trigger id.
func (c *Client) PlaceGTT(ctx context.Context, p kiteconnect.GTTParams) (int, error) {
	var r kiteconnect.GTTResponse
	err := c.call(ctx, c.callLim, "GTT", func(k *kiteconnect.Client) (err error) {
		r, err = k.PlaceGTT(p)
		return err
	})
	return r.TriggerID, err
}

// GTTs is the account's GTTs as Kite lists them.
func (c *Client) GTTs(ctx context.Context) (kiteconnect.GTTs, error) {
	var gs kiteconnect.GTTs
	err := c.call(ctx, c.callLim, "GTT list", func(k *kiteconnect.Client) (err error) {
		gs, err = k.GetGTTs()
		return err
	})
	return gs, err
}

// DeleteGTT deletes an active GTT.
func (c *Client) DeleteGTT(ctx context.Context, id int) error {
	return c.call(ctx, c.callLim, "GTT deletion", func(k *kiteconnect.Client) error {
		_, err := k.DeleteGTT(id)
		return err
	})
}

// gttParams is g in the client's form: a selling GTT (a long's) has its
// stop as the lower trigger and its target as the upper, a buying one the
// other way round.
func gttParams(g deskbot.GTT, last float64) kiteconnect.GTTParams {
	ex, ts := deskbot.InstrumentOf(g.Symbol)
	txn := kiteconnect.TransactionTypeSell
	if g.Side == deskbot.Buy {
		txn = kiteconnect.TransactionTypeBuy
	}
	leg := func(l deskbot.GTTLeg) kiteconnect.TriggerParams {
		return kiteconnect.TriggerParams{TriggerValue: l.Trigger, LimitPrice: l.Price, Quantity: g.Quantity}
	}
	p := kiteconnect.GTTParams{Exchange: ex, Tradingsymbol: ts, LastPrice: last, TransactionType: txn, Product: g.Product}
	switch {
	case g.Target == nil:
		p.Trigger = &kiteconnect.GTTSingleLegTrigger{TriggerParams: leg(g.Stop)}
	case g.Side == deskbot.Sell:
		p.Trigger = &kiteconnect.GTTOneCancelsOtherTrigger{Lower: leg(g.Stop), Upper: leg(*g.Target)}
	default:
		p.Trigger = &kiteconnect.GTTOneCancelsOtherTrigger{Lower: leg(*g.Target), Upper: leg(g.Stop)}
	}
	return p
}

// PlaceGTT places g at Kite for the call key, once: see the file's doc.
func (b *Broker) PlaceGTT(ctx context.Context, desk, key string, g deskbot.GTT) (deskbot.PlacedGTT, error) {
	if err := deskbot.ValidDeskName(desk); err != nil {
		return deskbot.PlacedGTT{}, err
	}
	if key == "" {
		return deskbot.PlacedGTT{}, broker.ErrNoKey
	}
	if g.Product == "" {
		return deskbot.PlacedGTT{}, deskbot.Errorf(deskbot.EINVALID, "product is required at Kite: send one of MIS, NRML or CNC")
	}
	g.Symbol = deskbot.OneSpelling(g.Symbol)
	tag := broker.GTTTag(key)
	if have, err := b.orders.FindGTT(ctx, desk, tag); err == nil {
		return have, gttUnknown(have)
	}
	last, _, err := b.LastPrice(ctx, g.Symbol)
	if err != nil {
		return deskbot.PlacedGTT{}, err
	}
	s, err := b.session(ctx)
	if err != nil {
		return deskbot.PlacedGTT{}, err
	}
	now := b.now()
	rec := deskbot.PlacedGTT{Tag: tag, Desk: desk, GTT: g, State: deskbot.GTTActive, At: now, Updated: now}
	// Checked and recorded as one step: a GTT of the desk's placed at the
	// same time is checked against this one's record, and this one
	// against its.
	got, existed, err := b.orders.StartCheckedGTT(ctx, rec, b, b.Check)
	if err != nil || existed {
		if err == nil {
			err = gttUnknown(got)
		}
		return got, err
	}
	if b.admit != nil {
		// The send's last check, as an order's: a halt or the square-off
		// since the call was allowed refuses it, and it ends not placed.
		if err := b.admit(ctx, desk, g.LegOrder(g.Stop), func(ctx context.Context) (deskbot.Book, error) { return b.orders.Book(ctx, desk, nil) }); err != nil {
			return b.gttNotPlaced(ctx, rec, deskbot.ErrorMessage(err), err)
		}
	}
	id, err := b.kite.PlaceGTT(ctx, gttParams(g, last.Value))
	switch {
	case err == nil && id > 0:
		to := rec
		to.ID, to.Updated = strconv.Itoa(id), b.now()
		got, _, err := b.orders.MoveGTT(ctx, rec, to)
		return got, err
	case IsSession(err):
		return b.gttNotPlaced(ctx, rec, "the Kite session had ended", b.sessionEnded(ctx, s))
	case IsSourceIP(err):
		// Refused for the address before anything was made, as an order
		// is: not placed, the group told (once a day), never sent again.
		b.sourceRefused(ctx)
		return b.gttNotPlaced(ctx, rec, "Kite refused orders from this server's address (not in the Kite app's IP whitelist)", err)
	case deskbot.ErrorCode(err) == deskbot.EINVALID:
		return b.gttNotPlaced(ctx, rec, deskbot.ErrorMessage(err), err)
	default:
		// Kite's answer is lost: the GTT may exist. Sync settles it from
		// Kite's list; it is never sent again.
		b.log.WarnContext(ctx, "kite: a GTT's outcome is not known yet", "desk", desk, "tag", tag, "err", err)
		return rec, gttUnknown(rec)
	}
}

// gttUnknown is the answer to a GTT asked again: nil once Kite's id is
// known, else the words of a lost answer.
func gttUnknown(g deskbot.PlacedGTT) error {
	if g.ID != "" || g.State != deskbot.GTTActive {
		return nil
	}
	return deskbot.Errorf(deskbot.EUNAVAILABLE, "Kite's answer to the GTT (%s) was lost, so whether it was placed is not known yet; get_orders will show it once Kite's GTT list does. Do not place it again.", words.GTTLine(g))
}

// gttNotPlaced records rec as never placed and answers err.
func (b *Broker) gttNotPlaced(ctx context.Context, rec deskbot.PlacedGTT, why string, err error) (deskbot.PlacedGTT, error) {
	to := rec
	to.State, to.Reason, to.Updated = deskbot.GTTRejected, why, b.now()
	got, _, merr := b.orders.MoveGTT(ctx, rec, to)
	if merr != nil {
		return got, merr
	}
	return got, err
}

// GTTs is the desk's GTTs as last read from Kite.
func (b *Broker) GTTs(ctx context.Context, desk string) ([]deskbot.PlacedGTT, error) {
	return b.orders.GTTs(ctx, desk)
}

// CancelGTT deletes one of the desk's own active GTTs at Kite: an id the
// desk's GTTs do not hold is ENOTFOUND, and nothing is sent.
func (b *Broker) CancelGTT(ctx context.Context, desk, id string) (deskbot.PlacedGTT, error) {
	g, err := b.orders.FindGTT(ctx, desk, id)
	if err != nil {
		return g, err
	}
	return b.deleteGTT(ctx, g, "deleted by the desk")
}

func (b *Broker) deleteGTT(ctx context.Context, g deskbot.PlacedGTT, why string) (deskbot.PlacedGTT, error) {
	if g.State != deskbot.GTTActive {
		return g, deskbot.Errorf(deskbot.ECONFLICT, "GTT %s is %s already; only an active GTT can be deleted.", gttName(g), g.State)
	}
	if g.ID == "" {
		return g, deskbot.Errorf(deskbot.ECONFLICT, "GTT %s is not confirmed by Kite yet, so it cannot be deleted yet.", g.Tag)
	}
	id, _ := strconv.Atoi(g.ID)
	s, err := b.session(ctx)
	if err != nil {
		return g, err
	}
	if err := b.kite.DeleteGTT(ctx, id); IsSession(err) {
		return g, b.sessionEnded(ctx, s)
	} else if IsSourceIP(err) {
		b.sourceRefused(ctx)
		return g, err
	} else if err != nil && deskbot.ErrorCode(err) != deskbot.EINVALID {
		return g, err
	} else if err != nil {
		// Refused: most often it fired or ended meanwhile. Sync reads it.
		return g, deskbot.Errorf(deskbot.ECONFLICT, "Kite did not delete GTT %s: %s", g.ID, deskbot.ErrorMessage(err))
	}
	to := g
	to.State, to.Reason, to.Updated = deskbot.GTTDeleted, why, b.now()
	got, moved, err := b.orders.MoveGTT(ctx, g, to)
	if err == nil && !moved {
		err = deskbot.Errorf(deskbot.ECONFLICT, "GTT %s is %s now.", gttName(got), got.State)
	}
	return got, err
}

func gttName(g deskbot.PlacedGTT) string {
	if g.ID != "" {
		return g.ID
	}
	return g.Tag
}

// deleteGTTs deletes the desk's active GTTs, for a flatten. One not yet
// confirmed by Kite, or whose deletion Kite refuses (for the server's
// address too), is left, said why.
func (b *Broker) deleteGTTs(ctx context.Context, desk, why string) ([]deskbot.PlacedGTT, []string, error) {
	gs, err := b.orders.GTTs(ctx, desk)
	if err != nil {
		return nil, nil, err
	}
	var out []deskbot.PlacedGTT
	var left []string
	for _, g := range gs {
		if g.State != deskbot.GTTActive {
			continue
		}
		d, err := b.deleteGTT(ctx, g, why)
		switch {
		case err == nil:
			out = append(out, d)
		case deskbot.ErrorCode(err) == deskbot.ECONFLICT || IsSourceIP(err):
			// Left, said why: a refusal for the address is mended only at
			// the console, so trying again now would only be refused again.
			left = append(left, g.GTT.Symbol+": "+deskbot.ErrorMessage(err))
		default:
			return out, left, err
		}
	}
	return out, left, nil
}

// kiteGTTState is Kite's status in deskbot's words.
func kiteGTTState(status string) deskbot.GTTState {
	switch status {
	case "active":
		return deskbot.GTTActive
	case "triggered":
		return deskbot.GTTTriggered
	case "deleted", "cancelled":
		return deskbot.GTTDeleted
	case "expired":
		return deskbot.GTTExpired
	case "rejected":
		return deskbot.GTTRejected
	}
	return deskbot.GTTDisabled
}

// syncGTTs reads Kite's GTT list while any desk's GTT is active and moves
// each to what Kite says: see the file's doc. orders are Kite's day's
// orders, where a fired GTT's order is found. It returns how many moved.
func (b *Broker) syncGTTs(ctx context.Context, orders []kiteconnect.Order) (int, error) {
	active, err := b.orders.ActiveGTTs(ctx)
	if err != nil || len(active) == 0 {
		return 0, err
	}
	list, err := b.kite.GTTs(ctx)
	if err != nil {
		return 0, err
	}
	// GTTs no longer active (fired, deleted by hand, expired) are never
	// asked for again.
	b.deletions.Keep(func(tag string) bool {
		return slices.ContainsFunc(active, func(g deskbot.PlacedGTT) bool { return g.Tag == tag })
	})
	claimed := map[string]bool{}
	for _, d := range b.desks {
		gs, err := b.orders.GTTs(ctx, d)
		if err != nil {
			return 0, err
		}
		for _, g := range gs {
			claimed[g.ID] = true
		}
	}
	n := 0
	for _, rec := range active {
		i := slices.IndexFunc(list, func(k kiteconnect.GTT) bool { return strconv.Itoa(k.ID) == rec.ID })
		if rec.ID == "" {
			i = slices.IndexFunc(list, func(k kiteconnect.GTT) bool { return !claimed[strconv.Itoa(k.ID)] && sameLegs(rec.GTT, k) })
			to := rec
			switch {
			case i >= 0:
				to.ID = strconv.Itoa(list[i].ID)
				claimed[to.ID] = true
			case b.now().Sub(rec.Updated) >= b.settle:
				to.State, to.Reason = deskbot.GTTRejected, "Kite's GTT list shows no such GTT: it was never placed"
			default:
				continue
			}
			to.Updated = b.now()
			if _, moved, err := b.orders.MoveGTT(ctx, rec, to); err != nil {
				return n, err
			} else if moved {
				n++
			}
			continue
		}
		to := rec
		if i < 0 {
			to.State, to.Reason = deskbot.GTTExpired, "Kite no longer lists it"
		} else {
			k := list[i]
			to.State = kiteGTTState(k.Status)
			if k.Meta.RejectionReason != "" {
				to.Reason = clip(k.Meta.RejectionReason, maxMessage)
			}
		}
		switch to.State {
		case deskbot.GTTActive:
			moved, err := b.overCloses(ctx, rec, active)
			if err != nil {
				return n, err
			}
			if moved {
				n++
			}
			continue
		case deskbot.GTTTriggered:
			fired, ok, err := b.recordFired(ctx, rec, list[i], orders)
			if err != nil {
				return n, err
			}
			if !ok {
				continue // its order is not in Kite's list yet
			}
			to.Fired = fired.Tag
		}
		to.Updated = b.now()
		if _, moved, err := b.orders.MoveGTT(ctx, rec, to); err != nil {
			return n, err
		} else if moved {
			n++
		}
	}
	return n, nil
}

// sameLegs reports whether Kite's GTT k is g: its instrument, side,
// product, triggers, limits and quantities.
func sameLegs(g deskbot.GTT, k kiteconnect.GTT) bool {
	p := gttParams(g, 0)
	if k.Condition.Exchange != p.Exchange || k.Condition.Tradingsymbol != p.Tradingsymbol || !slices.Equal(k.Condition.TriggerValues, p.Trigger.TriggerValues()) || len(k.Orders) != len(p.Trigger.TriggerValues()) {
		return false
	}
	for i, o := range k.Orders {
		if o.TransactionType != p.TransactionType || o.Product != p.Product || o.Price != p.Trigger.LimitPrices()[i] || o.Quantity != p.Trigger.Quantities()[i] {
			return false
		}
	}
	return true
}

// recordFired finds the order Kite placed for rec's fired GTT k among
// Kite's day's orders and records it as the desk's (told): ok is false
// while Kite's orders do not show it yet.
func (b *Broker) recordFired(ctx context.Context, rec deskbot.PlacedGTT, k kiteconnect.GTT, orders []kiteconnect.Order) (deskbot.PlacedOrder, bool, error) {
	ex, ts := deskbot.InstrumentOf(rec.GTT.Symbol)
	tag := broker.Tag(broker.FiredKey(rec.Tag))
	day := deskbot.OrderDay(b.now())
	if po, err := b.orders.Order(ctx, rec.Desk, day, tag); err == nil {
		return po, true, nil
	}
	taken := map[string]bool{}
	for _, d := range b.desks {
		os, err := b.orders.Orders(ctx, d, day)
		if err != nil {
			return deskbot.PlacedOrder{}, false, err
		}
		for _, po := range os {
			taken[po.ID] = true
		}
	}
	for _, ko := range orders {
		if ko.Tag != "" || taken[ko.OrderID] || ko.Exchange != ex || ko.TradingSymbol != ts || ko.OrderType != kiteconnect.OrderTypeLimit || ko.Product != rec.GTT.Product ||
			ko.OrderTimestamp.Time.Before(k.CreatedAt.Time) || !isLeg(rec.GTT, ko) {
			continue
		}
		o := rec.GTT.LegOrder(deskbot.GTTLeg{Price: ko.Price})
		o.Quantity = ko.Quantity
		start := deskbot.PlacedOrder{ID: ko.OrderID, Tag: tag, Desk: rec.Desk, Order: o, State: deskbot.OrderOpen, At: ko.OrderTimestamp.Time, Updated: b.now()}
		got, existed, err := b.orders.Start(ctx, start)
		if err != nil || existed {
			return got, err == nil, err
		}
		if err := b.orders.Tell(ctx, got); err != nil {
			return got, true, err
		}
		po, _, err := b.advance(ctx, got, fromKite(got, ko), false)
		return po, true, err
	}
	return deskbot.PlacedOrder{}, false, nil
}

// isLeg reports whether Kite's order ko is one of g's legs.
func isLeg(g deskbot.GTT, ko kiteconnect.Order) bool {
	side := kiteconnect.TransactionTypeSell
	if g.Side == deskbot.Buy {
		side = kiteconnect.TransactionTypeBuy
	}
	if ko.TransactionType != side || ko.Quantity != g.Quantity {
		return false
	}
	for _, l := range g.Legs() {
		if ko.Price == l.Price {
			return true
		}
	}
	return false
}

// overCloses deletes rec at Kite when the desk's position no longer holds
// its quantity on the side it closes, beside the desk's older active GTTs
// on it (Kite would fire them anyway, and together they would open the
// other side), and reports whether it did. active are every desk's active
// GTTs, oldest first.
func (b *Broker) overCloses(ctx context.Context, rec deskbot.PlacedGTT, active []deskbot.PlacedGTT) (bool, error) {
	book, err := b.orders.Book(ctx, rec.Desk, nil)
	if err != nil {
		return false, err
	}
	var older []deskbot.PlacedGTT
	for _, g := range active {
		if g.Tag == rec.Tag {
			break
		}
		if g.Desk == rec.Desk {
			older = append(older, g)
		}
	}
	have := deskbot.Held(book, rec.GTT.Symbol)
	if rec.GTT.Side == deskbot.Buy {
		have = -have
	}
	have -= deskbot.Covered(older, rec.GTT.Symbol, rec.GTT.Side)
	if have >= rec.GTT.Quantity-1e-9 {
		return false, nil
	}
	if !b.deletions.Due(rec.Tag, b.now()) {
		return false, nil
	}
	why := "deleted: the desk's position (" + words.Quantity(math.Max(have, 0)) + ") is smaller than its quantity now, and it must never open the other side; place a smaller one"
	_, err = b.deleteGTT(ctx, rec, why)
	switch {
	case deskbot.ErrorCode(err) == deskbot.ECONFLICT:
		return false, nil // it fired or ended meanwhile: the next read says which
	case IsSourceIP(err):
		// Mended only at the console, and Sync must go on booking the
		// desks' fills: the group is told once, and the deletion is asked
		// again after a backoff rather than at every Sync.
		b.deletionRefused(ctx, rec, math.Max(have, 0))
		return false, nil
	case err != nil:
		return false, err
	}
	b.deletions.Done(rec.Tag)
	return true, nil
}

// gttDeleteEvery is how long an over-closing GTT whose deletion Kite
// refused for the server's address waits before Sync asks again: long
// enough not to knock at every Sync (a refusal only the developer
// console mends), short enough that the GTT goes soon after it is mended.
const gttDeleteEvery = 10 * time.Minute

// deletionRefused notes that Kite refused rec's deletion for the server's
// address, so Sync asks again only after gttDeleteEvery, and tells the
// group, once for the GTT (gttKeptKey), that it over-closes the desk's
// have and is still at Kite.
func (b *Broker) deletionRefused(ctx context.Context, rec deskbot.PlacedGTT, have float64) {
	now := b.now()
	b.deletions.Failed(rec.Tag, now)
	b.log.WarnContext(ctx, "kite: an over-closing GTT's deletion was refused for the server's address; asked again later", "desk", rec.Desk, "gtt", rec.ID, "again", gttDeleteEvery)
	first, err := b.login.notes.PutNoteOnce(ctx, gttKeptKey(rec.Tag), "1", gttKeptFor)
	if err != nil || !first {
		return
	}
	e := deskbot.Event{Kind: deskbot.EventBroker, Desk: rec.Desk, Time: now, Text: words.GTTKept(rec, have, gttDeleteEvery)}
	if err := b.login.events.Publish(ctx, e); err != nil {
		b.log.WarnContext(ctx, "kite: could not tell the group of a GTT whose deletion was refused", "desk", rec.Desk, "err", err)
	}
}

// gttsFollowed reports whether Sync must read Kite's GTTs.
func (b *Broker) gttsFollowed(ctx context.Context) (bool, error) {
	active, err := b.orders.ActiveGTTs(ctx)
	return len(active) > 0, err
}
