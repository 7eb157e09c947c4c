package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/broker/kitetest"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/ops"
	"github.com/deskbot/deskbot/store/storetest"
	kiteconnect "github.com/zerodha/gokiteconnect/v4"
)

// mustKiteTrading starts the service with BROKER=kite against a fake Kite
// listing INFY at ₹1,500, logs asha in from the chat and waits for the
// day's instrument list; extra overrides the environment.
func mustKiteTrading(t *testing.T, extra map[string]string) (*service, *kitetest.Server, *toolResults) {
	t.Helper()
	kt := kitetest.New(t, kiteKey, kiteSecret)
	kt.AddInstruments(kitetest.Instrument{Exchange: "NSE", Tradingsymbol: "INFY", Name: "INFOSYS", Token: 408065, LastPrice: 1500, TickSize: 0.05, LotSize: 1})
	s := mustStart(t, kiteEnv(kt, extra))
	noKiteSecrets(t, s, kt)
	tr := &toolResults{}
	s.model.SetHandler(tr.handle)
	state, _ := mustLoginState(t, s, asha)
	if code, body := callback(t, s, redirect(state, kt.Login(kiteUser))); code != 200 {
		t.Fatalf("login: %d %s", code, body)
	}
	deskbottest.EventuallyWithin(t, 15*time.Second, "the day's instrument list loaded", func() bool {
		return s.main.Broker.Check(deskbot.Order{Symbol: "INFY", Side: deskbot.Buy, Quantity: 1, Price: 1490, Type: deskbot.OrderLimit}) == nil
	})
	return s, kt, tr
}

