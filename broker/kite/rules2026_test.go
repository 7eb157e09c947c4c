package kite

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker/kitetest"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/words"
)

// registered is the address the fake's IP whitelist holds in these tests:
// Linux routes all of 127/8 to the loopback, so a client bound to it
// reaches the fake from an address other than the default 127.0.0.1.
const registered = "127.0.0.2"

// sourceNotices counts the group's notices that Kite refuses the server's
// address.
func sourceNotices(h *heard) int {
	n := 0
	for _, t := range h.texts() {
		if strings.Contains(t, "IP whitelist") {
			n++
		}
	}
	return n
}

// An order from an address the app's IP whitelist lacks is refused by
// Kite: the desk is told it was not placed (place_order's answer), the group is told once (two
// instances, three orders: one notice) in words that name the fix, and
// nothing is sent again. Other calls still work from that address. With
// KITE_SOURCE_IP on the registered address the same orders go through.
func TestOrderFromUnregisteredAddressIsRefusedToldOnceAndNotRetried(t *testing.T) {
	r := mustRig(t)
	r.kt.AllowSources(registered)
	h := &heard{}
	b1, _ := r.mustBroker(t, options{heard: h})
	b2, _ := r.mustBroker(t, options{heard: h})

	for i, b := range []*Broker{b1, b2, b1} {
		po, err := b.PlaceOrder(ctxFor(t, 30*time.Second), "alpha", deskbottest.NewKey(), limit("INFY", deskbot.Buy, 1, 1500))
		if !IsSourceIP(err) {
			t.Fatalf("order %d: err = %v, want Kite's refusal for the address", i, err)
		}
		if got, want := po.State, deskbot.OrderNotPlaced; got != want {
			t.Errorf("order %d: state = %s, want %s", i, got, want)
		}
		if !strings.Contains(deskbot.ErrorMessage(err), "not placed") {
			t.Errorf("order %d: the desk is told %q, which does not say the order was not placed", i, deskbot.ErrorMessage(err))
		}
	}
	if got, want := r.kt.Requests("POST", "/orders/*"), 3; got != want {
		t.Errorf("order requests sent = %d, want %d (one per order, none retried)", got, want)
	}
	if got, want := sourceNotices(h), 1; got != want {
		t.Fatalf("the group was told %d times, want %d: %q", got, want, h.texts())
	}
	notice := h.texts()[len(h.texts())-1]
	for _, want := range []string{"register this server's address in the Kite developer console's IP whitelist", "changes take a week", "KITE_SOURCE_IP"} {
		if !strings.Contains(notice, want) {
			t.Errorf("the notice does not say %q: %s", want, notice)
		}
	}
	// A misconfigured server looks healthy but for its orders.
	if _, err := b1.Sync(ctxFor(t, 10*time.Second)); err != nil {
		t.Errorf("reading the day's orders from the unregistered address: %v", err)
	}
	// Still a while later: nothing sends them again.
	r.clock.Add(5 * time.Minute)
	mustSync(t, b1)
	if got, want := r.kt.Requests("POST", "/orders/*"), 3; got != want {
		t.Errorf("order requests sent after a sync = %d, want %d", got, want)
	}

	b3, _ := r.mustBroker(t, options{heard: h, clientOpts: Options{SourceIP: registered}})
	po := mustPlaceOrder(t, b3, "alpha", limit("INFY", deskbot.Buy, 1, 1500))
	if po.ID == "" || po.State == deskbot.OrderNotPlaced {
		t.Fatalf("from the registered address: %+v, want an order at Kite", po)
	}
	src := r.kt.OrderSources()
	if got, want := src[len(src)-1], registered; got != want {
		t.Errorf("the order left from %s, want %s", got, want)
	}
	if got, want := sourceNotices(h), 1; got != want {
		t.Errorf("the group was told %d times, want %d", got, want)
	}
}

// A cancellation from an unregistered address is refused the same way and
// tells the group; the order stays open, nothing retried.
func TestCancelFromUnregisteredAddressIsRefused(t *testing.T) {
	r := mustRig(t)
	r.kt.Hold(true)
	h := &heard{}
	b, _ := r.mustBroker(t, options{heard: h})
	po := mustPlaceOrder(t, b, "alpha", limit("INFY", deskbot.Buy, 1, 1500))
	r.kt.AllowSources(registered)
	_, err := b.CancelOrder(ctxFor(t, 10*time.Second), "alpha", po.ID)
	if !IsSourceIP(err) {
		t.Fatalf("cancel: err = %v, want Kite's refusal for the address", err)
	}
	if got, want := r.kt.Requests("DELETE", "/orders/*/*"), 1; got != want {
		t.Errorf("cancellations sent = %d, want %d", got, want)
	}
	if got, want := sourceNotices(h), 1; got != want {
		t.Errorf("the group was told %d times, want %d", got, want)
	}
	if ko, _ := r.kt.Order(po.ID); ko.Status != kitetest.StatusOpen {
		t.Errorf("the order is %s at Kite, want still OPEN", ko.Status)
	}
}

