package bot_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/bot/telegramtest"
)

// marginBroker is a broker that keeps margins: it answers Margin with m,
// after block (ignoring its context, as a hung broker would) when block is
// set.
type marginBroker struct {
	deskbot.Broker
	m     deskbot.OrderMargin
	block time.Duration
}

func (b marginBroker) Margin(ctx context.Context, o deskbot.Order) (deskbot.OrderMargin, bool, error) {
	time.Sleep(b.block)
	return b.m, true, nil
}

// A held order at market reads as a trader says it, with the desk's
// product, and its notional at the market's last price: it names no price
// of its own. An order with a limit is valued at its limit, in the product
// it names.
func TestHeldMarketOrderReadsAtTheLastPrice(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	h.broker.market.Set("INFY", 1500)
	for _, tt := range []struct {
		name     string
		policies deskbot.Policies
		args     string
		want     []string
	}{
		{"market, the default product", nil, `{"symbol":"NSE:INFY","side":"buy","quantity":50}`,
			[]string{"BUY 50 INFY MARKET · MIS\nNotional ≈ ₹75,000.00 at the last price\n"}},
		{"market, the desk's product", deskbot.Policies{"alpha": {deskbot.ToolPlaceOrder: {Product: deskbot.ProductNRML}}}, `{"symbol":"NSE:INFY","side":"buy","quantity":50}`,
			[]string{"BUY 50 INFY MARKET · NRML\n"}},
		{"limit, its own product", deskbot.Policies{"alpha": {deskbot.ToolPlaceOrder: {Product: deskbot.ProductNRML}}}, `{"symbol":"NSE:INFY","side":"sell","quantity":50,"price":1600,"product":"CNC"}`,
			[]string{"SELL 50 INFY LIMIT @ 1,600.00 · CNC\nNotional ₹80,000.00\n"}},
		// A sell limited at a paisa fills at the market's price: the
		// approver reads what it is worth there, not ₹0.50.
		{"limit sell below the market", nil, `{"symbol":"NSE:INFY","side":"sell","quantity":50,"price":0.01}`,
			[]string{"SELL 50 INFY LIMIT @ 0.01 · MIS\nNotional ≈ ₹75,000.00 at the last price, where a sell limited at ₹0.01 fills\n"}},
	} {
		h.policies = tt.policies
		h.restart()
		_, m := h.holdOrder("alpha", tt.args)
		for _, want := range tt.want {
			if !strings.Contains(m.Plain, want) {
				t.Errorf("%s: request reads %q; missing %q", tt.name, m.Plain, want)
			}
		}
		if strings.Contains(m.Plain, "Margin") {
			t.Errorf("%s: the paper broker keeps no margins, yet the request reads %q", tt.name, m.Plain)
		}
	}
}

// With a broker that keeps margins, a held order says the margin it needs
// against what is available, above the call; a broker whose Margin hangs
// holds the message back by the words' 2 s at most, and it goes out
// without the margin.
func TestHeldOrderShowsItsMargin(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		block  time.Duration
		margin bool
	}{
		{"answers", 0, true},
		{"hangs 5s", 5 * time.Second, false},
	} {
		h := mustE2E(t)
		h.broker.market.Set("INFY", 1500)
		h.brokerFor = func(b deskbot.Broker) deskbot.Broker {
			return marginBroker{Broker: b, m: deskbot.OrderMargin{Required: 15000, Available: 250000}, block: tt.block}
		}
		h.restart()
		start := time.Now()
		r := h.holdCall("alpha", `{"symbol":"NSE:INFY","side":"buy","quantity":50}`)
		m := h.waitMessage(func(m telegramtest.Message) bool {
			return strings.Contains(m.Text, shortID(r.ID)) && len(m.Keyboard) > 0
		})
		took := time.Since(start)
		const line = "Margin needed ₹15,000.00 · available ₹2,50,000.00\n"
		if got := strings.Contains(m.Plain, line); got != tt.margin {
			t.Errorf("%s: request reads %q; margin line shown %v, want %v", tt.name, m.Plain, got, tt.margin)
		}
		words, _, _ := strings.Cut(m.Plain, `{"quantity"`)
		if !strings.Contains(words, "BUY 50 INFY MARKET · MIS\n") || !strings.Contains(m.Plain, `{"quantity":50,"side":"buy","symbol":"NSE:INFY"}`) {
			t.Errorf("%s: request reads %q; want the order's words above the call, whole", tt.name, m.Plain)
		}
		if tt.block > 0 && took > 4*time.Second {
			t.Errorf("%s: the request was shown %v after it was held; want about 2s (the margin is waited for no longer)", tt.name, took)
		}
	}
}