// kiteEnv is the environment of a service trading at kt, with extra.
func kiteEnv(kt *kitetest.Server, extra map[string]string) map[string]string {
	env := map[string]string{
		"BROKER": "kite", "MARKET_HOURS": "Mon-Sun 00:00-24:00", "APPROVAL_TOOLS": "place_order,cancel_order",
		"KITE_API_KEY": kiteKey, "KITE_API_SECRET": kiteSecret, "KITE_USER_ID": kiteUser,
		"KITE_API_URL": kt.URL, "KITE_TICKER_URL": strings.Replace(kt.URL, "http://", "ws://", 1),
		"BROKER_CALLBACK_URL": "http://127.0.0.1:8080/kite/callback",
	}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

// mustHeld has the desk place args and returns the held order's message
// and its request's id.
func mustHeld(t *testing.T, s *service, args, shows string) (telegramtest.Message, string) {
	t.Helper()
	s.tg.InjectText(asha, groupID, "/tell main place "+args, 0)
	held := s.mustBotMessage(t, "the held order", func(m telegramtest.Message) bool {
		return len(m.Keyboard) > 0 && strings.Contains(m.Plain, shows)
	})
	open, err := s.main.Store.OpenRequests(t.Context())
	if err != nil || len(open) != 1 {
		t.Fatalf("open requests: %v %v", open, err)
	}
	return held, open[0].ID
}

// The whole path at Kite: a desk's limit order is held in trading words
// with the margin it needs, an approver's tap places exactly that order at
// Kite under its request's tag, and the fills Kite makes later reach the
// desk as messages and the chat in trading words, each once.
func TestKiteOrderFromTheChatToItsFills(t *testing.T) {
	t.Parallel()
	s, kt, tr := mustKiteTrading(t, nil)
	held, id := mustHeld(t, s, `{"symbol":"NSE:INFY","side":"buy","quantity":10,"price":1490}`, "BUY 10 INFY LIMIT @ 1,490.00 · MIS")
	if !strings.Contains(held.Plain, "Margin needed") {
		t.Errorf("the held order does not show the margin it needs:\n%s", held.Plain)
	}
	s.tg.InjectCallback(asha, groupID, held.ID, button(t, held, "Allow once"))
	tr.mustSee(t, "· open. It rests at the broker")
	tag := broker.Tag(id)
	if got := kt.OrdersPlaced(tag); got != 1 {
		t.Fatalf("Kite holds %d orders tagged %s, want 1", got, tag)
	}
	var orderID string
	for _, o := range kt.Orders() {
		if o.Tag == tag {
			orderID = o.ID
		}
	}

	if err := kt.FillPartly(orderID, 4); err != nil {
		t.Fatal(err)
	}
	tr.mustSee(t, "is partly filled: 4 of 10 filled at 1,490.00 on average")
	s.mustBotMessage(t, "the partial fill in the chat", func(m telegramtest.Message) bool {
		return strings.Contains(m.Plain, "partly filled: BUY 10 INFY LIMIT @ 1,490.00 · MIS")
	})
	if err := kt.Fill(orderID); err != nil {
		t.Fatal(err)
	}
	tr.mustSee(t, "is complete: 10 filled at 1,490.00 on average")
	s.mustBotMessage(t, "the fill in the chat", func(m telegramtest.Message) bool {
		return strings.Contains(m.Plain, "complete: BUY 10 INFY LIMIT @ 1,490.00 · MIS")
	})

	time.Sleep(3 * time.Second) // a poll or two more: nothing is told again
	tr.mu.Lock()
	all := strings.Join(tr.seen, "\n")
	tr.mu.Unlock()
	for _, once := range []string{"is partly filled", "is complete"} {
		if n := strings.Count(all, once); n != 1 {
			t.Errorf("the desk was told %q %d times; want once", once, n)
		}
	}
	if got := kt.AllOrdersPlaced(); got != 1 {
		t.Errorf("Kite holds %d orders; want the one allowed", got)
	}
	book, err := s.main.Broker.Book(t.Context(), "main")
	if err != nil || len(book.Positions) != 1 || book.Positions[0].Quantity != 10 {
		t.Errorf("the desk's book after its fills: %+v %v; want long 10 INFY", book, err)
	}
}

// Kite places the order but its answer is lost (the connection dropped, or
// a gateway's 504): the service finds the order by its tag in the day's
// orders before it sends anything again, so the allowed call makes one
// order, and the desk is told that order's state, then its fill, once.
func TestKiteLostAnswerMakesOneOrder(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		how  kitetest.Loss
	}{{"dropped", kitetest.LoseByDrop}, {"504", kitetest.LoseBy504}} {
		t.Run(tc.name, func(t *testing.T) {
			s, kt, tr := mustKiteTrading(t, nil)
			held, id := mustHeld(t, s, `{"symbol":"INFY","side":"buy","quantity":10,"price":1490}`, "BUY 10 INFY LIMIT @ 1,490.00 · MIS")
			kt.LoseAnswers(tc.how, 1)
			s.tg.InjectCallback(asha, groupID, held.ID, button(t, held, "Allow once"))
			tr.mustSee(t, "· open. It rests at the broker")
			tag := broker.Tag(id)
			if got := kt.OrdersPlaced(tag); got != 1 {
				t.Fatalf("Kite holds %d orders tagged %s after a lost answer, want 1", got, tag)
			}
			if err := kt.Fill(kt.Orders()[0].ID); err != nil {
				t.Fatal(err)
			}
			tr.mustSee(t, "is complete: 10 filled at 1,490.00 on average")
			time.Sleep(3 * time.Second) // a poll or two more: nothing sent or told again
			if got := kt.AllOrdersPlaced(); got != 1 {
				t.Errorf("Kite holds %d orders; want the one allowed", got)
			}
			tr.mu.Lock()
			all := strings.Join(tr.seen, "\n")
			tr.mu.Unlock()
			if n := strings.Count(all, "is complete"); n != 1 {
				t.Errorf("the desk was told of the fill %d times; want once", n)
			}
		})
	}
}

