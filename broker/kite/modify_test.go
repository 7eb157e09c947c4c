package kite

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	kiteconnect "github.com/zerodha/gokiteconnect/v4"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/broker/kitetest"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/gate"
	"github.com/deskbot/deskbot/sizing"
	"github.com/deskbot/deskbot/store/storetest"
)

// mustRead reads desk's modify_order as the executor does where the call
// enters: the desk's own order found, the order it becomes checked and
// sized.
func mustRead(t *testing.T, b *Broker, desk, args string) deskbot.ToolCall {
	t.Helper()
	call, err := readModify(t, b, desk, args)
	if err != nil {
		t.Fatalf("read %s: %v", args, err)
	}
	return call
}

func readModify(t *testing.T, b *Broker, desk, args string) (deskbot.ToolCall, error) {
	t.Helper()
	s := &sizing.Sizer{Market: b, Check: b.Check, Orders: b, Now: time.Now}
	return s.Read(ctxFor(t, 10*time.Second), desk, deskbot.ToolCall{ID: "c1", Name: deskbot.ToolModifyOrder, Arguments: json.RawMessage(args)})
}

func mustModify(t *testing.T, b *Broker, desk, key string, call deskbot.ToolCall) deskbot.PlacedOrder {
	t.Helper()
	m, ok := deskbot.ModifiedOrder(call)
	if !ok {
		t.Fatalf("%+v is not read as a modification", call)
	}
	po, err := b.ModifyOrder(ctxFor(t, 30*time.Second), desk, key, m)
	if err != nil {
		t.Fatalf("ModifyOrder(%s, %+v): %v", desk, m, err)
	}
	return po
}

func modifyArgs(id string, price float64) string {
	return fmt.Sprintf(`{"order_id":%q,"price":%v}`, id, price)
}

// A modification whose answer Kite loses is read back, not sent again:
// one allowed call, one modification at Kite, recorded once; asked again
// with its key it answers and sends nothing.
func TestModificationLostAnswerMakesOneModification(t *testing.T) {
	for _, how := range []kitetest.Loss{kitetest.LoseByDrop, kitetest.LoseBy504} {
		t.Run(fmt.Sprint(how), func(t *testing.T) {
			r := mustRig(t)
			b, _ := r.mustBroker(t, options{})
			po := mustPlaceOrder(t, b, "alpha", limit("NSE:INFY", deskbot.Buy, 2, 1490))
			call := mustRead(t, b, "alpha", modifyArgs(po.ID, 1485))
			key := deskbottest.NewKey()
			r.kt.LoseAnswers(how, 1)
			got := mustModify(t, b, "alpha", key, call)
			if got, want := mustOrder(t, r.kt, po.ID).Modifications, 1; got != want {
				t.Fatalf("modifications at Kite: %d, want %d", got, want)
			}
			if got.Order.Price != 1485 || len(got.Modifications) != 1 || got.Modifying != "" || got.State != deskbot.OrderOpen {
				t.Errorf("recorded %+v, want open at 1,485 with one modification", got)
			}
			again := mustModify(t, b, "alpha", key, call)
			if got, want := r.kt.Requests(http.MethodPut, "/orders/*/*"), 1; got != want {
				t.Errorf("modifications sent: %d, want %d", got, want)
			}
			if len(again.Modifications) != 1 || again.Order.Price != 1485 {
				t.Errorf("asked again: %+v, want the order as modified once", again)
			}
		})
	}
}

// The desk's algo id goes with every modification it makes.
func TestAlgoIDReachesKiteOnEveryModification(t *testing.T) {
	r := mustRig(t)
	b, _ := r.mustBroker(t, options{deskAlgoIDs: map[string]string{"alpha": "ALGO7"}})
	po := mustPlaceOrder(t, b, "alpha", limit("NSE:INFY", deskbot.Buy, 2, 1490))
	for _, args := range []string{modifyArgs(po.ID, 1485), `{"order_id":"` + po.ID + `","quantity":3}`, `{"order_id":"` + po.ID + `","order_type":"SL","price":1600,"trigger_price":1590}`} {
		mustModify(t, b, "alpha", deskbottest.NewKey(), mustRead(t, b, "alpha", args))
	}
	if got, want := strings.Join(mustOrder(t, r.kt, po.ID).ModifyAlgoIDs, ","), "ALGO7,ALGO7,ALGO7"; got != want {
		t.Errorf("algo ids of the modifications at Kite: %q, want %q", got, want)
	}
}

