package gate_test

import (
	"strings"
	"testing"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/gate"
)

// The words a desk's model reads of a changed call, word for word.
func TestChangedResponseMessageWords(t *testing.T) {
	r := &deskbot.Request{ID: "r1", Content: deskbot.PermissionContent{ToolName: "place_order"},
		Changed: &deskbot.CallChange{What: "quantity 50 → 25"}}
	for _, tt := range []struct {
		result deskbot.ToolResult
		want   string
	}{
		{deskbot.ToolResult{Text: "Filled."}, "The user allowed place_order (request r1) with changes: quantity 50 → 25. The harness ran it with those arguments instead of yours. It was run:\nFilled."},
		{deskbot.ToolResult{Text: "Rejected.", IsError: true}, "The user allowed place_order (request r1) with changes: quantity 50 → 25. The harness ran it with those arguments instead of yours. It failed:\nRejected."},
	} {
		// Always allow changes nothing: a changed call is never granted.
		for _, d := range []deskbot.Decision{deskbot.AllowOnce, deskbot.AlwaysAllow} {
			res := tt.result
			if got := gate.ResponseMessage(deskbot.PermissionResponse{Request: r, Decision: d}, &res); got != tt.want {
				t.Errorf("%s: got %q\nwant %q", d, got, tt.want)
			}
		}
	}
}

// Only a change that lowers the order's risk is taken; the other
// arguments are kept byte for byte.
func TestChangedArguments(t *testing.T) {
	buy := []byte(`{"symbol":"NIFTY24DECFUT","side":"buy","quantity":50,"price":24500}`)
	sell := []byte(`{"symbol":"BANKNIFTY24DECFUT","side":"sell","quantity":15,"price":52100}`)
	for _, tt := range []struct {
		args          []byte
		changes, want string // want "" for a refusal
	}{
		{buy, "quantity 25", `{"price":24500,"quantity":25,"side":"buy","symbol":"NIFTY24DECFUT"}`},
		{buy, "price 24400.5", `{"price":24400.5,"quantity":50,"side":"buy","symbol":"NIFTY24DECFUT"}`},
		{buy, "quantity 10, price 24000", `{"price":24000,"quantity":10,"side":"buy","symbol":"NIFTY24DECFUT"}`},
		{sell, "price 52200", `{"price":52200,"quantity":15,"side":"sell","symbol":"BANKNIFTY24DECFUT"}`},
		{sell, "price 52000", ""},
		{buy, "price 24500", ""},
		{buy, "price 0", ""},
		{buy, "quantity 0", ""},
		{buy, "quantity 51", ""},
		{buy, "Quantity 25", ""},
		{buy, "quantity 25 price", ""},
		{buy, "", ""},
		{buy, "symbol INFY", ""},
		{buy, "side sell", ""},
		{buy, "price 24400 price 24300", ""},
		{buy, "quantity ２５", ""},
		{buy, "quantity 1e1", ""},
	} {
		got, err := gate.ChangedArguments(tt.args, tt.changes)
		if tt.want == "" {
			if err == nil || deskbot.ErrorCode(err) != deskbot.EINVALID || !strings.Contains(deskbot.ErrorMessage(err), "changed") {
				t.Errorf("%s %q: got %s, %v; want a refusal", tt.args, tt.changes, got, err)
			}
			continue
		}
		if err != nil || string(got) != tt.want {
			t.Errorf("%s %q: got %s, %v; want %s", tt.args, tt.changes, got, err, tt.want)
		}
	}
}