// A desk's book is its own: an order made by hand in the account (no
// deskbot tag) shows on /desks as no desk's, and /flatten of the desk
// closes the desk's position only, at Kite, leaving the hand-made one.
func TestKiteFlattenLeavesWhatNoDeskOwns(t *testing.T) {
	t.Parallel()
	s, kt, tr := mustKiteTrading(t, map[string]string{"APPROVAL_TOOLS": "flatten_desk"})
	s.tg.InjectText(asha, groupID, `/tell main place {"symbol":"NSE:INFY","side":"buy","quantity":10}`, 0)
	tr.mustSee(t, "Filled: order")
	byHand := kiteconnect.New(kiteKey)
	byHand.SetBaseURI(kt.URL)
	byHand.SetAccessToken(kt.AccessTokens()[0])
	if _, err := byHand.PlaceOrder(kiteconnect.VarietyRegular, kiteconnect.OrderParams{
		Exchange: "NSE", Tradingsymbol: "INFY", TransactionType: "BUY", Quantity: 5, OrderType: "MARKET", Product: "MIS", Validity: "DAY", MarketProtection: -1,
	}); err != nil {
		t.Fatalf("an order by hand: %v", err)
	}

	asked := s.tg.InjectText(asha, groupID, "/desks", 0)
	desks := s.mustBotMessage(t, "/desks", func(m telegramtest.Message) bool { return m.ReplyTo == asked })
	for _, want := range []string{"INFY: long 10", "At the broker, no desk's (trades made by hand)\nINFY: long 5"} {
		if !strings.Contains(desks.Plain, want) {
			t.Errorf("/desks reads %q; want %q", desks.Plain, want)
		}
	}

	asked = s.tg.InjectText(asha, groupID, "/flatten main", 0)
	confirm := s.mustBotMessage(t, "the flatten's confirmation", func(m telegramtest.Message) bool { return m.ReplyTo == asked && len(m.Keyboard) > 0 })
	s.tg.InjectCallback(asha, groupID, confirm.ID, button(t, confirm, "Yes, flatten main"))
	deskbottest.EventuallyWithin(t, 15*time.Second, "the desk flat", func() bool {
		b, err := s.main.Broker.Book(t.Context(), "main")
		return err == nil && len(b.Positions) == 0
	})
	left, err := s.main.Broker.Unowned(t.Context())
	if err != nil || len(left) != 1 || left[0].Symbol != "INFY" || left[0].Quantity != 5 {
		t.Errorf("after the flatten the account holds %+v beyond the desks (%v); want the hand-made long 5 INFY", left, err)
	}
	sells := 0
	for _, o := range kt.Orders() {
		if o.TransactionType == "SELL" {
			sells++
			if o.Quantity != 10 || o.Tag == "" {
				t.Errorf("the flatten sold %+v; want the desk's 10, tagged", o)
			}
		}
	}
	if sells != 1 {
		t.Errorf("%d sell orders at Kite; want the one closing order", sells)
	}
}

// A held market order has no price of its own: it reads at Kite's last
// price, with the margin it needs.
func TestKiteHeldMarketOrderReadsAtTheLastPrice(t *testing.T) {
	t.Parallel()
	s, _, _ := mustKiteTrading(t, nil)
	held, _ := mustHeld(t, s, `{"symbol":"NSE:INFY","side":"buy","quantity":10}`, "BUY 10 INFY MARKET · MIS")
	for _, want := range []string{"Notional ≈ ₹15,000.00 at the last price", "Margin needed"} {
		if !strings.Contains(held.Plain, want) {
			t.Errorf("the held market order reads %q; want %q", held.Plain, want)
		}
	}
}

// Two instances on one Redis and one Kite account: only the leader places
// the allowed order and follows it; after the leader's graceful stop the
// standby takes over, follows the order it did not place and tells its
// fill once.
func TestKiteTwoInstancesOnlyTheLeaderPlaces(t *testing.T) {
	t.Parallel()
	storetest.MustOpen(t)
	shared := map[string]string{"REDIS_PREFIX": storetest.RandomPrefix(), "LEADER_LEASE": "2s"}
	s, kt, tr := mustKiteTrading(t, shared)
	second := mustStartOn(t, s.tg, s.model, kiteEnv(kt, shared))
	if r, _ := role(t, second); r != ops.RoleStandby {
		t.Fatalf("second instance is %q; want standby", r)
	}
	held, id := mustHeld(t, s, `{"symbol":"NSE:INFY","side":"buy","quantity":10,"price":1490}`, "BUY 10 INFY LIMIT @ 1,490.00 · MIS")
	s.tg.InjectCallback(asha, groupID, held.ID, button(t, held, "Allow once"))
	tr.mustSee(t, "· open. It rests at the broker")
	if got := kt.AllOrdersPlaced(); got != 1 {
		t.Fatalf("Kite holds %d orders; want the one the leader placed", got)
	}

	if err := s.main.Close(); err != nil {
		t.Fatal(err)
	}
	deskbottest.EventuallyWithin(t, 5*time.Second, "the standby to lead", func() bool { r, _ := role(t, second); return r == ops.RoleLeader })
	var orderID string
	for _, o := range kt.Orders() {
		if o.Tag == broker.Tag(id) {
			orderID = o.ID
		}
	}
	if err := kt.Fill(orderID); err != nil {
		t.Fatal(err)
	}
	tr.mustSee(t, "is complete: 10 filled at 1,490.00 on average")
	time.Sleep(3 * time.Second)
	tr.mu.Lock()
	n := strings.Count(strings.Join(tr.seen, "\n"), "is complete")
	tr.mu.Unlock()
	if n != 1 || kt.AllOrdersPlaced() != 1 {
		t.Errorf("after the hand-over the desk was told of the fill %d times and Kite holds %d orders; want 1 and 1", n, kt.AllOrdersPlaced())
	}
}

