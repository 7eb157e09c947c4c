package gate_test

import (
	"context"
	"fmt"
	"github.com/deskbot/deskbot/gate/gatetest"
	"strings"
	"sync"
	"testing"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/broker/brokertest"
	"github.com/deskbot/deskbot/gate"
	"github.com/deskbot/deskbot/sizing"
)

// market is the hard limits as the gate reads them (gate.Limits): orders
// sized by the real sizing.Sizer against a market the test sets, which
// may have no price for a symbol or be down.
type market struct {
	mu   sync.Mutex
	q    brokertest.Quotes
	down bool
}

func (m *market) Recheck(context.Context, string, deskbot.ToolCall) (string, error) { return "", nil }

// Check passes every call: these tests are of four eyes, not the limits.
func (m *market) Check(context.Context, string, deskbot.ToolCall) (func(), string) {
	return func() {}, ""
}

func (m *market) Size(ctx context.Context, o deskbot.Order) (*deskbot.SizedOrder, error) {
	return (&sizing.Sizer{Market: m}).Size(ctx, o)
}

func (m *market) LastPrice(ctx context.Context, symbol string) (deskbot.Price, bool, error) {
	m.mu.Lock()
	down := m.down
	m.mu.Unlock()
	if down {
		return deskbot.Price{}, false, deskbot.Errorf(deskbot.EUNAVAILABLE, "Kite's quotes could not be read")
	}
	return m.q.LastPrice(ctx, symbol)
}

func (m *market) LastPrices(ctx context.Context, symbols []string) (map[string]float64, error) {
	return broker.EachPrice(ctx, m, symbols)
}

func (m *market) Instrument(ctx context.Context, symbol string) (deskbot.Instrument, error) {
	return m.q.Instrument(ctx, symbol)
}

// atTheMarket makes desk main's orders need two approvers above
// ₹5,00,000 (twoForFlatten), valued at a market where TCS trades at
// ₹4,000.
func atTheMarket(m *market) func(*gate.Config) {
	return func(c *gate.Config) {
		twoForFlatten(c)
		m.q.Set("TCS", 4000)
		c.Limits = m
	}
}

func orderOf(symbol, side string, qty float64, extra string) string {
	return fmt.Sprintf(`{"symbol":%q,"side":%q,"quantity":%v%s}`, symbol, side, qty, extra)
}

// The hostile desk names no price (MARKET, SL-M) or a stop's limit far
// from the market to look small under two_approvers_above: four eyes
// counts the order at the market's price, and when that cannot be read
// the order is neither held nor run.
func TestFourEyesCountsAnOrderAtTheMarketsPrice(t *testing.T) {
	for _, tt := range []struct {
		name string
		args string
		want int // approvers; 0: not held
	}{
		{"small market order", orderOf("TCS", "buy", 100, ``), 1},                                                               // ₹4,00,000
		{"large market order", orderOf("TCS", "buy", 1000, `,"order_type":"MARKET"`), 2},                                        // ₹40,00,000
		{"a million shares at the market", orderOf("TCS", "sell", 1000000, ``), 2},                                              // ₹4,00,00,00,000
		{"large SL-M", orderOf("TCS", "sell", 1000, `,"order_type":"SL-M","trigger_price":3900`), 2},                            // ₹40,00,000
		{"small SL-M", orderOf("TCS", "buy", 100, `,"order_type":"SL-M","trigger_price":4100`), 1},                              // ₹4,10,000 at its trigger
		{"SL-M triggered above it", orderOf("TCS", "buy", 100, `,"order_type":"SL-M","trigger_price":6000`), 2},                 // ₹6,00,000
		{"SL limited below the market", orderOf("TCS", "sell", 150, `,"order_type":"SL","price":3000,"trigger_price":3010`), 2}, // ₹4,51,500 at its prices, ₹6,00,000 at the market
		{"small limit order", orderOf("TCS", "buy", 100, `,"price":4000`), 1},
		{"a symbol without a price", orderOf("INFY", "buy", 1, ``), 0},
		{"a limit order without a price", orderOf("INFY", "buy", 100, `,"price":1500`), 1}, // its own price sizes it
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := mustFixture(t, atTheMarket(&market{}))
			r, _, err := f.Hold(t.Context(), "main", "trigger-1", deskbot.ToolCall{ID: "call_1", Name: "place_order", Arguments: []byte(tt.args)})
			if tt.want == 0 {
				if err == nil || !strings.Contains(deskbot.ErrorMessage(err), "the market has no last price for INFY") {
					t.Fatalf("held %+v, %v; want refused for the market's missing price", r, err)
				}
				if open, _ := f.store.OpenRequests(t.Context()); len(open) != 0 {
					t.Fatalf("a request exists: %+v", open[0])
				}
				return
			}
			if err != nil {
				t.Fatalf("hold: %v", err)
			}
			if got := r.Needs(); got != tt.want {
				t.Errorf("needs %d approvers; want %d", got, tt.want)
			}
		})
	}
}