// A modification from an unregistered address is refused the same way:
// the group is told once however often the desk asks, the order stays as
// it was, and nothing is sent again.
func TestModificationFromUnregisteredAddressIsRefusedAndTold(t *testing.T) {
	r := mustRig(t)
	r.kt.Hold(true)
	h := &heard{}
	b, _ := r.mustBroker(t, options{heard: h})
	po := mustPlaceOrder(t, b, "alpha", limit("NSE:INFY", deskbot.Buy, 2, 1490))
	r.kt.AllowSources(registered)
	for i := range 2 {
		m, _ := deskbot.ModifiedOrder(mustRead(t, b, "alpha", modifyArgs(po.ID, 1485)))
		got, err := b.ModifyOrder(ctxFor(t, 10*time.Second), "alpha", deskbottest.NewKey(), m)
		if !IsSourceIP(err) {
			t.Fatalf("modification %d: err = %v, want Kite's refusal for the address", i, err)
		}
		if got.Order.Price != 1490 || len(got.Modifications) != 0 || got.Modifying != "" {
			t.Errorf("modification %d: recorded %+v, want the order as it was, unmarked", i, got)
		}
	}
	if got, want := r.kt.Requests(http.MethodPut, "/orders/*/*"), 2; got != want {
		t.Errorf("modifications sent = %d, want %d (one per call, none retried)", got, want)
	}
	if got, want := sourceNotices(h), 1; got != want {
		t.Errorf("the group was told %d times, want %d: %q", got, want, h.texts())
	}
}

// A GTT from an unregistered address is refused by Kite as an order is:
// the desk is told it was not placed (not that Kite's answer was lost),
// its record ends rejected, the group is told once, and nothing is sent
// again.
func TestGTTFromUnregisteredAddressIsRefusedNotLost(t *testing.T) {
	r := mustRig(t)
	h := &heard{}
	b, _ := r.mustBroker(t, options{heard: h})
	mustPlaceOrder(t, b, "alpha", market("NSE:INFY", deskbot.Buy, 10))
	mustSync(t, b)
	r.kt.AllowSources(registered)
	pg, err := b.PlaceGTT(ctxFor(t, 10*time.Second), "alpha", deskbottest.NewKey(), infyStop(10))
	if !IsSourceIP(err) {
		t.Fatalf("GTT: err = %v, want Kite's refusal for the address", err)
	}
	if got, want := pg.State, deskbot.GTTRejected; got != want {
		t.Errorf("the GTT's record is %s, want %s: it was never placed", got, want)
	}
	if got, want := r.kt.Requests(http.MethodPost, "/gtt/triggers"), 1; got != want {
		t.Errorf("GTTs sent = %d, want %d", got, want)
	}
	if got, want := sourceNotices(h), 1; got != want {
		t.Errorf("the group was told %d times, want %d: %q", got, want, h.texts())
	}
	// Once the address is listed, the same GTT is placed: the refused one
	// covers nothing of the position.
	r.kt.AllowSources()
	mustPlaceGTT(t, b, "alpha", infyStop(10))
}

// A GTT's deletion from an unregistered address is refused: the GTT
// stays active, the group is told, and the refusal carries
// deskbot.ESOURCE.
func TestGTTDeletionFromUnregisteredAddressIsRefusedAndTold(t *testing.T) {
	r := mustRig(t)
	h := &heard{}
	b, _ := r.mustBroker(t, options{heard: h})
	mustPlaceOrder(t, b, "alpha", market("NSE:INFY", deskbot.Buy, 10))
	mustSync(t, b)
	pg := mustPlaceGTT(t, b, "alpha", infyStop(10))
	r.kt.AllowSources(registered)
	got, err := b.CancelGTT(ctxFor(t, 10*time.Second), "alpha", pg.ID)
	if !IsSourceIP(err) {
		t.Fatalf("cancel_gtt: err = %v, want Kite's refusal for the address", err)
	}
	// Its code is what a halt, which knows no Kite, leaves it by.
	if got, want := deskbot.ErrorCode(err), deskbot.ESOURCE; got != want {
		t.Errorf("the refusal's code is %s, want %s", got, want)
	}
	if got.State != deskbot.GTTActive || fakeGTT(t, r.kt, pg.ID).Status != kitetest.GTTActive {
		t.Errorf("the GTT is %s here and %s at Kite, want active at both", got.State, fakeGTT(t, r.kt, pg.ID).Status)
	}
	if got, want := sourceNotices(h), 1; got != want {
		t.Errorf("the group was told %d times, want %d: %q", got, want, h.texts())
	}
}

