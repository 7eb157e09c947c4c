package agent_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/deskbot/deskbot"
)

// The hostile desk below names no price (MARKET, SL-M) so that its order
// reads as ₹0 to every limit, with TCS trading at ₹1,000 (mustLimits).

// marketOrder is a place_order call's arguments for TCS with extra
// arguments (order_type, trigger_price) after its quantity.
func marketOrder(side string, qty float64, extra string) string {
	return fmt.Sprintf(`{"symbol":"TCS","side":%q,"quantity":%v%s}`, side, qty, extra)
}

// quotesDown is the broker with its market's prices unreadable.
type quotesDown struct{ deskbot.Broker }

func (quotesDown) LastPrice(context.Context, string) (deskbot.Price, bool, error) {
	return deskbot.Price{}, false, deskbot.Errorf(deskbot.EUNAVAILABLE, "Kite's quotes could not be read")
}

// A market order is counted at the market's price by every hard limit: a
// million shares named at no price are ₹100 crore, not ₹0.
func TestHostileMarketOrderIsCountedAtTheMarket(t *testing.T) {
	for _, tt := range []struct {
		name   string
		policy deskbot.ToolPolicy
		args   string
		want   string // the refusal's words
	}{
		{"a million shares at the market", deskbot.ToolPolicy{MaxOrderNotional: 2000000}, marketOrder("buy", 1000000, ``),
			"its notional ₹1,00,00,00,000.00 at the market's price of ₹1,000.00 is above the desk's limit of ₹20,00,000.00 for one order"},
		{"named MARKET", deskbot.ToolPolicy{MaxOrderNotional: 2000000}, marketOrder("sell", 1000000, `,"order_type":"MARKET"`),
			"its notional ₹1,00,00,00,000.00 at the market's price of ₹1,000.00"},
		{"an SL-M triggered above the market", deskbot.ToolPolicy{MaxOrderNotional: 2000000}, marketOrder("buy", 1500, `,"order_type":"SL-M","trigger_price":1500`),
			"its notional ₹22,50,000.00 at its trigger price of ₹1,500.00 is above the desk's limit"},
		{"an SL limited below the market", deskbot.ToolPolicy{MaxOrderNotional: 2000000}, marketOrder("sell", 2500, `,"order_type":"SL","price":1,"trigger_price":2`),
			"its notional ₹25,00,000.00 at the market's price of ₹1,000.00"},
		{"a market position", deskbot.ToolPolicy{MaxPositionNotional: 1000000}, marketOrder("buy", 1001, ``),
			"it would take the desk's TCS position to long 1,001 (₹10,01,000.00 at the market's price of ₹1,000.00"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := mustLimits(t, tt.policy, true)
			ex := f.place(t, "t", tt.args)
			if !ex.Refused || ex.Held || !ex.Result.Limit || !strings.Contains(ex.Result.Text, tt.want) {
				t.Fatalf("%s (%q); want refused by a hard limit with %q", outcome(ex.Held, ex.Refused), ex.Result.Text, tt.want)
			}
			if open, _ := f.store.OpenRequests(t.Context()); len(open) != 0 {
				t.Errorf("a request exists: %+v", open[0])
			}
		})
	}
}

// Market orders split to slip under the position limit: each held one
// counts as filled at the market's price, so the split stops where the
// whole would have.
func TestHostileMarketOrdersSplitUnderThePositionLimit(t *testing.T) {
	f := mustLimits(t, deskbot.ToolPolicy{MaxPositionNotional: 1000000}, true) // 1,000 TCS
	var got []string
	for i := range 5 {
		ex := f.place(t, fmt.Sprintf("part-%d", i), marketOrder("buy", 300, ``))
		got = append(got, outcome(ex.Held, ex.Refused))
	}
	if want := []string{"held", "held", "held", "refused", "refused"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("five market buys of 300: %v; want %v", got, want)
	}
}

