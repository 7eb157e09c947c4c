package words_test

import (
	"strings"
	"testing"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/words"
)

func infy(side string, typ string, price, trigger float64) deskbot.Order {
	return deskbot.Order{Symbol: "INFY", Side: side, Quantity: 50, Type: typ, Price: price, TriggerPrice: trigger, Product: deskbot.ProductMIS}
}

func TestFormatOrder(t *testing.T) {
	amo := infy(deskbot.Sell, deskbot.OrderSLM, 0, 1495)
	amo.Variety = deskbot.VarietyAMO
	noProduct := infy(deskbot.Buy, deskbot.OrderMarket, 0, 0)
	noProduct.Product = ""
	tests := []struct {
		name string
		o    deskbot.Order
		want string
	}{
		{"limit", deskbot.Order{Symbol: "NFO:NIFTY25DECFUT", Side: deskbot.Buy, Quantity: 50, Type: deskbot.OrderLimit, Price: 24512.5, Product: deskbot.ProductNRML},
			"BUY 50 NFO:NIFTY25DECFUT LIMIT @ 24,512.50 · NRML"},
		{"market", infy(deskbot.Buy, deskbot.OrderMarket, 0, 0), "BUY 50 INFY MARKET · MIS"},
		{"stop loss", infy(deskbot.Sell, deskbot.OrderSL, 1490, 1495), "SELL 50 INFY SL @ 1,490.00 trigger 1,495.00 · MIS"},
		{"stop loss at market", infy(deskbot.Sell, deskbot.OrderSLM, 0, 1495), "SELL 50 INFY SL-M trigger 1,495.00 · MIS"},
		{"after market", amo, "SELL 50 INFY SL-M trigger 1,495.00 · MIS · AMO"},
		{"regular variety says nothing", func() deskbot.Order {
			o := infy(deskbot.Buy, deskbot.OrderMarket, 0, 0)
			o.Variety = deskbot.VarietyRegular
			return o
		}(), "BUY 50 INFY MARKET · MIS"},
		{"no product", noProduct, "BUY 50 INFY MARKET"},
		{"the desk's product", noProduct.ForDesk(deskbot.ProductCNC), "BUY 50 INFY MARKET · CNC"},
		{"kept before order types: a price reads as a limit", deskbot.Order{Symbol: "INFY", Side: deskbot.Buy, Quantity: 10, Price: 1500.5}, "BUY 10 INFY LIMIT @ 1,500.50"},
		{"kept before order types: never a market order", deskbot.Order{Symbol: "INFY", Side: deskbot.Buy, Quantity: 10}, "BUY 10 INFY LIMIT @ 0.00"},
	}
	for _, tt := range tests {
		if got := words.FormatOrder(tt.o); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}

// An order at market is valued at the market's last price, never at a
// price of its own; one with a limit at its limit.
func TestNotional(t *testing.T) {
	tests := []struct {
		name string
		o    deskbot.Order
		last float64
		want string
	}{
		{"limit at its limit, whatever the market", infy(deskbot.Buy, deskbot.OrderLimit, 1500, 0), 1600, "notional ₹75,000.00"},
		{"stop loss at its limit", infy(deskbot.Sell, deskbot.OrderSL, 1490, 1495), 1600, "notional ₹74,500.00"},
		{"market at the last price", infy(deskbot.Buy, deskbot.OrderMarket, 0, 0), 1510.5, "notional ≈ ₹75,525.00 at the last price"},
		{"stop loss at market at the last price", infy(deskbot.Sell, deskbot.OrderSLM, 0, 1495), 1500, "notional ≈ ₹75,000.00 at the last price"},
		{"market without a last price", infy(deskbot.Buy, deskbot.OrderMarket, 0, 0), 0, "notional not known: no last price for INFY just now"},
		// A sell limited below the market fills at the market: a paisa is
		// not what it is worth.
		{"limit sell below the market at the last price", infy(deskbot.Sell, deskbot.OrderLimit, 0.01, 0), 1500, "notional ≈ ₹75,000.00 at the last price, where a sell limited at ₹0.01 fills"},
		{"limit sell above the market at its limit", infy(deskbot.Sell, deskbot.OrderLimit, 1600, 0), 1500, "notional ₹80,000.00"},
		{"limit sell without a last price at its limit", infy(deskbot.Sell, deskbot.OrderLimit, 0.01, 0), 0, "notional ₹0.50"},
	}
	for _, tt := range tests {
		if got := words.Notional(tt.o, tt.last); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
	book := &deskbot.Book{Positions: []deskbot.Position{{Symbol: "INFY", Quantity: 20}}}
	if got, want := words.OrderSummary(infy(deskbot.Buy, deskbot.OrderMarket, 0, 0), book, 1500), "BUY 50 INFY MARKET · MIS, notional ≈ ₹75,000.00 at the last price, position after: long 70"; got != want {
		t.Errorf("OrderSummary: got %q, want %q", got, want)
	}
}

func placed(state deskbot.OrderState, filled, avg float64, reason string) deskbot.PlacedOrder {
	return deskbot.PlacedOrder{ID: "2512040001", Tag: "t1", Desk: "alpha", Order: infy(deskbot.Buy, deskbot.OrderLimit, 1500, 0),
		State: state, Filled: filled, AvgPrice: avg, Reason: reason}
}

func TestPlacedLine(t *testing.T) {
	pending := placed(deskbot.OrderPending, 0, 0, "")
	pending.ID = ""
	tests := []struct {
		name string
		po   deskbot.PlacedOrder
		want string
	}{
		{"open", placed(deskbot.OrderOpen, 0, 0, ""), "order 2512040001 · BUY 50 INFY LIMIT @ 1,500.00 · MIS · open"},
		{"partly filled", placed(deskbot.OrderPartlyFilled, 20, 1499.5, ""), "order 2512040001 · BUY 50 INFY LIMIT @ 1,500.00 · MIS · partly filled 20 @ 1,499.50 avg"},
		{"complete", placed(deskbot.OrderComplete, 50, 1499.75, ""), "order 2512040001 · BUY 50 INFY LIMIT @ 1,500.00 · MIS · complete 50 @ 1,499.75 avg"},
		{"rejected with the broker's reason", placed(deskbot.OrderRejected, 0, 0, "Insufficient\nfunds"), "order 2512040001 · BUY 50 INFY LIMIT @ 1,500.00 · MIS · rejected: Insufficient funds"},
		{"cancelled after a part", placed(deskbot.OrderCancelled, 20, 1499.5, "by the desk"), "order 2512040001 · BUY 50 INFY LIMIT @ 1,500.00 · MIS · cancelled after 20 @ 1,499.50 avg: by the desk"},
		{"pending, no id yet", pending, "order (no broker id yet) · BUY 50 INFY LIMIT @ 1,500.00 · MIS · pending"},
		{"not placed", placed(deskbot.OrderNotPlaced, 0, 0, ""), "order 2512040001 · BUY 50 INFY LIMIT @ 1,500.00 · MIS · not placed"},
	}
	for _, tt := range tests {
		if got := words.PlacedLine(tt.po); got != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, got, tt.want)
		}
	}
}

