package kite

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker/brokertest"
	"github.com/deskbot/deskbot/broker/kitetest"
	"github.com/deskbot/deskbot/deskbottest"
)

// infyStop is a GTT closing a long of qty INFY in MIS: a stop at 1,450
// (limit 1,445) and a target at 1,600 (limit 1,595).
func infyStop(qty float64) deskbot.GTT {
	return deskbot.GTT{Symbol: "INFY", Side: deskbot.Sell, Quantity: qty, Product: deskbot.ProductMIS,
		Stop: deskbot.GTTLeg{Trigger: 1450, Price: 1445}, Target: &deskbot.GTTLeg{Trigger: 1600, Price: 1595}}
}

func mustPlaceGTT(t *testing.T, b *Broker, desk string, g deskbot.GTT) deskbot.PlacedGTT {
	t.Helper()
	pg, err := b.PlaceGTT(ctxFor(t, 30*time.Second), desk, deskbottest.NewKey(), g)
	if err != nil {
		t.Fatalf("PlaceGTT(%s): %v", desk, err)
	}
	return pg
}

func fakeGTT(t *testing.T, kt *kitetest.Server, id string) kitetest.GTT {
	t.Helper()
	for _, g := range kt.GTTs() {
		if itoa(g.ID) == id {
			return g
		}
	}
	t.Fatalf("the fake has no GTT %s", id)
	return kitetest.GTT{}
}

func itoa(n int) string { return strconv.Itoa(n) }

// A GTT placed at Kite fires by the fake's price; its order, untagged as
// Kite places it, is the desk's: recorded, told, its fill in the desk's
// book.
func TestGTTFiresIntoTheDesksBookAtKite(t *testing.T) {
	r := mustRig(t)
	b, _ := r.mustBroker(t, options{})
	mustPlaceOrder(t, b, "alpha", market("NSE:INFY", deskbot.Buy, 10))
	mustSync(t, b)
	pg := mustPlaceGTT(t, b, "alpha", infyStop(10))
	if pg.ID == "" || fakeGTT(t, r.kt, pg.ID).Status != kitetest.GTTActive {
		t.Fatalf("got %+v, want an active GTT at Kite", pg)
	}
	r.kt.SetLTP("NSE:INFY", 1449)
	mustSync(t, b)
	mustSync(t, b)
	if got := held(mustBookOf(t, b, "alpha"), "INFY"); got != 0 {
		t.Errorf("alpha holds %v INFY after its stop fired, want 0", got)
	}
	gs, err := b.GTTs(t.Context(), "alpha")
	if err != nil || len(gs) != 1 || gs[0].State != deskbot.GTTTriggered || gs[0].Fired == "" {
		t.Fatalf("GTTs: %+v, %v; want it triggered with its order", gs, err)
	}
	fired := fakeGTT(t, r.kt, pg.ID).FiredOrder
	po := mustOrderOf(t, b, "alpha", fired)
	if po.Tag != gs[0].Fired || po.State != deskbot.OrderComplete || po.Filled != 10 {
		t.Errorf("the fired order in alpha's log: %+v, want complete 10 under %s", po, gs[0].Fired)
	}
	if got := r.tell.versions(po.Tag); len(got) == 0 || got[len(got)-1] != "complete 10" {
		t.Errorf("alpha was told %q of its fired order, want it ending complete 10", got)
	}
	if bk := mustBookOf(t, b, "beta"); len(bk.Positions) != 0 {
		t.Errorf("beta's book: %+v, want nothing of alpha's GTT", bk.Positions)
	}
}

// A flatten deletes the desk's GTTs and cancels its orders in one step;
// the price reaching the deleted stop afterwards places nothing.
func TestFlattenDeletesGTTsAtKite(t *testing.T) {
	r := mustRig(t)
	b, _ := r.mustBroker(t, options{})
	mustPlaceOrder(t, b, "alpha", market("NSE:INFY", deskbot.Buy, 10))
	resting := mustPlaceOrder(t, b, "alpha", limit("NSE:INFY", deskbot.Buy, 1, 1490))
	mustSync(t, b)
	pg := mustPlaceGTT(t, b, "alpha", infyStop(10))
	rep := mustFlattenDesk(t, b, "alpha")
	if len(rep.DeletedGTTs) != 1 || len(rep.Cancelled) != 1 || rep.Cancelled[0].Tag != resting.Tag {
		t.Fatalf("flatten: %+v, want the GTT deleted and the resting order cancelled", rep)
	}
	if got := fakeGTT(t, r.kt, pg.ID).Status; got != kitetest.GTTDeleted {
		t.Errorf("the GTT at Kite is %s, want deleted", got)
	}
	mustSync(t, b)
	placed := r.kt.AllOrdersPlaced()
	r.kt.SetLTP("NSE:INFY", 1400)
	mustSync(t, b)
	if got := r.kt.AllOrdersPlaced(); got != placed {
		t.Errorf("orders at Kite went from %d to %d after the flatten: a deleted GTT fired", placed, got)
	}
	if got := held(mustBookOf(t, b, "alpha"), "INFY"); got != 0 {
		t.Errorf("alpha holds %v INFY, want 0", got)
	}
}