// An order is modified at most 25 times, counted in the order's record
// that every instance shares: the 26th is refused before it is read as
// anything to ask about, and the broker refuses it too, sending nothing.
func TestAtMost25ModificationsAcrossInstances(t *testing.T) {
	r := mustRig(t)
	one, _ := r.mustBroker(t, options{})
	two, _ := r.mustBroker(t, options{})
	po := mustPlaceOrder(t, one, "alpha", limit("NSE:INFY", deskbot.Buy, 2, 1400))
	for i := range deskbot.MaxModifications {
		b := one
		if i%2 == 1 {
			b = two
		}
		mustModify(t, b, "alpha", deskbottest.NewKey(), mustRead(t, b, "alpha", modifyArgs(po.ID, 1300+float64(i))))
	}
	if _, err := readModify(t, two, "alpha", modifyArgs(po.ID, 1350)); deskbot.ErrorCode(err) != deskbot.EINVALID || !strings.Contains(deskbot.ErrorMessage(err), "modified 25 times") {
		t.Fatalf("26th read: %v, want refused for 25 modifications", err)
	}
	last := mustOrderOf(t, one, "alpha", po.ID)
	m := deskbot.Modification{ID: po.ID, From: last.Order, Filled: last.Filled, To: limit("INFY", deskbot.Buy, 2, 1350)}
	if _, err := one.ModifyOrder(ctxFor(t, 10*time.Second), "alpha", deskbottest.NewKey(), m); deskbot.ErrorCode(err) != deskbot.ECONFLICT {
		t.Fatalf("26th modification: %v, want ECONFLICT", err)
	}
	if got, want := modificationsServed(r.kt), deskbot.MaxModifications; got != want {
		t.Errorf("modifications Kite answered: %d, want %d (the 26th never sent)", got, want)
	}
	if got, want := mustOrder(t, r.kt, po.ID).Modifications, deskbot.MaxModifications; got != want {
		t.Errorf("modifications at Kite: %d, want %d", got, want)
	}
}

// modificationsServed counts the modifications Kite answered other than
// with a 429 (refused before any work, and sent again).
func modificationsServed(kt *kitetest.Server) int {
	n := 0
	for _, c := range kt.Calls() {
		if c.Method == http.MethodPut && c.Status != http.StatusTooManyRequests {
			n++
		}
	}
	return n
}

// The hostile desk: whatever it names, a modification of anything but its
// own open order, or one that Kite's rules refuse, is refused where the
// call enters (nobody is asked), and nothing reaches Kite.
func TestModifyRefusesWhatIsNotTheDesksOwnOpenOrder(t *testing.T) {
	b, r := mustDataBroker(t)
	mine := mustPlaceOrder(t, b, "alpha", limit("NSE:INFY", deskbot.Buy, 2, 1490))
	theirs := mustPlaceOrder(t, b, "beta", limit("NSE:INFY", deskbot.Buy, 2, 1490))
	done := mustPlaceOrder(t, b, "alpha", limit("NSE:INFY", deskbot.Buy, 1, 1480))
	if _, err := b.CancelOrder(ctxFor(t, 10*time.Second), "alpha", done.ID); err != nil {
		t.Fatal(err)
	}
	option := mustPlaceOrder(t, b, "alpha", limit("NFO:NIFTY26DEC24300CE", deskbot.Buy, 75, 250))
	placeByHand(t, b.kite, kiteconnect.OrderParams{Exchange: "NSE", Tradingsymbol: "INFY", TransactionType: "BUY", OrderType: "LIMIT", Price: 1400, Quantity: 1, Product: "MIS", Validity: "DAY"})
	var byHand string
	for _, o := range r.kt.Orders() {
		if o.Tag == "" {
			byHand = o.ID
		}
	}
	for _, tc := range []struct{ name, args, says string }{
		{"another desk's order", modifyArgs(theirs.ID, 1485), "no order"},
		{"an order placed by hand at Kite", modifyArgs(byHand, 1485), "no order"},
		{"its order by its tag", modifyArgs(mine.Tag, 1485), "no order"},
		{"a made-up id", modifyArgs("999999", 1485), "no order"},
		{"an order no longer open", modifyArgs(done.ID, 1485), "cancelled"},
		{"a price of ₹0", modifyArgs(mine.ID, 0), "price greater than 0"},
		{"a negative quantity", `{"order_id":"` + mine.ID + `","quantity":-2}`, "greater than 0"},
		{"a quantity off the lot", `{"order_id":"` + option.ID + `","quantity":100}`, "lot"},
		{"a price off the tick", modifyArgs(mine.ID, 1485.03), "tick"},
		{"a symbol", `{"order_id":"` + mine.ID + `","symbol":"TCS"}`, "has no argument"},
		{"a side", `{"order_id":"` + mine.ID + `","side":"sell"}`, "has no argument"},
		{"nothing to change", `{"order_id":"` + mine.ID + `"}`, "at least one"},
		{"no change", modifyArgs(mine.ID, 1490), "as it is"},
		{"the order id twice", `{"order_id":"` + theirs.ID + `","order_id":"` + mine.ID + `","price":1485}`, "twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readModify(t, b, "alpha", tc.args)
			if deskbot.ErrorCode(err) != deskbot.EINVALID || !strings.Contains(deskbot.ErrorMessage(err), tc.says) {
				t.Fatalf("got %v, want refused saying %q", err, tc.says)
			}
		})
	}
	// The broker refuses the same, whoever calls it: another desk's order.
	call := mustRead(t, b, "beta", modifyArgs(theirs.ID, 1485))
	m, _ := deskbot.ModifiedOrder(call)
	if _, err := b.ModifyOrder(ctxFor(t, 10*time.Second), "alpha", deskbottest.NewKey(), m); deskbot.ErrorCode(err) != deskbot.ENOTFOUND {
		t.Errorf("alpha modifying beta's order: %v, want ENOTFOUND", err)
	}
	if got := r.kt.Requests(http.MethodPut, "/orders/*/*"); got != 0 {
		t.Fatalf("modifications sent: %d, want none", got)
	}
	if got := mustOrder(t, r.kt, theirs.ID); got.Price != 1490 || got.Modifications != 0 {
		t.Errorf("beta's order at Kite: %+v, want unchanged", got)
	}
}