// A flatten (a person's, or a halt's, which the risk rules try again at
// every check until it ends) from an unregistered address: Kite refuses
// the GTT's deletion, the cancel and the closing order alike. The flatten
// ends saying what it left and why rather than failing, so nothing tries
// it again and again against a refusal only the console mends; the group
// is told once.
func TestFlattenFromUnregisteredAddressEndsSayingWhatIsLeft(t *testing.T) {
	r := mustRig(t)
	h := &heard{}
	b, _ := r.mustBroker(t, options{heard: h})
	mustPlaceOrder(t, b, "alpha", market("NSE:INFY", deskbot.Buy, 10))
	mustPlaceOrder(t, b, "alpha", limit("NSE:INFY", deskbot.Buy, 1, 1490))
	mustSync(t, b)
	pg := mustPlaceGTT(t, b, "alpha", infyStop(10))
	r.kt.AllowSources(registered)
	rep := mustFlattenDesk(t, b, "alpha")
	if got, want := len(rep.Left), 3; got != want {
		t.Fatalf("left %d (%q), want %d: the GTT, the resting order and the position", got, rep.Left, want)
	}
	for _, l := range rep.Left {
		if !strings.Contains(l, "IP whitelist") {
			t.Errorf("left %q, which does not say Kite refuses this server's address", l)
		}
	}
	if got := fakeGTT(t, r.kt, pg.ID).Status; got != kitetest.GTTActive {
		t.Errorf("the GTT at Kite is %s, want still active (its deletion was refused)", got)
	}
	if got, want := sourceNotices(h), 1; got != want {
		t.Errorf("the group was told %d times, want %d: %q", got, want, h.texts())
	}
}

// The algo id reaches Kite on every order: KITE_ALGO_ID, or the desk's
// own algo_id; it is kept with the order and shown by get_orders' line.
// Unset, no algo_id is sent at all.
func TestAlgoIDReachesKiteOnEveryOrder(t *testing.T) {
	r := mustRig(t)
	b, _ := r.mustBroker(t, options{algoID: "ALGO1", deskAlgoIDs: map[string]string{"beta": "BETA-7"}})
	plain, _ := r.mustBroker(t, options{})
	tests := []struct {
		name string
		b    *Broker
		desk string
		want string
	}{
		{"KITE_ALGO_ID", b, "alpha", "ALGO1"},
		{"the desk's algo_id", b, "beta", "BETA-7"},
		{"unset", plain, "gamma", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			po := mustPlaceOrder(t, tt.b, tt.desk, market("INFY", deskbot.Buy, 2))
			ko, ok := r.kt.Order(po.ID)
			if !ok {
				t.Fatalf("order %s is not at Kite", po.ID)
			}
			if got := ko.AlgoID; got != tt.want {
				t.Errorf("algo_id at Kite = %q, want %q", got, tt.want)
			}
			if got := mustOrderOf(t, tt.b, tt.desk, po.ID).AlgoID; got != tt.want {
				t.Errorf("algo id kept with the order = %q, want %q", got, tt.want)
			}
			line := words.PlacedLine(po)
			if has := strings.Contains(line, "algo id "+tt.want); has != (tt.want != "") || (tt.want == "" && strings.Contains(line, "algo id")) {
				t.Errorf("get_orders' line %q: algo id %q shown = %v", line, tt.want, has)
			}
			// A flatten's closing order is an order too.
			rep := mustFlattenDesk(t, tt.b, tt.desk)
			if len(rep.Placed) != 1 {
				t.Fatalf("flatten placed %d orders, want 1: %+v", len(rep.Placed), rep)
			}
			if ko, _ := r.kt.Order(rep.Placed[0].ID); ko.AlgoID != tt.want {
				t.Errorf("the closing order's algo_id at Kite = %q, want %q", ko.AlgoID, tt.want)
			}
		})
	}
}

