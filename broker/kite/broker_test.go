package kite

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	kiteconnect "github.com/zerodha/gokiteconnect/v4"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/broker/kitetest"
	"github.com/deskbot/deskbot/deskbottest"
)

func TestLimitOrderFillsAreToldOnceAndBooked(t *testing.T) {
	r := mustRig(t)
	b, _ := r.mustBroker(t, options{})
	po := mustPlaceOrder(t, b, "alpha", limit("NSE:INFY", deskbot.Buy, 10, 1490))
	if po.State != deskbot.OrderOpen || po.ID == "" || po.Tag == "" {
		t.Fatalf("placed: got %+v, want open with Kite's id", po)
	}
	if got := mustOrder(t, r.kt, po.ID).Tag; got != po.Tag {
		t.Fatalf("the order at Kite carries tag %q, want %q", got, po.Tag)
	}
	if err := r.kt.FillPartly(po.ID, 4); err != nil {
		t.Fatal(err)
	}
	if got, want := mustSync(t, b), 1; got != want {
		t.Errorf("first Sync moved %d orders, want %d", got, want)
	}
	if err := r.kt.Fill(po.ID); err != nil {
		t.Fatal(err)
	}
	mustSync(t, b)
	if got := mustSync(t, b); got != 0 {
		t.Errorf("a Sync with nothing new moved %d orders", got)
	}
	if got, want := r.tell.versions(po.Tag), []string{"partly filled 4", "complete 10"}; !slices.Equal(got, want) {
		t.Errorf("the desk was told %q, want %q (the placing call's answer told it open)", got, want)
	}
	if got, want := len(r.tell.chat()), 2; got != want {
		t.Errorf("the chat was told %d fills, want %d: %q", got, want, r.tell.chat())
	}
	bk := mustBookOf(t, b, "alpha")
	if got := held(bk, "INFY"); got != 10 {
		t.Errorf("book holds %v INFY, want 10: %+v", got, bk)
	}
	if got := mustOrderOf(t, b, "alpha", po.ID); got.State != deskbot.OrderComplete || got.AvgPrice != 1490 {
		t.Errorf("order now %+v, want complete at 1490", got)
	}
	if open, _ := b.orders.HasOpen(t.Context()); open {
		t.Error("a complete order is still open in the log")
	}
}

func TestRejectionIsToldWithKitesReason(t *testing.T) {
	r := mustRig(t)
	b, _ := r.mustBroker(t, options{})
	const reason = "RMS:Blocked for this test: no trading in INFY"
	r.kt.RejectNext(reason)
	po := mustPlaceOrder(t, b, "alpha", limit("NSE:INFY", deskbot.Buy, 1, 1490))
	if po.State != deskbot.OrderRejected || po.Reason != reason {
		t.Fatalf("placed: got %s (%q), want rejected with Kite's reason", po.State, po.Reason)
	}
	mustSync(t, b)
	if got, want := r.tell.versions(po.Tag), []string{"rejected 0"}; !slices.Equal(got, want) {
		t.Errorf("the desk was told %q, want %q", got, want)
	}
	if got := r.tell.countWith("alpha", reason); got != 1 {
		t.Errorf("the desk's inbox holds Kite's reason %d times, want once: %q", got, r.tell.told("alpha"))
	}
	if chat := r.tell.chat(); len(chat) != 1 || !strings.Contains(chat[0], reason) {
		t.Errorf("the chat was told %q, want the rejection with Kite's reason once", chat)
	}
}