// An order's fill or rejection, told by the broker as an order event,
// reaches the desk's own topic with the outcomes of held calls, as a
// message of its own even when it names the request whose call placed
// the order.
func TestOrderEventReachesTheDesksTopic(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	h.tg.SetForum(groupID, true)
	h.topics = true
	h.restart()
	h.sayAs("alpha", "alpha is here") // makes alpha's topic
	alpha := h.topicOf("alpha")
	// The request its call placed the order from, never shown in the chat
	// (as one decided from the desks page before its message went out).
	now := time.Now()
	r := &deskbot.Request{ID: "req-order", Desk: "alpha", Kind: deskbot.KindPermission, State: deskbot.StateRan,
		Content:   deskbot.PermissionContent{ToolName: "place_order", Arguments: []byte(`{"symbol":"NSE:INFY","side":"buy","quantity":50,"price":1500}`), CallID: "call_1"},
		CreatedAt: now, ExpiresAt: now.Add(5 * time.Minute)}
	if err := h.st.CreateRequest(t.Context(), r, deskbot.AuditEntry{Action: "hold", Desk: "alpha", At: now}, deskbot.Event{Kind: deskbot.EventToolCall, Desk: "alpha", Time: now}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, id, request string
	}{
		{"on its own", "2512040001", ""},
		{"naming its request", "2512040002", r.ID},
	} {
		text := "alpha · order " + tt.id + " complete: BUY 50 INFY LIMIT @ 1,500.00 · MIS · 50 @ 1,499.75 avg <b>"
		if err := h.st.Publish(t.Context(), deskbot.Event{Kind: deskbot.EventOrder, Desk: "alpha", RequestID: tt.request, Time: h.clock.Now(), Text: text}); err != nil {
			t.Fatal(err)
		}
		m := h.waitMessage(func(m telegramtest.Message) bool { return strings.Contains(m.Plain, "order "+tt.id) })
		if m.ThreadID != alpha {
			t.Errorf("%s: the order event went to thread %d; want alpha's topic %d", tt.name, m.ThreadID, alpha)
		}
		if m.Plain != text {
			t.Errorf("%s: the order event reads %q; want %q, its markup as text", tt.name, m.Plain, text)
		}
	}
}

// ordersBroker reports orders as the desk's day's orders, or fails to.
type ordersBroker struct {
	deskbot.Broker
	orders []deskbot.PlacedOrder
	err    error
}

func (b ordersBroker) Orders(ctx context.Context, desk string) ([]deskbot.PlacedOrder, error) {
	return b.orders, b.err
}

// /desk lists the desk's orders still open at the broker as get_orders
// says them, and says so when they cannot be read.
func TestDeskListsItsOpenOrders(t *testing.T) {
	t.Parallel()
	infy := deskbot.Order{Symbol: "INFY", Side: deskbot.Buy, Quantity: 50, Type: deskbot.OrderLimit, Price: 1500, Product: deskbot.ProductMIS}
	orders := []deskbot.PlacedOrder{
		{ID: "2512040001", Desk: "alpha", Order: infy, State: deskbot.OrderPartlyFilled, Filled: 20, AvgPrice: 1499.5},
		{ID: "2512040002", Desk: "alpha", Order: infy, State: deskbot.OrderComplete, Filled: 50, AvgPrice: 1499},
	}
	for _, tt := range []struct {
		name string
		b    ordersBroker
		want string
	}{
		{"open ones listed", ordersBroker{orders: orders},
			"Open orders (1):\norder 2512040001 · BUY 50 INFY LIMIT @ 1,500.00 · MIS · partly filled 20 @ 1,499.50 avg\n"},
		{"none open", ordersBroker{orders: orders[1:]}, "Open orders: none.\n"},
		{"not read", ordersBroker{err: deskbot.Errorf(deskbot.EUNAVAILABLE, "broker down")}, "Open orders: not known (the broker's orders could not be read).\n"},
	} {
		h := mustE2E(t)
		h.brokerFor = func(b deskbot.Broker) deskbot.Broker { tt.b.Broker = b; return tt.b }
		h.restart()
		got := h.replyTo(groupID, h.say(ravi, "/desk alpha", 0)).Plain
		if !strings.Contains(got, tt.want) || strings.Contains(got, "2512040002") {
			t.Errorf("%s: /desk alpha shows %q; want it to contain %q and no order no longer open", tt.name, got, tt.want)
		}
	}
}