// A GTT that fired just before a flatten, its order still resting, is
// cancelled by the flatten with the desk's other orders: it cannot fill
// into the closed book and open the other side.
func TestGTTFiredDuringAFlattenCannotReopen(t *testing.T) {
	r := mustRig(t)
	b, _ := r.mustBroker(t, options{})
	mustPlaceOrder(t, b, "alpha", market("NSE:INFY", deskbot.Buy, 10))
	mustSync(t, b)
	pg := mustPlaceGTT(t, b, "alpha", infyStop(10))
	r.kt.Hold(true)
	r.kt.SetLTP("NSE:INFY", 1449) // fires; its order rests
	fired := fakeGTT(t, r.kt, pg.ID).FiredOrder
	rep := mustFlattenDesk(t, b, "alpha")
	if len(rep.Placed) != 1 {
		t.Fatalf("flatten: %+v, want one closing order", rep)
	}
	if o, _ := r.kt.Order(fired); o.Status != kitetest.StatusCancelled {
		t.Errorf("the fired GTT's order is %s after the flatten, want cancelled", o.Status)
	}
	r.kt.Hold(false)
	r.kt.SetLTP("NSE:INFY", 1449)
	mustSync(t, b)
	mustSync(t, b)
	if got := held(mustBookOf(t, b, "alpha"), "INFY"); got != 0 {
		t.Errorf("alpha holds %v INFY, want 0", got)
	}
	if got := mustNet(t, b)["NSE:INFY MIS"]; got != 0 {
		t.Errorf("the account holds %d INFY, want 0", got)
	}
}

// The hostile desk at Kite: a GTT that would grow a position, or be
// another desk's, is refused before anything is sent; cancel_gtt of
// another desk's GTT is not found and deletes nothing.
func TestGTTHostileDeskAtKite(t *testing.T) {
	r := mustRig(t)
	b, _ := r.mustBroker(t, options{})
	mustPlaceOrder(t, b, "alpha", market("NSE:INFY", deskbot.Buy, 10))
	mustSync(t, b)
	grow := infyStop(10)
	grow.Side = deskbot.Buy
	grow.Stop, grow.Target = deskbot.GTTLeg{Trigger: 1550, Price: 1555}, nil
	for _, tt := range []struct {
		name, desk string
		g          deskbot.GTT
	}{
		{"grows alpha's long", "alpha", grow},
		{"more than alpha holds", "alpha", infyStop(11)},
		{"alpha's position, from beta", "beta", infyStop(10)},
	} {
		if _, err := b.PlaceGTT(t.Context(), tt.desk, deskbottest.NewKey(), tt.g); deskbot.ErrorCode(err) != deskbot.EINVALID {
			t.Errorf("%s: got %v, want EINVALID", tt.name, err)
		}
	}
	if got := r.kt.Requests("POST", "/gtt/triggers"); got != 0 {
		t.Fatalf("%d GTTs sent to Kite, want none", got)
	}
	pg := mustPlaceGTT(t, b, "alpha", infyStop(10))
	if _, err := b.CancelGTT(t.Context(), "beta", pg.ID); deskbot.ErrorCode(err) != deskbot.ENOTFOUND {
		t.Errorf("beta's cancel of alpha's GTT: got %v, want ENOTFOUND", err)
	}
	if got := r.kt.Requests("DELETE", "/gtt/triggers/*"); got != 0 || fakeGTT(t, r.kt, pg.ID).Status != kitetest.GTTActive {
		t.Errorf("after beta's cancel: %d deletes sent, GTT %s; want none, active", got, fakeGTT(t, r.kt, pg.ID).Status)
	}
}