// Kite ends the session mid-day: the group is told once, with the login
// button, and the desks' orders are refused saying an approver must log
// in; nothing is sent to Kite until someone does. The button answers a
// stranger's tap with a refusal and an approver's with a login page bound
// to that approver, through which the desks trade again.
func TestKiteSessionEndsMidDay(t *testing.T) {
	t.Parallel()
	s, kt, tr := mustKiteTrading(t, map[string]string{"APPROVAL_TOOLS": "flatten_desk"})
	kt.ExpireSession()
	for range 2 {
		s.tg.InjectText(asha, groupID, `/tell main place {"symbol":"NSE:INFY","side":"buy","quantity":1}`, 0)
	}
	ended := s.mustBotMessage(t, "the group told the session ended", func(m telegramtest.Message) bool {
		return strings.HasPrefix(m.Plain, "⚠️ Kite ended the session Asha started at ")
	})
	login := button(t, ended, "Log in to Kite")
	deskbottest.EventuallyWithin(t, 15*time.Second, "both orders refused", func() bool {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return strings.Count(strings.Join(tr.seen, "\n"), "an approver must send /login") >= 2
	})
	posts := kt.Requests("POST", "/orders/*")
	time.Sleep(3 * time.Second)
	if n := botMessagesStarting(s, "⚠️ Kite ended the session"); n != 1 || kt.AllOrdersPlaced() != 0 || kt.Requests("POST", "/orders/*") != posts {
		t.Errorf("told %d times, %d orders at Kite, %d more order posts; want once, none, none", botMessagesStarting(s, "⚠️ Kite ended the session"), kt.AllOrdersPlaced(), kt.Requests("POST", "/orders/*")-posts)
	}

	pages := botMessagesStarting(s, "Log in to Kite with the button")
	q := s.tg.InjectCallback(stranger, groupID, ended.ID, login)
	s.tg.WaitFor(t, 10*time.Second, func(srv *telegramtest.Server) bool { _, _, ok := srv.CallbackAnswer(q); return ok })
	if text, alert, _ := s.tg.CallbackAnswer(q); !alert || !strings.Contains(text, "approver") {
		t.Errorf("a stranger's tap on the login button answered %q (alert %v); want refused", text, alert)
	}
	if n := botMessagesStarting(s, "Log in to Kite with the button") - pages; n != 0 {
		t.Errorf("a stranger's tap sent %d login pages; want none", n)
	}
	s.tg.InjectCallback(ravi, groupID, ended.ID, login)
	page := s.mustBotMessage(t, "the login page for the approver who tapped", func(m telegramtest.Message) bool {
		return m.ID > ended.ID && strings.HasPrefix(m.Plain, "Log in to Kite with the button") && len(m.Keyboard) > 0 && m.Keyboard[0][0].URL != ""
	})
	u, err := url.Parse(page.Keyboard[0][0].URL)
	if err != nil {
		t.Fatal(err)
	}
	params, _ := url.ParseQuery(u.Query().Get("redirect_params"))
	if code, body := callback(t, s, redirect(params.Get("state"), kt.Login(kiteUser))); code != 200 {
		t.Fatalf("login through the button: %d %s", code, body)
	}
	s.mustBotMessage(t, "the group told who logged in", func(m telegramtest.Message) bool {
		return strings.HasPrefix(m.Plain, "🔑 Ravi logged in to Kite")
	})
	s.tg.InjectText(asha, groupID, `/tell main place {"symbol":"NSE:INFY","side":"buy","quantity":1}`, 0)
	deskbottest.EventuallyWithin(t, 15*time.Second, "an order at Kite after the login", func() bool { return kt.AllOrdersPlaced() == 1 })
}