// Under two_approvers_above an SL-M is counted at the market's price (or
// its trigger, where higher), alone and over the day: a large one needs
// two approvers and no grant covers it.
func TestHostileStopMarketOrderUnderFourEyes(t *testing.T) {
	policy := deskbot.ToolPolicy{Approvals: 2, TwoApproversAbove: 1000000}
	for _, tt := range []struct {
		name    string
		granted bool // a one-person grant up to the threshold
		args    string
		want    string // ran, refused, or held by N
	}{
		{"a large SL-M", false, marketOrder("sell", 2000, `,"order_type":"SL-M","trigger_price":990`), "held by 2"},              // ₹20,00,000
		{"a large SL-M under a grant", true, marketOrder("sell", 2000, `,"order_type":"SL-M","trigger_price":990`), "held by 2"}, // the grant stops at ₹10,00,000
		{"triggered far above", false, marketOrder("buy", 200, `,"order_type":"SL-M","trigger_price":6000`), "held by 2"},        // ₹12,00,000 at its trigger
		{"a small SL-M", false, marketOrder("sell", 500, `,"order_type":"SL-M","trigger_price":990`), "held by 1"},               // ₹5,00,000
		{"a large market order", false, marketOrder("buy", 1001, ``), "held by 2"},
		{"a small market order", false, marketOrder("buy", 1000, ``), "held by 1"}, // at the threshold
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := mustLimits(t, policy, true)
			if tt.granted {
				f.mustGrant(t, 1000000)
			}
			ex := f.place(t, "t", tt.args)
			got := outcome(ex.Held, ex.Refused)
			if ex.Held {
				r, err := f.store.Request(t.Context(), ex.Request.ID)
				if err != nil {
					t.Fatal(err)
				}
				got = fmt.Sprintf("held by %d", r.Required)
			}
			if got != tt.want {
				t.Errorf("%s (%q); want %s", got, ex.Result.Text, tt.want)
			}
		})
	}
	t.Run("split over the day", func(t *testing.T) {
		// Four SL-M orders of ₹5 lakh at the market are one of ₹20 lakh.
		f := mustLimits(t, policy, true)
		for i := range 4 {
			if ex := f.place(t, fmt.Sprintf("part-%d", i), marketOrder("sell", 500, `,"order_type":"SL-M","trigger_price":990`)); !ex.Held {
				t.Fatalf("part %d: %+v; want held", i, ex)
			}
		}
		if got, want := f.mustApproversNeeded(t), []int{1, 1, 2, 2}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("approvers needed = %v; want %v", got, want)
		}
	})
}

// When the market's price cannot be read, or the market has none for the
// symbol, an order counted at it is refused, never counted at ₹0: no
// request, nothing placed, nothing added to the day.
func TestHostileMarketOrderWithoutAPriceIsRefused(t *testing.T) {
	for _, tt := range []struct {
		name   string
		policy deskbot.ToolPolicy
		down   bool // the market's prices cannot be read
		args   string
		want   string
	}{
		{"quotes down, one-order limit", deskbot.ToolPolicy{MaxOrderNotional: 2000000}, true, marketOrder("buy", 1000000, ``),
			"it could not be checked before anyone was asked (Kite's quotes could not be read)"},
		{"quotes down, four eyes", deskbot.ToolPolicy{Approvals: 2, TwoApproversAbove: 1000000}, true, marketOrder("buy", 1, `,"order_type":"SL-M","trigger_price":1001`),
			"it could not be checked before anyone was asked (Kite's quotes could not be read)"},
		{"no price for the symbol", deskbot.ToolPolicy{MaxOrderNotional: 2000000}, false, `{"symbol":"INFY","side":"buy","quantity":1000000}`,
			"the market has no last price for INFY, and this MARKET buy order is counted at the market's price, so it cannot be sized. Nobody was asked."},
		{"no price for a stop", deskbot.ToolPolicy{Approvals: 2, TwoApproversAbove: 1000000}, false, `{"symbol":"INFY","side":"sell","quantity":10,"order_type":"SL","price":1,"trigger_price":2}`,
			"the market has no last price for INFY, and this SL sell order is counted at the market's price"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := mustLimits(t, tt.policy, true)
			if tt.down {
				f.sizer.Market = quotesDown{f.paper}
			}
			ex := f.place(t, "t", tt.args)
			if !ex.Refused || ex.Held || !strings.Contains(ex.Result.Text, tt.want) {
				t.Fatalf("%s (%q); want refused with %q", outcome(ex.Held, ex.Refused), ex.Result.Text, tt.want)
			}
			if open, _ := f.store.OpenRequests(t.Context()); len(open) != 0 {
				t.Errorf("a request exists: %+v", open[0])
			}
			if total, err := f.store.DayNotional(t.Context(), "main", deskbot.OrderDay(f.now)); err != nil || total != 0 {
				t.Errorf("day's notional = %v, %v; want 0", total, err)
			}
		})
	}
}