// A market outage refuses the order rather than let it pass on fewer eyes
// or a grant: the request is not recorded and nothing runs.
func TestFourEyesWithTheMarketDownRefusesTheOrder(t *testing.T) {
	m := &market{}
	f := mustFixture(t, atTheMarket(m))
	r := gatetest.MustHold(t, f, "main", "place_order", smallOrder)
	f.mustResolve(t, r.ID, deskbot.AlwaysAllow, asha) // a grant up to ₹5,00,000
	m.mu.Lock()
	m.down = true
	m.mu.Unlock()
	small := deskbot.ToolCall{ID: "call_2", Name: "place_order", Arguments: []byte(orderOf("TCS", "buy", 1, ``))}
	need, err := f.needs(t.Context(), "main", small)
	if err == nil || !need {
		t.Errorf("Permission = %v, %v; want an error (and held)", need, err)
	}
	if _, _, err := f.Hold(t.Context(), "main", "trigger-2", small); deskbot.ErrorCode(err) != deskbot.EUNAVAILABLE || !strings.Contains(deskbot.ErrorMessage(err), "Kite's quotes could not be read") {
		t.Errorf("hold: %v; want EUNAVAILABLE saying the quotes could not be read", err)
	}
	// A limit order's own price sizes it: the outage does not stop it.
	if need, err := f.needs(t.Context(), "main", deskbot.ToolCall{Name: "place_order", Arguments: []byte(smallOrder)}); err != nil || need {
		t.Errorf("limit order under the grant: Permission = %v, %v; want covered", need, err)
	}
}

// A grant's limit is counted as four eyes counts the order: a market
// order above it is held however many gave the grant, and with nothing
// to value it (no Limits) none is covered.
func TestGrantLimitCountsAMarketOrderAtTheMarket(t *testing.T) {
	need := func(t *testing.T, f *fixture, args string) bool {
		t.Helper()
		n, err := f.needs(t.Context(), "main", deskbot.ToolCall{Name: "place_order", Arguments: []byte(args)})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	twoPersonGrant := func(t *testing.T, f *fixture) {
		t.Helper()
		r := gatetest.MustHold(t, f, "main", "place_order", largeOrder)
		f.mustResolve(t, r.ID, deskbot.AlwaysAllow, asha)
		f.mustResolve(t, r.ID, deskbot.AlwaysAllow, ravi)
	}
	for _, tt := range []struct {
		name   string
		valued bool // the gate has Limits to value the order
		args   string
		held   bool
	}{
		{"small market order", true, orderOf("TCS", "buy", 100, ``), false},
		{"large market order", true, orderOf("TCS", "buy", 1000, ``), true},
		{"large SL-M", true, orderOf("TCS", "sell", 1000, `,"order_type":"SL-M","trigger_price":3900`), true},
		{"large limit sell at a paisa", true, orderOf("TCS", "sell", 1000, `,"price":0.01`), true}, // fills at ₹4,000: ₹40,00,000
		{"small limit sell at the market", true, orderOf("TCS", "sell", 100, `,"price":4000`), false},
		{"small limit order, unvalued", false, smallOrder, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			mod := atTheMarket(&market{})
			if !tt.valued {
				mod = twoForFlatten
			}
			f := mustFixture(t, mod)
			twoPersonGrant(t, f)
			if got := need(t, f, tt.args); got != tt.held {
				t.Errorf("Permission = %v; want %v", got, tt.held)
			}
		})
	}
}