func TestKitesRefusalIsInvalidAndNotPlaced(t *testing.T) {
	r := mustRig(t)
	b, _ := r.mustBroker(t, options{})
	// The account's orders of the day spent: the day's checks cannot see
	// it, Kite refuses the order outright.
	r.kt.SetLimits(&kitetest.Limits{OrdersPerDay: 1})
	mustPlaceOrder(t, b, "alpha", limit("NSE:INFY", deskbot.Buy, 1, 1490))
	o := deskbot.Order{Symbol: "NSE:INFY", Side: deskbot.Buy, Quantity: 1, Price: 1520, TriggerPrice: 1510, Type: deskbot.OrderSL, Product: deskbot.ProductMIS}
	key := deskbottest.NewKey()
	po, err := b.PlaceOrder(ctxFor(t, 10*time.Second), "alpha", key, o)
	if got, want := deskbot.ErrorCode(err), deskbot.EINVALID; got != want {
		t.Fatalf("got %v (code %q), want %q", err, got, want)
	}
	if !strings.Contains(deskbot.ErrorMessage(err), "Maximum allowed order requests exceeded") {
		t.Errorf("message %q does not carry Kite's words", deskbot.ErrorMessage(err))
	}
	rec := mustOrderOf(t, b, "alpha", broker.Tag(key))
	if rec.State != deskbot.OrderNotPlaced || po.State != deskbot.OrderNotPlaced {
		t.Errorf("recorded %s, answered %s, want not placed", rec.State, po.State)
	}
	if got := r.kt.AllOrdersPlaced(); got != 1 {
		t.Errorf("orders at Kite: %d, want the first alone", got)
	}
	// Asked again, the key answers the record and sends nothing.
	again, err := b.PlaceOrder(ctxFor(t, 10*time.Second), "alpha", key, o)
	if err != nil || again.State != deskbot.OrderNotPlaced {
		t.Errorf("again: got %s, %v, want the not-placed record", again.State, err)
	}
	if got := r.kt.Requests(http.MethodPost, "/orders/*"); got != 2 {
		t.Errorf("placements sent: %d, want 2 (the first, and the refused one once)", got)
	}
}

func TestLostAnswerMakesOneOrderAndRecordsIt(t *testing.T) {
	for _, how := range []kitetest.Loss{kitetest.LoseByDrop, kitetest.LoseBy504} {
		t.Run(fmt.Sprint(how), func(t *testing.T) {
			r := mustRig(t)
			b, _ := r.mustBroker(t, options{})
			r.kt.LoseAnswers(how, 1)
			po := mustPlaceOrder(t, b, "alpha", limit("NSE:INFY", deskbot.Buy, 2, 1490))
			if got := r.kt.OrdersPlaced(po.Tag); got != 1 {
				t.Fatalf("orders with the tag at Kite: %d, want 1", got)
			}
			if po.State != deskbot.OrderOpen || po.ID == "" {
				t.Errorf("recorded %+v, want open with its id", po)
			}
		})
	}
}

// A placing whose answer is lost and whose caller gives up (its ctx ends)
// leaves the order pending; a new process's Sync learns it from Kite's
// orders and tells the desk once.
func TestPendingAfterALostAnswerIsResolvedOnRestart(t *testing.T) {
	r := mustRig(t)
	b1, _ := r.mustBroker(t, options{})
	r.kt.LoseAnswers(kitetest.LoseByDrop, 1)
	r.kt.Slow(http.MethodGet, "/orders", 3*time.Second) // the lost answer's read of the orders outlives the caller
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	key := deskbottest.NewKey()
	_, err := b1.PlaceOrder(ctx, "alpha", key, limit("NSE:INFY", deskbot.Buy, 3, 1490))
	if err == nil || !strings.Contains(deskbot.ErrorMessage(err), "not known yet") {
		t.Fatalf("got %v, want the outcome not known yet", err)
	}
	tag := broker.Tag(key)
	if got := mustOrderOf(t, b1, "alpha", tag).State; got != deskbot.OrderPending {
		t.Fatalf("recorded %s, want pending", got)
	}
	r.kt.ClearFaults()

	b2, _ := r.mustBroker(t, options{}) // the process after a restart
	r.clock.Add(2 * time.Minute)
	mustSync(t, b2)
	mustSync(t, b2)
	rec := mustOrderOf(t, b2, "alpha", tag)
	if rec.State != deskbot.OrderOpen || rec.ID == "" {
		t.Errorf("after Sync: %+v, want open with Kite's id", rec)
	}
	if got, want := r.tell.versions(tag), []string{"open 0"}; !slices.Equal(got, want) {
		t.Errorf("the desk was told %q, want %q", got, want)
	}
	if got := r.kt.OrdersPlaced(tag); got != 1 {
		t.Errorf("orders with the tag: %d, want 1", got)
	}
	// The caller asking again gets the order, and nothing is sent.
	po, err := b2.PlaceOrder(ctxFor(t, 10*time.Second), "alpha", key, limit("NSE:INFY", deskbot.Buy, 3, 1490))
	if err != nil || po.ID != rec.ID {
		t.Errorf("asked again: %+v, %v, want order %s", po, err, rec.ID)
	}
	if got := r.kt.Requests(http.MethodPost, "/orders/*"); got != 1 {
		t.Errorf("placements sent: %d, want 1", got)
	}
}