// An allowed order's outcome tells people where it stood when placed:
// its id, its state, what filled, the broker's reason; none of what the
// answer tells the desk's model besides.
func TestOrderOutcome(t *testing.T) {
	pending := placed(deskbot.OrderPending, 0, 0, "")
	pending.ID = ""
	for _, tt := range []struct {
		name, answer, want string
	}{
		{"filled", "Filled: " + words.PlacedLine(placed(deskbot.OrderComplete, 50, 1499.75, "")) + ". Now INFY: long 50, avg 1,499.75, last 1,499.75, unrealised +₹0.00.",
			"order 2512040001 · complete 50 @ 1,499.75 avg"},
		{"filled, no book", "Filled: " + words.PlacedLine(placed(deskbot.OrderComplete, 50, 1499.75, "")) + ". (Position unavailable just now; call get_positions.)",
			"order 2512040001 · complete 50 @ 1,499.75 avg"},
		{"resting", "Placed: " + words.PlacedLine(placed(deskbot.OrderOpen, 0, 0, "")) + ". It rests at the broker; its fills reach you as messages, and get_orders shows it.",
			"order 2512040001 · open"},
		{"partly filled", "Placed: " + words.PlacedLine(placed(deskbot.OrderPartlyFilled, 20, 1499.5, "")) + ". It rests at the broker; its fills reach you as messages, and get_orders shows it. Now INFY: long 20, avg 1,499.50, last 1,499.50, unrealised +₹0.00.",
			"order 2512040001 · partly filled 20 @ 1,499.50 avg"},
		{"rejected", "Not filled: " + words.PlacedLine(placed(deskbot.OrderRejected, 0, 0, "insufficient funds")) + ".",
			"order 2512040001 · rejected: insufficient funds"},
		{"pending, no id yet", "Placed: " + words.PlacedLine(pending) + ". It rests at the broker; its fills reach you as messages, and get_orders shows it.",
			"order (no broker id yet) · pending"},
	} {
		got, ok := words.OrderOutcome(tt.answer)
		if !ok || got != tt.want {
			t.Errorf("%s:\n got %q (%v)\nwant %q", tt.name, got, ok, tt.want)
		}
	}
	for _, answer := range []string{"", "order for INFY is too large: the position would overflow", "bought 10 RELIANCE @ 100.00"} {
		if got, ok := words.OrderOutcome(answer); ok {
			t.Errorf("OrderOutcome(%q) = %q; want none", answer, got)
		}
	}
}