// A desk's order resting at Kite on the side its GTT would trade closes
// the position as much as a GTT does, and Kite fires a GTT whatever rests:
// a resting sell beside a stop that together sell more than the long
// would open a short when both trade, so the GTT is refused before it is
// sent, and one within what the resting sell leaves is placed.
func TestGTTBesideARestingOrderNeverOverCloses(t *testing.T) {
	r := mustRig(t)
	b, _ := r.mustBroker(t, options{})
	mustPlaceOrder(t, b, "alpha", market("NSE:INFY", deskbot.Buy, 10))
	mustSync(t, b)
	r.kt.Hold(true)
	mustPlaceOrder(t, b, "alpha", limit("NSE:INFY", deskbot.Sell, 4, 1700))
	_, err := b.PlaceGTT(t.Context(), "alpha", deskbottest.NewKey(), infyStop(7))
	if deskbot.ErrorCode(err) != deskbot.EINVALID || !strings.Contains(deskbot.ErrorMessage(err), "open orders") {
		t.Errorf("a GTT of 7 beside a resting sell of 4 on a long of 10: got %v, want EINVALID naming the open orders", err)
	}
	if got := r.kt.Requests("POST", "/gtt/triggers"); got != 0 {
		t.Fatalf("%d GTTs sent to Kite, want none", got)
	}
	mustPlaceGTT(t, b, "alpha", infyStop(6))
}

// A position that shrinks below its GTT's quantity would let Kite fire
// the GTT into the other side: Sync deletes it and says why.
func TestGTTLargerThanThePositionIsDeleted(t *testing.T) {
	r := mustRig(t)
	b, _ := r.mustBroker(t, options{})
	mustPlaceOrder(t, b, "alpha", market("NSE:INFY", deskbot.Buy, 10))
	mustSync(t, b)
	pg := mustPlaceGTT(t, b, "alpha", infyStop(10))
	mustPlaceOrder(t, b, "alpha", market("NSE:INFY", deskbot.Sell, 4))
	mustSync(t, b)
	if got := fakeGTT(t, r.kt, pg.ID).Status; got != kitetest.GTTDeleted {
		t.Errorf("the GTT at Kite is %s, want deleted", got)
	}
	gs, _ := b.GTTs(t.Context(), "alpha")
	if len(gs) != 1 || gs[0].State != deskbot.GTTDeleted || !strings.Contains(gs[0].Reason, "smaller than its quantity") {
		t.Errorf("alpha's GTTs: %+v, want it deleted, saying why", gs)
	}
}

// Two GTTs that together close the position: once it shrinks below their
// sum, the newer is deleted and the older kept.
func TestNewerGTTBeyondThePositionIsDeleted(t *testing.T) {
	r := mustRig(t)
	b, _ := r.mustBroker(t, options{})
	mustPlaceOrder(t, b, "alpha", market("NSE:INFY", deskbot.Buy, 10))
	mustSync(t, b)
	older := mustPlaceGTT(t, b, "alpha", infyStop(6))
	r.clock.Add(time.Second)
	newer := mustPlaceGTT(t, b, "alpha", infyStop(4))
	mustPlaceOrder(t, b, "alpha", market("NSE:INFY", deskbot.Sell, 2))
	mustSync(t, b)
	if got := fakeGTT(t, r.kt, older.ID).Status; got != kitetest.GTTActive {
		t.Errorf("the older GTT is %s, want active", got)
	}
	if got := fakeGTT(t, r.kt, newer.ID).Status; got != kitetest.GTTDeleted {
		t.Errorf("the newer GTT is %s, want deleted", got)
	}
}

// Two GTTs of one desk sent at once, each of its whole long (two held
// calls allowed together, or a Claude Code desk's two calls): each alone
// only closes the long, but both placed would sell twice the long when
// they fire, opening a short with real money. Checked and recorded as one
// step for the desk, one is placed and the other refused in words the
// model can act on; Kite never holds GTTs that together cover more than
// the position.
func TestTwoGTTsAtOnceNeverCoverMoreThanThePosition(t *testing.T) {
	r := mustRig(t)
	m := brokertest.NewMeeting(2)
	b, _ := r.mustBroker(t, options{admit: m.Admit})
	mustPlaceOrder(t, b, "alpha", market("NSE:INFY", deskbot.Buy, 10))
	mustSync(t, b)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() {
			defer m.Ended()
			_, errs[i] = b.PlaceGTT(ctxFor(t, 30*time.Second), "alpha", deskbottest.NewKey(), infyStop(10))
		})
	}
	wg.Wait()
	covered := 0
	for _, g := range r.kt.GTTs() {
		if g.Status == kitetest.GTTActive {
			covered += g.Legs[0].Quantity
		}
	}
	if covered > 10 {
		t.Errorf("Kite holds active GTTs selling %d INFY for a long of 10", covered)
	}
	placed, refused := 0, 0
	for _, err := range errs {
		switch {
		case err == nil:
			placed++
		case deskbot.ErrorCode(err) == deskbot.EINVALID && strings.Contains(deskbot.ErrorMessage(err), "already close"):
			refused++
		default:
			t.Errorf("a GTT: %v, want placed, or refused naming the GTT that already closes the long", err)
		}
	}
	if placed != 1 || refused != 1 {
		t.Errorf("%d placed, %d refused; want one of each", placed, refused)
	}
}