// The 5,001st order of a day is refused, counted across two instances on
// one Redis, in words with the count; nothing reaches Kite for it. Asking
// again for an order already counted counts nothing.
func TestFiveThousandFirstOrderOfTheDayIsRefusedAcrossInstances(t *testing.T) {
	r := mustRig(t)
	b1, _ := r.mustBroker(t, options{})
	b2, _ := r.mustBroker(t, options{})
	ctx := ctxFor(t, 60*time.Second)
	day := deskbot.OrderDay(r.clock.Now())
	// The day's first 4,999 orders, as any instance counted them.
	for i := range 4999 {
		if _, ok, err := r.st.CountAccountOrder(ctx, day, fmt.Sprintf("earlier%d", i), 5000); err != nil || !ok {
			t.Fatalf("counting order %d: ok=%v err=%v", i, ok, err)
		}
	}
	key := deskbottest.NewKey()
	first, err := b1.PlaceOrder(ctx, "alpha", key, limit("INFY", deskbot.Buy, 1, 1500))
	if err != nil || first.ID == "" {
		t.Fatalf("the 5,000th order: %+v, %v", first, err)
	}
	// Asked again (a retry of the same allowed call) on the other
	// instance: the same order, counted once.
	again, err := b2.PlaceOrder(ctx, "alpha", key, limit("INFY", deskbot.Buy, 1, 1500))
	if err != nil || again.ID != first.ID {
		t.Fatalf("asked again: %+v, %v; want order %s", again, err, first.ID)
	}
	sent := r.kt.Requests("POST", "/orders/*")
	po, err := b2.PlaceOrder(ctx, "beta", deskbottest.NewKey(), limit("INFY", deskbot.Buy, 1, 1500))
	if err == nil {
		t.Fatalf("the 5,001st order was placed: %+v", po)
	}
	if got, want := deskbot.ErrorMessage(err), "5,000 orders today"; !strings.Contains(got, want) {
		t.Errorf("refusal %q does not say %q", got, want)
	}
	if got, want := po.State, deskbot.OrderNotPlaced; got != want {
		t.Errorf("state = %s, want %s", got, want)
	}
	if got := r.kt.Requests("POST", "/orders/*"); got != sent {
		t.Errorf("order requests = %d, want %d: the refused order reached Kite", got, sent)
	}
	if got, want := r.kt.DayOrders(testUser), 1; got != want {
		t.Errorf("orders at Kite today = %d, want %d", got, want)
	}
}

// The hostile desk: nothing in place_order's arguments sets or changes
// the algo id, the source address or the day's count. Such arguments are
// refused before anything is held; a symbol smuggling a form field is no
// instrument and nothing is sent; the same allowed call asked again and
// again counts one order.
func TestHostileDeskCannotSetAlgoIDSourceOrCount(t *testing.T) {
	for _, arg := range []string{`"algo_id":"EVIL"`, `"source_ip":"10.0.0.9"`, `"tag":"other"`, `"count":0`} {
		_, err := deskbot.ParseOrder([]byte(`{"symbol":"INFY","side":"BUY","quantity":1,` + arg + `}`))
		if deskbot.ErrorCode(err) != deskbot.EINVALID {
			t.Errorf("place_order with %s: err = %v, want it refused", arg, err)
		}
	}
	r := mustRig(t)
	b, _ := r.mustBroker(t, options{algoID: "ALGO1", perDay: 2})
	ctx := ctxFor(t, 30*time.Second)
	evil := limit("INFY&algo_id=EVIL", deskbot.Buy, 1, 1500)
	if _, err := b.PlaceOrder(ctx, "alpha", deskbottest.NewKey(), evil); err == nil {
		t.Error("an order for symbol INFY&algo_id=EVIL was placed")
	}
	key := deskbottest.NewKey()
	first := mustPlaceOrderKey(t, b, "alpha", key)
	for range 5 {
		po, err := b.PlaceOrder(ctx, "alpha", key, limit("INFY", deskbot.Buy, 1, 1500))
		if err != nil || po.ID != first.ID {
			t.Fatalf("asked again: %+v, %v; want order %s", po, err, first.ID)
		}
	}
	second := mustPlaceOrderKey(t, b, "alpha", deskbottest.NewKey())
	for _, po := range []deskbot.PlacedOrder{first, second} {
		if ko, _ := r.kt.Order(po.ID); ko.AlgoID != "ALGO1" {
			t.Errorf("order %s carried algo_id %q, want ALGO1", po.ID, ko.AlgoID)
		}
	}
	if _, err := b.PlaceOrder(ctx, "alpha", deskbottest.NewKey(), limit("INFY", deskbot.Buy, 1, 1500)); !strings.Contains(deskbot.ErrorMessage(err), "placed 2 orders today") {
		t.Errorf("the third order of a cap of 2: %v, want it refused with the count", err)
	}
	if got, want := r.kt.Requests("POST", "/orders/*"), 2; got != want {
		t.Errorf("order requests = %d, want %d", got, want)
	}
}