// A crash between recording an order and hearing back: the record is
// pending in Redis. A new process's Sync finds it at Kite by its tag, or,
// when Kite has none a settling time on, records it not placed; either
// way the desk is told once.
func TestPendingAfterACrashIsResolvedOnce(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sent  bool // the crash came after the order was sent
		state deskbot.OrderState
	}{
		{"sent", true, deskbot.OrderOpen},
		{"never sent", false, deskbot.OrderNotPlaced},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := mustRig(t)
			b1, _ := r.mustBroker(t, options{})
			o := limit("NSE:INFY", deskbot.Buy, 5, 1490)
			tag := broker.Tag(deskbottest.NewKey())
			now := r.clock.Now()
			if _, _, err := b1.orders.Start(t.Context(), deskbot.PlacedOrder{Tag: tag, Desk: "alpha", Order: o, State: deskbot.OrderPending, At: now, Updated: now}); err != nil {
				t.Fatal(err)
			}
			if tc.sent {
				p, variety, _ := orderParams(o)
				if _, err := b1.kite.placeNew(ctxFor(t, 10*time.Second), tag, p, variety, nil); err != nil {
					t.Fatal(err)
				}
			}
			b2, _ := r.mustBroker(t, options{})
			mustSync(t, b2)
			if !tc.sent {
				// Within the settling time an absent order may still land.
				if got := mustOrderOf(t, b2, "alpha", tag).State; got != deskbot.OrderPending {
					t.Fatalf("absent within the settling time: %s, want still pending", got)
				}
			}
			r.clock.Add(2 * time.Minute)
			mustSync(t, b2)
			mustSync(t, b2)
			if got := mustOrderOf(t, b2, "alpha", tag).State; got != tc.state {
				t.Errorf("after Sync: %s, want %s", got, tc.state)
			}
			if got := r.tell.told("alpha"); len(got) != 1 {
				t.Errorf("the desk was told %q, want one update", got)
			}
			if n := mustSync(t, b2); n != 0 {
				t.Errorf("a further Sync moved %d", n)
			}
			if got := len(r.tell.told("alpha")); got != 1 {
				t.Errorf("after a further Sync the desk was told %d times, want once", got)
			}
		})
	}
}

