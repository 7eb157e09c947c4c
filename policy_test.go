package deskbot_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
)

// Past the threshold over the day, every order needs the larger count: an
// order split in parts never needs fewer people than the whole.
func TestRequiredWithTheDaysTotal(t *testing.T) {
	p := deskbot.Policies{"main": {deskbot.ToolPlaceOrder: {Approvals: 2, TwoApproversAbove: 1000000}}, "solo": {}}
	order := func(qty, price float64) deskbot.ToolCall {
		o := deskbot.Order{Symbol: "TCS", Side: deskbot.Buy, Quantity: qty, Price: price}
		return deskbot.ToolCall{Name: deskbot.ToolPlaceOrder, Arguments: fmt.Appendf(nil, `{"symbol":"TCS","side":"buy","quantity":%v,"price":%v}`, qty, price),
			Order: &deskbot.SizedOrder{Order: o, Price: price, Exposure: qty * price}}
	}
	tests := []struct {
		name  string
		desk  string
		call  deskbot.ToolCall
		total float64
		want  int
	}{
		{"a small order, the day within the threshold", "main", order(500, 1000), 500000, 1},
		{"a small order taking the day to the threshold", "main", order(500, 1000), 1000000, 1},
		{"a small order taking the day past it", "main", order(500, 1000), 1500000, 2},
		{"a large order on a quiet day", "main", order(2000, 1000), 0, 2},
		{"no threshold: one approver whatever the day", "solo", order(500, 1000), 1e9, 1},
		{"another tool: the day does not count", "main", deskbot.ToolCall{Name: deskbot.ToolFlattenDesk}, 1e9, 1},
	}
	for _, tt := range tests {
		if got := p.Required(tt.desk, tt.call, tt.total); got != tt.want {
			t.Errorf("%s: Required = %d; want %d", tt.name, got, tt.want)
		}
	}
}

func TestOrderDayIsIndias(t *testing.T) {
	tests := []struct {
		at   time.Time
		want string
	}{
		{time.Date(2026, 11, 30, 18, 29, 0, 0, time.UTC), "2026-11-30"},
		{time.Date(2026, 11, 30, 18, 30, 0, 0, time.UTC), "2026-12-01"}, // midnight in India
	}
	for _, tt := range tests {
		if got := deskbot.OrderDay(tt.at); got != tt.want {
			t.Errorf("OrderDay(%v) = %s; want %s", tt.at, got, tt.want)
		}
	}
}

// A place_order grant's cap: GRANT_MAX_NOTIONAL, else the shown order's
// exposure, never above the policy's threshold; other tools are uncapped.
func TestGrantCap(t *testing.T) {
	p := deskbot.Policies{"main": {deskbot.ToolPlaceOrder: {Approvals: 2, TwoApproversAbove: 500000}}}
	shown := func(x float64) deskbot.ToolCall {
		return deskbot.ToolCall{Name: deskbot.ToolPlaceOrder, Order: &deskbot.SizedOrder{Exposure: x}}
	}
	tests := []struct {
		name   string
		desk   string
		call   deskbot.ToolCall
		max    float64
		limit  float64
		capped bool
	}{
		{"default: the order shown", "other", shown(25000), 0, 25000, true},
		{"GRANT_MAX_NOTIONAL", "other", shown(25000), 100000, 100000, true},
		{"never above the policy", "main", shown(25000), 1e9, 500000, true},
		{"the order shown, below the policy", "main", shown(25000), 0, 25000, true},
		{"an order not sized, no variable", "other", deskbot.ToolCall{Name: deskbot.ToolPlaceOrder}, 0, 0, true},
		{"an order not sized, the policy", "main", deskbot.ToolCall{Name: deskbot.ToolPlaceOrder}, 0, 500000, true},
		{"another tool", "main", deskbot.ToolCall{Name: "bash"}, 100000, 0, false},
	}
	for _, tc := range tests {
		limit, capped := p.GrantCap(tc.desk, tc.call, tc.max)
		if limit != tc.limit || capped != tc.capped {
			t.Errorf("%s: GrantCap = %v, %v; want %v, %v", tc.name, limit, capped, tc.limit, tc.capped)
		}
	}
}
