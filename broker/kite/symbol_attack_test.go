package kite

import (
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/deskbottest"
)

// An order recorded as "NSE:INFY" (by any caller of the order log) and one
// as "INFY" are booked as one position, under one position limit, and
// Unowned counts the account's INFY as the desk's, with no negative twin.
func TestOrdersUnderEitherSpellingAreOnePosition(t *testing.T) {
	r := mustRig(t)
	b, _ := r.mustBroker(t, options{})
	ctx := ctxFor(t, 30*time.Second)
	mustLongUnderNSE(t, r, b)

	// A buy of the bare symbol.
	mustPlaceOrder(t, b, "alpha", market("INFY", deskbot.Buy, 5))
	mustSync(t, b)

	bk := mustBookOf(t, b, "alpha")
	if len(bk.Positions) != 1 {
		t.Errorf("alpha's book: %+v, want one INFY position of 15", bk.Positions)
	}
	b.desks = []string{"alpha"}
	un, err := b.Unowned(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(un) != 0 {
		t.Errorf("Unowned: %+v, want none: every INFY the account holds is alpha's", un)
	}
}

// A position from an order recorded as "NSE:INFY" is closed by a flatten
// whose closing order is booked as "INFY": the account at Kite and the
// desk's book are both flat, not a long and a short of the same size.
func TestFlattenOfAPositionRecordedUnderNSELeavesTheBookFlat(t *testing.T) {
	r := mustRig(t)
	b, _ := r.mustBroker(t, options{})
	mustLongUnderNSE(t, r, b)

	rep := mustFlattenDesk(t, b, "alpha")
	if len(rep.Placed) != 1 || len(rep.Left) != 0 {
		t.Fatalf("flatten: %+v, want one closing order", rep)
	}
	mustSync(t, b)
	if got := mustNet(t, b)["NSE:INFY CNC"]; got != 0 {
		t.Fatalf("the account holds %d INFY after the flatten, want 0", got)
	}
	if bk := mustBookOf(t, b, "alpha"); len(bk.Positions) != 0 {
		t.Errorf("alpha's book after the flatten: %+v, want flat, as the account is", bk.Positions)
	}
}

// LastPrices prices each of the symbols asked for, in whichever spelling:
// asked for both spellings of one instrument, it answers both from the
// one read of Kite's key.
func TestLastPricesAnswersEverySpellingAskedFor(t *testing.T) {
	r := mustRig(t)
	b, _ := r.mustBroker(t, options{})
	got, err := b.LastPrices(ctxFor(t, 10*time.Second), []string{"INFY", "NSE:INFY"})
	if err != nil {
		t.Fatal(err)
	}
	for _, sym := range []string{"INFY", "NSE:INFY"} {
		if _, ok := got[sym]; !ok {
			t.Errorf("no price for %s: %v", sym, got)
		}
	}
}

// mustLongUnderNSE has desk alpha buy 10 INFY CNC at Kite through an order
// recorded under the exchange's spelling, "NSE:INFY", as a caller of the
// order log other than PlaceOrder may write it, and books its fill.
func mustLongUnderNSE(t *testing.T, r *rig, b *Broker) {
	t.Helper()
	ctx := ctxFor(t, 30*time.Second)
	o := market("NSE:INFY", deskbot.Buy, 10)
	o.Product = deskbot.ProductCNC
	tag := broker.Tag(deskbottest.NewKey())
	now := r.clock.Now()
	rec, _, err := b.orders.Start(ctx, deskbot.PlacedOrder{Tag: tag, Desk: "alpha", Order: o, State: deskbot.OrderPending, At: now, Updated: now})
	if err != nil {
		t.Fatal(err)
	}
	params, variety, err := orderParams(rec.Order)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.kite.Place(ctx, tag, params, variety); err != nil {
		t.Fatal(err)
	}
	mustSync(t, b)
}