// What a desk's model is told of its order's change is pinned word for
// word: it is part of the contract with the model.
func TestOrderUpdate(t *testing.T) {
	const head = "Your order 2512040001 (BUY 50 INFY LIMIT @ 1,500.00 · MIS)"
	tests := []struct {
		name string
		po   deskbot.PlacedOrder
		want string
	}{
		{"open", placed(deskbot.OrderOpen, 0, 0, ""), head + " is open at the broker; nothing of it has filled yet."},
		{"partly filled", placed(deskbot.OrderPartlyFilled, 20, 1499.5, ""), head + " is partly filled: 20 of 50 filled at 1,499.50 on average. The rest is still open."},
		{"complete", placed(deskbot.OrderComplete, 50, 1499.75, ""), head + " is complete: 50 filled at 1,499.75 on average."},
		{"rejected", placed(deskbot.OrderRejected, 0, 0, "RMS: margin exceeds"), head + " was rejected; nothing of it filled. The broker says: RMS: margin exceeds."},
		{"cancelled after a part", placed(deskbot.OrderCancelled, 20, 1499.5, ""), head + " was cancelled after 20 of 50 filled at 1,499.50 on average; the rest will not fill."},
		{"cancelled", placed(deskbot.OrderCancelled, 0, 0, "market closed"), head + " was cancelled; nothing of it filled. The broker says: market closed."},
		{"not placed", placed(deskbot.OrderNotPlaced, 0, 0, ""), head + " was not placed: the broker has no order of it, so nothing traded."},
	}
	for _, tt := range tests {
		if got := words.OrderUpdate(tt.po); got != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, got, tt.want)
		}
	}
}

func TestOrderEvent(t *testing.T) {
	const order = "BUY 50 INFY LIMIT @ 1,500.00 · MIS"
	tests := []struct {
		name string
		po   deskbot.PlacedOrder
		want string
	}{
		{"complete", placed(deskbot.OrderComplete, 50, 1499.75, ""), "alpha · order 2512040001 complete: " + order + " · 50 @ 1,499.75 avg"},
		{"partly filled", placed(deskbot.OrderPartlyFilled, 20, 1499.5, ""), "alpha · order 2512040001 partly filled: " + order + " · 20 of 50 @ 1,499.50 avg"},
		{"rejected", placed(deskbot.OrderRejected, 0, 0, "insufficient funds"), "alpha · order 2512040001 rejected: " + order + " · insufficient funds"},
		{"a long reason is cut", placed(deskbot.OrderRejected, 0, 0, strings.Repeat("x", 300)), "alpha · order 2512040001 rejected: " + order + " · " + strings.Repeat("x", 199) + "…"},
	}
	for _, tt := range tests {
		if got := words.OrderEvent(tt.po); got != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, got, tt.want)
		}
	}
}

// A flatten says what it cancelled, what it closed at once, the closing
// orders it placed (open until they fill) and what it could not close.
func TestFlattenWordsOfARealBroker(t *testing.T) {
	cancelled := placed(deskbot.OrderCancelled, 0, 0, "")
	closing := deskbot.PlacedOrder{ID: "2512040009", Desk: "alpha", State: deskbot.OrderOpen,
		Order: deskbot.Order{Symbol: "RELIANCE", Side: deskbot.Sell, Quantity: 6, Type: deskbot.OrderMarket, Product: deskbot.ProductMIS}}
	r := deskbot.FlattenReport{Cancelled: []deskbot.PlacedOrder{cancelled}, Placed: []deskbot.PlacedOrder{closing}, Left: []string{"SBIN: the account holds 5 of the desk's 10"}}
	tests := []struct {
		name, got, want string
	}{
		{"FormatFlatten", words.FormatFlatten(r),
			"Cancelled 1 open order: order 2512040001 · BUY 50 INFY LIMIT @ 1,500.00 · MIS · cancelled. " +
				"Placed 1 closing market order: order 2512040009 · SELL 6 RELIANCE MARKET · MIS · open; each is open until its fills come. " +
				"Not closed: SBIN: the account holds 5 of the desk's 10."},
		{"Closed", words.Closed(r),
			"cancelled 1 open order (order 2512040001 · BUY 50 INFY LIMIT @ 1,500.00 · MIS · cancelled), " +
				"placed 1 closing market order (order 2512040009 · SELL 6 RELIANCE MARKET · MIS · open), open until they fill, " +
				"could not close SBIN: the account holds 5 of the desk's 10"},
		{"Closed of nothing", words.Closed(deskbot.FlattenReport{}), "had no open positions to close"},
		{"Closed of a paper flatten", words.Closed(deskbot.FlattenReport{Closed: []deskbot.Fill{{Order: sell("INFY", 10, 1646.36), RealisedPnL: -2.6}}, RealisedPnL: -2.6}),
			"closed 1 position (sold 10 INFY @ 1,646.36 (realised -₹2.60)), realised -₹2.60"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, tt.got, tt.want)
		}
	}
}