// An order that changed at Kite since the modification was shown (a part
// filled) is not modified: the approver said yes to another order.
func TestModificationOfAnOrderChangedSinceShownDoesNotRun(t *testing.T) {
	r := mustRig(t)
	b, _ := r.mustBroker(t, options{})
	po := mustPlaceOrder(t, b, "alpha", limit("NSE:INFY", deskbot.Buy, 4, 1490))
	call := mustRead(t, b, "alpha", `{"order_id":"`+po.ID+`","quantity":6}`)
	if err := r.kt.FillPartly(po.ID, 1); err != nil {
		t.Fatal(err)
	}
	mustSync(t, b)
	m, _ := deskbot.ModifiedOrder(call)
	_, err := b.ModifyOrder(ctxFor(t, 10*time.Second), "alpha", deskbottest.NewKey(), m)
	if deskbot.ErrorCode(err) != deskbot.ECONFLICT || !strings.Contains(deskbot.ErrorMessage(err), "changed since the modification was shown") {
		t.Fatalf("got %v, want ECONFLICT saying it changed since it was shown", err)
	}
	if got := r.kt.Requests(http.MethodPut, "/orders/*/*"); got != 0 {
		t.Fatalf("modifications sent: %d, want none", got)
	}
}

// A modification is checked by the desk's hard limits as the order it
// becomes: one that would grow the desk's position past its limit is
// refused before anyone is asked; one that shrinks it passes.
func TestModificationGrowingAPositionPastTheLimitIsRefused(t *testing.T) {
	r := mustRig(t)
	b, _ := r.mustBroker(t, options{})
	st := storetest.MustReopen(t, r.st)
	po := mustPlaceOrder(t, b, "alpha", limit("NSE:INFY", deskbot.Buy, 5, 1490))
	limits := &gate.HardLimits{
		Policies: deskbot.Policies{"alpha": {deskbot.ToolPlaceOrder: {MaxPositionNotional: 10_000}}},
		Broker:   b, Requests: st, Counter: st, Audit: st, Now: r.clock.Now,
	}
	for _, tc := range []struct {
		qty     float64
		refused bool
	}{{8, true}, {6, false}, {3, false}} {
		call := mustRead(t, b, "alpha", fmt.Sprintf(`{"order_id":%q,"quantity":%v}`, po.ID, tc.qty))
		release, refusal := limits.Check(ctxFor(t, 10*time.Second), "alpha", call)
		if release != nil {
			release()
		}
		if got := refusal != ""; got != tc.refused {
			t.Errorf("quantity %v: refusal %q, want refused %v", tc.qty, refusal, tc.refused)
		}
		if tc.refused && !strings.Contains(refusal, "position limit") {
			t.Errorf("quantity %v: refusal %q, want it to name the position limit", tc.qty, refusal)
		}
	}
	if got := r.kt.Requests(http.MethodPut, "/orders/*/*"); got != 0 {
		t.Fatalf("modifications sent: %d, want none", got)
	}
}

// A process that sent a modification and died before recording Kite's
// answer leaves its mark on the order: the call asked again (another
// process) reads the order back from Kite, finds the modification made,
// and records it, sending nothing.
func TestModificationAfterACrashIsReadBackNotSentAgain(t *testing.T) {
	r := mustRig(t)
	dead, _ := r.mustBroker(t, options{})
	po := mustPlaceOrder(t, dead, "alpha", limit("NSE:INFY", deskbot.Buy, 2, 1490))
	call := mustRead(t, dead, "alpha", modifyArgs(po.ID, 1485))
	key := deskbottest.NewKey()
	// What the dead process did: its mark recorded, then the modification
	// sent, and nothing after.
	marked := po
	marked.Modifying, marked.ModifyingAt = broker.Tag(key), r.clock.Now()
	if _, moved, err := dead.orders.Move(ctxFor(t, 10*time.Second), broker.Version(po), marked, true); err != nil || !moved {
		t.Fatalf("mark: %v, %v", moved, err)
	}
	if _, err := dead.kite.modify(ctxFor(t, 10*time.Second), "", po.ID, modifyParams(call.Order.Order, ""), func(kiteconnect.Order) bool { return true }); err != nil {
		t.Fatal(err)
	}
	live, _ := r.mustBroker(t, options{})
	got := mustModify(t, live, "alpha", key, call)
	if got.Order.Price != 1485 || len(got.Modifications) != 1 || got.Modifying != "" {
		t.Errorf("recorded %+v, want at 1,485 modified once, no mark", got)
	}
	if got, want := modificationsServed(r.kt), 1; got != want {
		t.Errorf("modifications Kite answered: %d, want %d", got, want)
	}
}