func mustPlaceOrderKey(t *testing.T, b *Broker, desk, key string) deskbot.PlacedOrder {
	t.Helper()
	po, err := b.PlaceOrder(ctxFor(t, 30*time.Second), desk, key, limit("INFY", deskbot.Buy, 1, 1500))
	if err != nil || po.ID == "" {
		t.Fatalf("PlaceOrder: %+v, %v", po, err)
	}
	return po
}

// Kite's refusal for the address is told from its other refusals by its
// words; none of those others is taken for it (an "API" is no IP).
func TestSourceRefusalRecognised(t *testing.T) {
	tests := []struct {
		msg  string
		want bool
	}{
		{fmt.Sprintf(kitetest.SourceIPError, "203.0.113.7"), true},
		{"Order placement is not allowed from this IP.", true},
		{"IP not registered for this app", true},
		{"Your static IP is not mapped to the app.", true},
		{"Market orders without market protection are not allowed via API. Please set market protection or use a Limit order.", false},
		{"Maximum allowed order requests exceeded for the day.", false},
		{"Insufficient permission for that call.", false},
		{"Orders for this zip of instruments are not allowed.", false},
		{"Incorrect `api_key` or `access_token`.", false},
	}
	for _, tt := range tests {
		if got := sourceRefusal(tt.msg); got != tt.want {
			t.Errorf("sourceRefusal(%q) = %v, want %v", tt.msg, got, tt.want)
		}
	}
}

// keptNotices counts the group's notices that an over-closing GTT could
// not be deleted.
func keptNotices(h *heard) int {
	n := 0
	for _, t := range h.texts() {
		if strings.Contains(t, "could not be deleted") {
			n++
		}
	}
	return n
}

// A position that shrinks below its GTT while Kite refuses the server's
// address: the GTT's deletion is refused. Sync still records the desk's
// fills (a failing Sync would leave every later fill unbooked), the
// group is told once that the GTT over-closes and is still at Kite, the
// deletion is asked again only after a backoff, not at every Sync, and
// once the address is registered it goes through.
func TestOverClosingGTTWhoseDeletionKiteRefusesForTheAddress(t *testing.T) {
	r := mustRig(t)
	h := &heard{}
	b, _ := r.mustBroker(t, options{heard: h})
	mustPlaceOrder(t, b, "alpha", market("NSE:INFY", deskbot.Buy, 10))
	mustSync(t, b)
	pg := mustPlaceGTT(t, b, "alpha", infyStop(10))
	r.kt.Hold(true)
	first := mustPlaceOrder(t, b, "alpha", market("NSE:INFY", deskbot.Sell, 4))
	second := mustPlaceOrder(t, b, "alpha", market("NSE:INFY", deskbot.Sell, 2))
	r.kt.AllowSources(registered)
	if err := r.kt.Fill(first.ID); err != nil {
		t.Fatal(err)
	}
	mustSync(t, b) // books the fill: the GTT of 10 now over-closes the 6
	mustSync(t, b) // its deletion is refused
	if got := fakeGTT(t, r.kt, pg.ID).Status; got != kitetest.GTTActive {
		t.Fatalf("the GTT at Kite is %s, want still active (its deletion was refused)", got)
	}
	if err := r.kt.Fill(second.ID); err != nil {
		t.Fatal(err)
	}
	mustSync(t, b)
	mustSync(t, b)
	if got := held(mustBookOf(t, b, "alpha"), "INFY"); got != 4 {
		t.Errorf("alpha holds %v INFY after both sells filled, want 4: a fill was not recorded", got)
	}
	if got, want := r.kt.Requests(http.MethodDelete, "/gtt/triggers/*"), 1; got != want {
		t.Errorf("deletions sent = %d, want %d: each Sync asked again", got, want)
	}
	if got, want := keptNotices(h), 1; got != want {
		t.Errorf("the group was told of the kept GTT %d times, want %d: %q", got, want, h.texts())
	}
	r.clock.Add(10 * time.Minute)
	mustSync(t, b)
	if got, want := r.kt.Requests(http.MethodDelete, "/gtt/triggers/*"), 2; got != want {
		t.Errorf("deletions sent after the backoff = %d, want %d", got, want)
	}
	r.kt.AllowSources()
	r.clock.Add(10 * time.Minute)
	mustSync(t, b)
	if got := fakeGTT(t, r.kt, pg.ID).Status; got != kitetest.GTTDeleted {
		t.Errorf("the GTT at Kite is %s once the address is registered, want deleted", got)
	}
	if got, want := keptNotices(h), 1; got != want {
		t.Errorf("the group was told of the kept GTT %d times, want %d", got, want)
	}
}