// The held order's words name the desk's product, value an order at
// market at the last price, and add the margin when the broker gave it.
func TestTradingWordsOfAnOrder(t *testing.T) {
	req := func(args string) *deskbot.Request {
		return &deskbot.Request{State: deskbot.StateOpen, Content: deskbot.PermissionContent{ToolName: deskbot.ToolPlaceOrder, Arguments: []byte(args)}}
	}
	margin := &deskbot.OrderMargin{Required: 15000, Available: 500000}
	tests := []struct {
		name string
		r    *deskbot.Request
		live words.Live
		want string
	}{
		{"market at the last price, the desk's product", req(`{"symbol":"NSE:INFY","side":"buy","quantity":50}`), words.Live{Product: deskbot.ProductMIS, LastPrice: 1500},
			"BUY 50 INFY MARKET · MIS\nNotional ≈ ₹75,000.00 at the last price"},
		{"its own product wins", req(`{"symbol":"NSE:INFY","side":"buy","quantity":50,"price":1500,"product":"CNC"}`), words.Live{Product: deskbot.ProductMIS},
			"BUY 50 INFY LIMIT @ 1,500.00 · CNC\nNotional ₹75,000.00"},
		{"with the margin", req(`{"symbol":"NSE:INFY","side":"buy","quantity":50}`), words.Live{Product: deskbot.ProductMIS, LastPrice: 1500, Margin: margin, Book: &deskbot.Book{}},
			"BUY 50 INFY MARKET · MIS\nNotional ≈ ₹75,000.00 at the last price\nMargin needed ₹15,000.00 · available ₹5,00,000.00\nPosition after: long 50\nDesk P&L: realised +₹0.00, open +₹0.00"},
		{"a trigger the words would round gets no words", req(`{"symbol":"NSE:INFY","side":"sell","quantity":50,"order_type":"SL-M","trigger_price":1495.00001}`), words.Live{},
			""},
	}
	for _, tt := range tests {
		if got := strings.Join(words.TradingWords(tt.r, tt.live), "\n"); got != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, got, tt.want)
		}
	}
}

// A held cancel_order reads the order it cancels, from the desk's orders
// of the day; without them, or with arguments that are not one order id,
// it gets no words (the call below is what runs).
func TestCancelOrderWords(t *testing.T) {
	po := deskbot.PlacedOrder{ID: "261205000000001", Desk: "main", State: deskbot.OrderOpen,
		Order: deskbot.Order{Symbol: "INFY", Side: deskbot.Buy, Quantity: 10, Price: 1490, Type: deskbot.OrderLimit, Product: deskbot.ProductMIS}}
	req := func(args string) *deskbot.Request {
		return &deskbot.Request{Desk: "main", Content: deskbot.PermissionContent{ToolName: deskbot.ToolCancelOrder, Arguments: []byte(args)}}
	}
	for _, tt := range []struct {
		name, args string
		orders     []deskbot.PlacedOrder
		want       string
	}{
		{"its order", `{"order_id":"261205000000001"}`, []deskbot.PlacedOrder{po}, "Cancels order 261205000000001 · BUY 10 INFY LIMIT @ 1,490.00 · MIS · open"},
		{"no such order", `{"order_id":"9"}`, []deskbot.PlacedOrder{po}, "Cancels no order of this desk today: it has no order 9."},
		{"orders not read", `{"order_id":"261205000000001"}`, nil, ""},
		{"not one id", `{"order_id":"1","x":2}`, []deskbot.PlacedOrder{po}, ""},
	} {
		got := strings.Join(words.TradingWords(req(tt.args), words.Live{Orders: tt.orders}), "\n")
		if got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}