// A held cancel_order names the order it cancels in trading words; the
// approver's allow cancels exactly that order at Kite. A desk naming
// another desk's order, or one that does not exist, is refused before
// anyone is asked.
func TestKiteCancelFromThePhone(t *testing.T) {
	t.Parallel()
	s, kt, tr := mustKiteTrading(t, map[string]string{"APPROVAL_TOOLS": "cancel_order"})
	s.tg.InjectText(asha, groupID, `/tell main place {"symbol":"NSE:INFY","side":"buy","quantity":10,"price":1490}`, 0)
	tr.mustSee(t, "· open. It rests at the broker")
	orderID := kt.Orders()[0].ID

	s.tg.InjectText(asha, groupID, `/tell main cancel {"order_id":"`+orderID+`"}`, 0)
	held := s.mustBotMessage(t, "the held cancel", func(m telegramtest.Message) bool {
		return len(m.Keyboard) > 0 && strings.Contains(m.Plain, "cancel_order")
	})
	if want := "Cancels order " + orderID + " · BUY 10 INFY LIMIT @ 1,490.00 · MIS · open"; !strings.Contains(held.Plain, want) {
		t.Errorf("the held cancel reads %q; want %q", held.Plain, want)
	}
	s.tg.InjectCallback(asha, groupID, held.ID, button(t, held, "Allow once"))
	tr.mustSee(t, "Cancelled: order "+orderID)
	if o, _ := kt.Order(orderID); o.Status != kitetest.StatusCancelled {
		t.Errorf("the order at Kite is %s after the allowed cancel; want cancelled", o.Status)
	}
}

// A burst of 1,000 held orders allowed at once (from the desks page, as
// fast as an approver's phone can send them) places 1,000 orders at Kite,
// one per allowed call, at Kite's pace: the fake, enforcing Kite's
// published limits, never has to answer 429.
//
// A drill: the whole service waits out Kite's real pace (400 orders a
// minute, about two and a half minutes), so it runs with the fault drills
// (DESKBOT_E2E=1, .ci/faults), on real Redis. The client's pacing itself
// is checked on a fast clock in broker/kite (TestThousandOrdersAtOnce).
func TestKiteThousandAllowedOrdersInABurst(t *testing.T) {
	t.Parallel()
	if os.Getenv("DESKBOT_E2E") != "1" {
		t.Skip("a drill: waits out Kite's real pace for about two and a half minutes; runs only with DESKBOT_E2E=1 (see .ci/faults)")
	}
	s, kt, _ := mustKiteTrading(t, map[string]string{"APPROVAL_TOOLS": "place_order", "WEBAPP_URL": "http://127.0.0.1" + pagePath, "WEBAPP_NAME": "desks"})
	const n = 1000
	ids := make([]string, n)
	for i := range ids {
		call := deskbot.ToolCall{ID: fmt.Sprintf("call_%d", i), Name: deskbot.ToolPlaceOrder, Arguments: json.RawMessage(`{"symbol":"INFY","side":"buy","quantity":1,"price":1490}`)}
		r, _, err := s.main.Gate.Hold(t.Context(), "main", fmt.Sprintf("burst-%d", i), call)
		if err != nil {
			t.Fatalf("hold %d: %v", i, err)
		}
		ids[i] = r.ID
	}
	start := time.Now()
	var wg sync.WaitGroup
	work := make(chan string)
	for range 16 {
		wg.Go(func() {
			for id := range work {
				if code, body, _ := s.pageCall(t, "POST", "a/decide", initDataFor(asha, time.Now()), url.Values{"id": {id}, "decision": {"allow_once"}}); code != 200 {
					t.Errorf("allow %s: %d %s", id, code, body)
				}
			}
		})
	}
	for _, id := range ids {
		work <- id
	}
	close(work)
	wg.Wait()
	deskbottest.EventuallyWithin(t, 5*time.Minute, "1,000 orders at Kite", func() bool { return kt.AllOrdersPlaced() >= n })
	took := time.Since(start)
	time.Sleep(3 * time.Second) // nothing more comes
	if got := kt.AllOrdersPlaced(); got != n {
		t.Errorf("orders at Kite: %d, want %d", got, n)
	}
	for _, id := range ids {
		if got := kt.OrdersPlaced(broker.Tag(id)); got != 1 {
			t.Errorf("request %s placed %d orders, want 1", id, got)
		}
	}
	if got := kt.Served429(); got != 0 {
		t.Errorf("the fake answered %d 429s, want none", got)
	}
	t.Logf("%d allowed orders placed in %s (%.1f a second)", n, took.Round(time.Second), n/took.Seconds())
}
