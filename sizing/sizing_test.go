package sizing_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker/brokertest"
	"github.com/deskbot/deskbot/sizing"
)

var now = time.Date(2026, 12, 4, 10, 0, 0, 0, deskbot.IST)

// market is a test market: INFY at ₹1,500, NIFTY's index at ₹24,000, a
// NIFTY call at ₹2, a USDINR future at ₹83.50, a strike that has not
// traded (no price), and TCS's last price two minutes old.
func market(t *testing.T) *brokertest.Quotes {
	t.Helper()
	q := &brokertest.Quotes{Now: func() time.Time { return now }}
	q.Set("INFY", 1500)
	q.Set("NIFTY 50", 24000)
	q.Set("NFO:NIFTY26DEC28000CE", 2)
	q.Set("NFO:NIFTY26DEC30000CE", 0)
	q.Set("CDS:USDINR26DECFUT", 83.5)
	q.SetAt("TCS", 4000, now.Add(-2*time.Minute))
	call := deskbot.Instrument{Type: deskbot.InstrumentCE, ContractSize: 1, LotSize: 75, TickSize: 0.05, Strike: 28000, Expiry: "2026-12-29", Underlying: "NIFTY 50"}
	call.Symbol = "NFO:NIFTY26DEC28000CE"
	q.SetInstrument(call)
	call.Symbol, call.Strike = "NFO:NIFTY26DEC30000CE", 30000
	q.SetInstrument(call)
	q.SetInstrument(deskbot.Instrument{Symbol: "CDS:USDINR26DECFUT", Type: deskbot.InstrumentFUT, ContractSize: 1000, LotSize: 1, TickSize: 0.0025})
	return q
}

// Every way a hostile desk tries to make an order look small, or slip one
// the market cannot price past the approver, against the one reading.
func TestSize(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     string
		open     bool    // the market is open
		exposure float64 // 0: refused
		refusal  string
	}{
		{"shares at the market", `{"symbol":"INFY","side":"buy","quantity":10}`, true, 15000, ""},
		{"a LIMIT buy under the market is counted at the market", `{"symbol":"INFY","side":"buy","quantity":10,"price":1400}`, true, 15000, ""},
		{"a LIMIT sell at a paisa is counted at the market", `{"symbol":"INFY","side":"sell","quantity":10,"price":0.05}`, true, 15000, ""},
		{"a stop is counted at its trigger above the market", `{"symbol":"INFY","side":"buy","quantity":10,"order_type":"SL-M","trigger_price":1600}`, true, 16000, ""},
		{"a currency future by its contract", `{"symbol":"CDS:USDINR26DECFUT","side":"buy","quantity":100,"price":83.5}`, true, 8350000, ""},
		{"a bought call at its premium", `{"symbol":"NFO:NIFTY26DEC28000CE","side":"buy","quantity":75,"price":2}`, true, 150, ""},
		{"a sold call at its underlying", `{"symbol":"NFO:NIFTY26DEC28000CE","side":"sell","quantity":7500,"price":2}`, true, 180000000, ""},
		{"a strike that has not traded, at the market", `{"symbol":"NFO:NIFTY26DEC30000CE","side":"buy","quantity":75}`, true, 0, "the market has no last price for NFO:NIFTY26DEC30000CE"},
		{"a strike that has not traded, a LIMIT buy", `{"symbol":"NFO:NIFTY26DEC30000CE","side":"buy","quantity":75,"price":1}`, true, 75, ""},
		{"a price two minutes old while the market is open", `{"symbol":"TCS","side":"buy","quantity":1}`, true, 0, "the market's last price for TCS is 2m0s old"},
		{"the close, while the market is shut", `{"symbol":"TCS","side":"buy","quantity":1}`, false, 4000, ""},
		{"a symbol the market has no price for", `{"symbol":"SBIN","side":"sell","quantity":1,"price":800}`, true, 0, "the market has no last price for SBIN"},
		{"a buy stop already crossed", `{"symbol":"INFY","side":"buy","quantity":10,"order_type":"SL","price":1495,"trigger_price":1490}`, true, 0, "already crossed by the market's last price 1,500.00"},
		{"a sell stop already crossed", `{"symbol":"INFY","side":"sell","quantity":10,"order_type":"SL-M","trigger_price":1510}`, true, 0, "already crossed"},
		{"a contract whose size is not known", `{"symbol":"MCX:CARDAMOM26DECFUT","side":"buy","quantity":1,"price":2000}`, true, 0, "its contract size is not known"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &sizing.Sizer{Market: market(t), Now: func() time.Time { return now }, Open: func(time.Time) bool { return tc.open }}
			call, err := s.Read(t.Context(), "alpha", deskbot.ToolCall{Name: deskbot.ToolPlaceOrder, Arguments: json.RawMessage(tc.args)})
			if tc.refusal != "" {
				if deskbot.ErrorCode(err) != deskbot.EINVALID || !strings.Contains(deskbot.ErrorMessage(err), tc.refusal) {
					t.Fatalf("got %+v, %v; want refused saying %q", call.Order, err, tc.refusal)
				}
				return
			}
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			if got, want := call.Order.Exposure, tc.exposure; got != want {
				t.Errorf("exposure = %v, want %v", got, want)
			}
		})
	}
}
