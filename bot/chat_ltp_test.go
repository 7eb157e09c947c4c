package bot_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/bot/telegramtest"
)

// A held order's message shows the last price read when it was sized,
// with its age counted when the message is drawn, beside the order's own
// limit; a price older than PRICE_MAX_AGE (its default, 60 s, here) reads
// as stale, never as current.
func TestHeldOrderShowsLastPriceAndAge(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	now := h.clock.Now()
	for _, tc := range []struct {
		id   string
		at   time.Time
		want string
	}{
		{"call_fresh", now.Add(-12 * time.Second), "LTP 1,604.35 · 12 s ago; your limit is 2.8% above"},
		{"call_stale", now.Add(-3 * time.Minute), "LTP 1,604.35 · stale: 3 min old, older than 1m0s; your limit is 2.8% above that stale price"},
	} {
		args := json.RawMessage(`{"symbol":"INFY","side":"buy","quantity":10,"price":1649.27}`)
		o, err := deskbot.ParseOrder(args)
		if err != nil {
			t.Fatal(err)
		}
		s := &deskbot.SizedOrder{Order: o, Price: 1649.27, Market: deskbot.Price{Value: 1604.35, At: tc.at}, Exposure: 16492.7,
			Instrument: deskbot.Instrument{Symbol: "INFY", Type: deskbot.InstrumentEQ, ContractSize: 1}}
		r, _, err := h.gate.Hold(t.Context(), "alpha", "trigger-"+tc.id, deskbot.ToolCall{ID: tc.id, Name: "place_order", Arguments: args, Order: s})
		if err != nil {
			t.Fatal(err)
		}
		m := h.waitMessage(func(m telegramtest.Message) bool {
			return strings.Contains(m.Text, shortID(r.ID)) && len(m.Keyboard) > 0
		})
		if !strings.Contains(m.Plain, tc.want) {
			t.Errorf("%s: the held order reads %q; want %q", tc.id, m.Plain, tc.want)
		}
	}
}