// Two processes reading Kite at once (a hand-over) book each fill once
// and never move an order back.
func TestTwoBrokersSyncingAtOnceTellEachChangeOnce(t *testing.T) {
	r := mustRig(t)
	b1, _ := r.mustBroker(t, options{})
	b2, _ := r.mustBroker(t, options{})
	r.kt.Hold(true)
	var placed []deskbot.PlacedOrder
	for range 4 {
		placed = append(placed, mustPlaceOrder(t, b1, "alpha", limit("NSE:INFY", deskbot.Buy, 10, 1490)))
	}
	syncBoth := func() {
		var wg sync.WaitGroup
		for _, b := range []*Broker{b1, b2, b1, b2} {
			wg.Go(func() {
				if _, err := b.Sync(ctxFor(t, 30*time.Second)); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	for _, po := range placed {
		if err := r.kt.FillPartly(po.ID, 3); err != nil {
			t.Fatal(err)
		}
	}
	syncBoth()
	for _, po := range placed {
		if err := r.kt.Fill(po.ID); err != nil {
			t.Fatal(err)
		}
	}
	syncBoth()
	syncBoth()
	for _, po := range placed {
		if got, want := r.tell.versions(po.Tag), []string{"partly filled 3", "complete 10"}; !slices.Equal(got, want) {
			t.Errorf("order %s: told %q, want %q", po.ID, got, want)
		}
	}
	if got := held(mustBookOf(t, b2, "alpha"), "INFY"); got != 40 {
		t.Errorf("book holds %v, want 40 (each fill booked once)", got)
	}
}

func TestCancelOnlyTheDesksOwnOpenOrder(t *testing.T) {
	r := mustRig(t)
	b, _ := r.mustBroker(t, options{})
	po := mustPlaceOrder(t, b, "alpha", limit("NSE:INFY", deskbot.Buy, 1, 1490))
	for _, tc := range []struct{ desk, id string }{
		{"beta", po.ID},     // another desk's order
		{"beta", po.Tag},    // by its tag
		{"alpha", "999999"}, // an id the desk never had
	} {
		if _, err := b.CancelOrder(ctxFor(t, 10*time.Second), tc.desk, tc.id); deskbot.ErrorCode(err) != deskbot.ENOTFOUND {
			t.Errorf("%s cancelling %s: got %v, want ENOTFOUND", tc.desk, tc.id, err)
		}
	}
	if got := r.kt.Requests(http.MethodDelete, "/orders/*/*"); got != 0 {
		t.Fatalf("cancellations sent: %d, want none", got)
	}
	if got := mustOrder(t, r.kt, po.ID).Status; got != kitetest.StatusOpen {
		t.Fatalf("the order is %s at Kite, want still OPEN", got)
	}
	c, err := b.CancelOrder(ctxFor(t, 10*time.Second), "alpha", po.ID)
	if err != nil || c.State != deskbot.OrderCancelled {
		t.Fatalf("own cancel: %+v, %v, want cancelled", c, err)
	}
	if _, err := b.CancelOrder(ctxFor(t, 10*time.Second), "alpha", po.ID); deskbot.ErrorCode(err) != deskbot.ECONFLICT {
		t.Errorf("cancelling it again: got %v, want ECONFLICT", err)
	}
}

// placeByHand places p at Kite untagged, as a person on Kite's web does.
func placeByHand(t *testing.T, c *Client, p kiteconnect.OrderParams) {
	t.Helper()
	p.MarketProtection = kiteconnect.MarketProtectionAuto
	if err := c.call(ctxFor(t, 10*time.Second), c.orderLim, "order", func(k *kiteconnect.Client) error {
		_, err := k.PlaceOrder(kiteconnect.VarietyRegular, p)
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

func handMarket(side string, q int) kiteconnect.OrderParams {
	return kiteconnect.OrderParams{Exchange: "NSE", Tradingsymbol: "INFY", TransactionType: side, OrderType: "MARKET", Quantity: q, Product: "MIS", Validity: "DAY"}
}

func TestFlattenTradesOnlyWhatIsTheDesks(t *testing.T) {
	r := mustRig(t)
	b, _ := r.mustBroker(t, options{})
	placeByHand(t, b.kite, handMarket("BUY", 5)) // a person's, no desk's
	mustPlaceOrder(t, b, "alpha", market("NSE:INFY", deskbot.Buy, 10))
	mustPlaceOrder(t, b, "beta", market("NSE:TCS", deskbot.Buy, 3))
	mustPlaceOrder(t, b, "beta", market("NSE:INFY", deskbot.Buy, 4))
	betaResting := mustPlaceOrder(t, b, "beta", limit("NSE:INFY", deskbot.Buy, 1, 1400))
	resting := mustPlaceOrder(t, b, "alpha", limit("NSE:INFY", deskbot.Buy, 2, 1400))

	key := deskbottest.NewKey()
	rep, err := b.Flatten(ctxFor(t, 30*time.Second), "alpha", key)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Cancelled) != 1 || rep.Cancelled[0].ID != resting.ID {
		t.Errorf("cancelled %+v, want the resting order %s", rep.Cancelled, resting.ID)
	}
	if len(rep.Placed) != 1 || rep.Placed[0].Order.Side != deskbot.Sell || rep.Placed[0].Order.Quantity != 10 || len(rep.Left) != 0 {
		t.Fatalf("flatten: %+v, want one sell of 10 and nothing left", rep)
	}
	mustSync(t, b)
	if got := held(mustBookOf(t, b, "alpha"), "INFY"); got != 0 {
		t.Errorf("alpha holds %v INFY after the flatten, want 0", got)
	}
	net := mustNet(t, b)
	if got, want := net["NSE:INFY MIS"], 5+4; got != want {
		t.Errorf("the account holds %d INFY, want the person's 5 and beta's 4 untouched", got)
	}
	if got := mustOrder(t, r.kt, betaResting.ID).Status; got != kitetest.StatusOpen {
		t.Errorf("beta's resting order is %s after alpha's flatten, want OPEN", got)
	}
	if got := held(mustBookOf(t, b, "beta"), "INFY"); got != 4 {
		t.Errorf("beta holds %v INFY, want 4", got)
	}
	if got, want := net["NSE:TCS MIS"], 3; got != want {
		t.Errorf("the account holds %d TCS, want beta's %d untouched", got, want)
	}
	// The same flatten asked again places nothing more.
	if _, err := b.Flatten(ctxFor(t, 30*time.Second), "alpha", key); err != nil {
		t.Fatal(err)
	}
	if got := r.kt.OrdersPlaced(rep.Placed[0].Tag); got != 1 {
		t.Errorf("closing orders with the tag: %d, want 1", got)
	}
}

func TestFlattenIsCappedByWhatTheAccountHolds(t *testing.T) {
	r := mustRig(t)
	b, _ := r.mustBroker(t, options{})
	mustPlaceOrder(t, b, "alpha", market("NSE:INFY", deskbot.Buy, 10))
	placeByHand(t, b.kite, handMarket("SELL", 6)) // a person sold 6 of it at Kite
	rep := mustFlattenDesk(t, b, "alpha")
	if len(rep.Placed) != 1 || rep.Placed[0].Order.Quantity != 4 {
		t.Fatalf("placed %+v, want one sell of the 4 the account holds", rep.Placed)
	}
	if len(rep.Left) != 1 || !strings.Contains(rep.Left[0], "INFY") {
		t.Errorf("left %q, want INFY and why", rep.Left)
	}
	if got := mustNet(t, b)["NSE:INFY MIS"]; got != 0 {
		t.Errorf("the account holds %d INFY after the flatten, want 0 (never more than it held)", got)
	}
}

func mustNet(t *testing.T, b *Broker) map[string]int {
	t.Helper()
	net, err := b.kite.NetPositions(ctxFor(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, p := range net {
		out[p.Exchange+":"+p.Tradingsymbol+" "+p.Product] += p.Quantity
	}
	return out
}

// The ticker's order updates move an order as they happen: with the poll
// an hour apart, only the ticker can have told the desk.
func TestTickerUpdatesReachTheDeskWithoutThePoll(t *testing.T) {
	r := mustRig(t)
	b, _ := r.mustBroker(t, options{every: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); b.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	deskbottest.Eventually(t, "the ticker to connect", func() bool { return r.kt.TickerConnections() == 1 && b.TickerLive() })
	po := mustPlaceOrder(t, b, "alpha", limit("NSE:INFY", deskbot.Buy, 10, 1490))
	if err := r.kt.FillPartly(po.ID, 4); err != nil {
		t.Fatal(err)
	}
	deskbottest.Eventually(t, "the partial fill told", func() bool { return slices.Contains(r.tell.versions(po.Tag), "partly filled 4") })
	if err := r.kt.Fill(po.ID); err != nil {
		t.Fatal(err)
	}
	deskbottest.Eventually(t, "the fill told", func() bool { return slices.Contains(r.tell.versions(po.Tag), "complete 10") })
	if got := held(mustBookOf(t, b, "alpha"), "INFY"); got != 10 {
		t.Errorf("book holds %v, want 10", got)
	}
}

func TestSessionEndingMidDay(t *testing.T) {
	r := mustRig(t)
	b, l := r.mustBroker(t, options{every: 20 * time.Millisecond})
	resting := mustPlaceOrder(t, b, "alpha", limit("NSE:INFY", deskbot.Buy, 1, 1490))
	r.kt.ExpireSession()

	key := deskbottest.NewKey()
	_, err := b.PlaceOrder(ctxFor(t, 10*time.Second), "alpha", key, limit("NSE:INFY", deskbot.Buy, 1, 1490))
	if got, want := deskbot.ErrorCode(err), deskbot.EUNAUTHORIZED; got != want || !strings.Contains(deskbot.ErrorMessage(err), "/login") {
		t.Fatalf("after Kite ended the session: %v (code %q), want the login's words (%q)", err, got, want)
	}
	if got := r.kt.OrdersPlaced(broker.Tag(key)); got != 0 {
		t.Errorf("orders placed without a session: %d", got)
	}
	if _, err := b.Sync(ctxFor(t, 10*time.Second)); deskbot.ErrorCode(err) != deskbot.EUNAUTHORIZED {
		t.Errorf("Sync without a session: %v, want the login's words", err)
	}

	// Run polls every 20 ms: with the session ended it asks Kite nothing.
	before := r.kt.Requests(http.MethodGet, "/orders")
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	b.Run(ctx)
	cancel()
	if got := r.kt.Requests(http.MethodGet, "/orders") - before; got != 0 {
		t.Errorf("Run asked Kite for its orders %d times with the session ended, want none", got)
	}

	r.clock.Add(time.Minute) // a session is known by when it began
	loginAs(t, l, r.kt, deskbot.Person{ID: 2, Name: "Ravi"})
	if err := r.kt.Fill(resting.ID); err != nil {
		t.Fatal(err)
	}
	mustSync(t, b)
	if got := mustOrderOf(t, b, "alpha", resting.ID).State; got != deskbot.OrderComplete {
		t.Errorf("after a new login the order is %s, want complete", got)
	}
	if po := mustPlaceOrder(t, b, "alpha", limit("NSE:INFY", deskbot.Buy, 1, 1490)); po.State != deskbot.OrderOpen {
		t.Errorf("placed after a new login: %s, want open", po.State)
	}
}

func TestOrdersAreRefusedUntilALogin(t *testing.T) {
	r := mustRig(t)
	b, _ := r.mustBroker(t, options{noLogin: true})
	_, err := b.PlaceOrder(ctxFor(t, 10*time.Second), "alpha", deskbottest.NewKey(), market("NSE:INFY", deskbot.Buy, 1))
	if err == nil {
		t.Fatal("an order was taken before anyone logged in")
	}
	if got := r.kt.AllOrdersPlaced(); got != 0 {
		t.Errorf("orders at Kite: %d", got)
	}
}

func TestMarginFromKite(t *testing.T) {
	r := mustRig(t)
	b, _ := r.mustBroker(t, options{})
	m, ok, err := b.Margin(ctxFor(t, 10*time.Second), limit("NSE:INFY", deskbot.Buy, 10, 1490))
	if err != nil || !ok {
		t.Fatalf("Margin: %v, ok %v", err, ok)
	}
	if want := 10 * 1490 * 0.2; m.Required != want || m.Available != kitetest.DefaultFunds {
		t.Errorf("got %+v, want required %v and the account's funds %v", m, want, kitetest.DefaultFunds)
	}
	r.kt.Slow(http.MethodPost, "/margins/orders", 5*time.Second)
	start := time.Now()
	if _, ok, err := b.Margin(ctxFor(t, 10*time.Second), limit("NSE:INFY", deskbot.Buy, 10, 1490)); ok || err != nil {
		t.Errorf("Kite slow: ok %v, %v, want no answer and no error", ok, err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("Margin took %s with Kite slow, want about 2 s", took)
	}
}

// Kite's limits (10 orders a second, 400 a minute) with 1,000 orders at
// once: every one is placed, once, and the fake never answers 429. The
// client, the broker and the fake keep time by one clock running ten times
// faster than real time: the fake refuses any request over Kite's pace by
// that clock, so the limits are held as strictly as in real time, and the
// burst takes Kite's pace by the clock (400 a minute: at least two minutes
// for 1,000) in a tenth of it.
func TestThousandOrdersAtOnce(t *testing.T) {
	r := mustRig(t)
	r.clock.Run(10)
	r.kt.SetNow(r.clock.Now)
	b, _ := r.mustBroker(t, options{clientOpts: Options{Now: r.clock.Now, Sleep: r.clock.Sleep}})
	const n = 1000
	errs := make([]error, n)
	start := r.clock.Now()
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, errs[i] = b.PlaceOrder(ctxFor(t, 5*time.Minute), "alpha", deskbottest.NewKey(), limit("NSE:INFY", deskbot.Buy, 1, 1490))
		})
	}
	wg.Wait()
	took := r.clock.Now().Sub(start)
	for i, err := range errs {
		if err != nil {
			t.Errorf("order %d: %v", i, err)
		}
	}
	if got := r.kt.AllOrdersPlaced(); got != n {
		t.Errorf("orders at Kite: %d, want %d", got, n)
	}
	if got := r.kt.Served429(); got != 0 {
		t.Errorf("the fake answered %d 429s, want none", got)
	}
	// 400 a minute: the 801st order cannot go before two minutes have
	// passed. Well past four, the limits were not what set the pace (the
	// minute's limit was never reached), and the test would not show it
	// is kept.
	if took < 2*time.Minute || took > 4*time.Minute {
		t.Errorf("%d orders took %s by the clock, want Kite's pace: between 2 and 4 minutes", n, took)
	}
	t.Logf("%d orders placed in %s by the clock (%.1f a second)", n, took.Round(time.Second), n/took.Seconds())
}

func TestOneKeyAskedAtOnceMakesOneOrder(t *testing.T) {
	r := mustRig(t)
	b1, _ := r.mustBroker(t, options{})
	b2, _ := r.mustBroker(t, options{}) // another process asked too
	key := deskbottest.NewKey()
	got := make([]deskbot.PlacedOrder, 8)
	errs := make([]error, len(got))
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() {
			b := []*Broker{b1, b2}[i%2]
			got[i], errs[i] = b.PlaceOrder(ctxFor(t, 30*time.Second), "alpha", key, limit("NSE:INFY", deskbot.Buy, 1, 1490))
		})
	}
	wg.Wait()
	if n := r.kt.OrdersPlaced(broker.Tag(key)); n != 1 {
		t.Fatalf("orders with the tag: %d, want 1", n)
	}
	for i := range got {
		// Another process's ask may come while the first is under way:
		// its answer then says the outcome is not known yet.
		if errs[i] != nil && !strings.Contains(deskbot.ErrorMessage(errs[i]), "not known yet") {
			t.Errorf("ask %d: %v", i, errs[i])
		}
	}
	mustSync(t, b1)
	if po := mustOrderOf(t, b1, "alpha", broker.Tag(key)); po.State != deskbot.OrderOpen {
		t.Errorf("recorded %s, want open", po.State)
	}
}

// The ticker's dial refused (Kite ended the session, and no order is open
// for Sync to learn it): the loop backs off instead of redialling at once,
// and connects again after a new login.
func TestTickerBacksOffAndResumesAfterALogin(t *testing.T) {
	r := mustRig(t)
	b, l := r.mustBroker(t, options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); b.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	deskbottest.Eventually(t, "the ticker to connect", func() bool { return r.kt.TickerConnections() == 1 })
	r.kt.ExpireSession()
	refused := func() int {
		n := 0
		for _, c := range r.kt.Calls() {
			if c.Method == "WEBSOCKET" && c.Status == http.StatusForbidden {
				n++
			}
		}
		return n
	}
	deskbottest.Eventually(t, "a refused dial", func() bool { return refused() >= 1 })
	first := time.Now()
	deskbottest.Eventually(t, "a second refused dial", func() bool { return refused() >= 2 })
	if gap := time.Since(first); gap < 500*time.Millisecond {
		t.Errorf("the ticker dialled again %s after a refusal, want a backoff", gap)
	}
	r.clock.Add(time.Minute)
	loginAs(t, l, r.kt, deskbot.Person{ID: 2, Name: "Ravi"})
	deskbottest.Eventually(t, "the ticker to connect under the new session", func() bool { return r.kt.TickerConnections() == 1 && b.TickerLive() })
}

// An order that waits for Kite's rate limit longer than the settling time
// is still placed, once: while it waits, a Sync in its process does not
// take its absence from Kite's orders for never placed.
func TestOrderWaitingForItsSlotIsPlacedOnce(t *testing.T) {
	r := mustRig(t)
	b, _ := r.mustBroker(t, options{settle: 200 * time.Millisecond, clientOpts: Options{OrdersPerSecond: 1}})
	mustPlaceOrder(t, b, "alpha", limit("INFY", deskbot.Buy, 1, 1490))
	key := deskbottest.NewKey()
	done := make(chan error, 1)
	go func() {
		_, err := b.PlaceOrder(ctxFor(t, 10*time.Second), "alpha", key, limit("INFY", deskbot.Buy, 1, 1490))
		done <- err
	}()
	deskbottest.Eventually(t, "the second order recorded, waiting for its slot", func() bool {
		_, err := b.orders.Order(t.Context(), "alpha", deskbot.OrderDay(r.clock.Now()), broker.Tag(key))
		return err == nil
	})
	r.clock.Add(time.Minute) // past the settling time, by the record's clock
	mustSync(t, b)
	if err := <-done; err != nil {
		t.Fatalf("the order that waited for its slot: %v", err)
	}
	if got := mustOrderOf(t, b, "alpha", broker.Tag(key)).State; got != deskbot.OrderOpen {
		t.Errorf("recorded %s, want open", got)
	}
	if got := r.kt.OrdersPlaced(broker.Tag(key)); got != 1 {
		t.Errorf("orders at Kite with its tag: %d, want 1", got)
	}
}

// The settling time counts from an order's last send, not from its record:
// an order recorded long ago and sent just now (its process waited for a
// rate-limit slot, then died, or handed over) may still land, and no other
// process takes it for never placed until a settling time after the send.
func TestSettlingCountsFromTheSend(t *testing.T) {
	r := mustRig(t)
	b1, _ := r.mustBroker(t, options{})
	o := limit("INFY", deskbot.Buy, 5, 1490)
	tag := broker.Tag(deskbottest.NewKey())
	recorded := r.clock.Now()
	rec, _, err := b1.orders.Start(t.Context(), deskbot.PlacedOrder{Tag: tag, Desk: "alpha", Order: o, State: deskbot.OrderPending, At: recorded, Updated: recorded})
	if err != nil {
		t.Fatal(err)
	}
	r.clock.Add(5 * time.Minute) // waiting for its slot
	sent := rec
	sent.Updated = r.clock.Now()
	if _, moved, err := b1.orders.Move(t.Context(), broker.Version(rec), sent, true); err != nil || !moved {
		t.Fatalf("marking the send: moved %v, %v", moved, err)
	}
	b2, _ := r.mustBroker(t, options{}) // another process, after a hand-over
	mustSync(t, b2)
	if got := mustOrderOf(t, b2, "alpha", tag).State; got != deskbot.OrderPending {
		t.Fatalf("absent just after its send: %s, want still pending", got)
	}
	r.clock.Add(2 * time.Minute)
	mustSync(t, b2)
	if got := mustOrderOf(t, b2, "alpha", tag).State; got != deskbot.OrderNotPlaced {
		t.Errorf("absent a settling time after its send: %s, want not placed", got)
	}
}
