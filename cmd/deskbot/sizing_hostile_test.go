package main

import (
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/broker/kitetest"
	"github.com/deskbot/deskbot/config/configtest"
	"github.com/deskbot/deskbot/deskbottest"
)

// sizingDesks guards desk main's orders as a team trading F&O and currency
// would: one order at most ₹10 lakh of exposure, a security's position at
// most ₹15 lakh, two approvers above ₹5 lakh.
const sizingDesks = `
[[desk]]
name = "main"
[desk.policy.place_order]
approvals = 2
two_approvers_above = 500000
max_order_notional = 1000000
max_position_notional = 1500000
`

// The hostile desk plays what Kite lists against the hard limits and four
// eyes at a real broker's instrument list (the fake Kite's): a strike
// listed this morning that has not traded (Kite's last price 0), a
// currency future whose unit is a contract of $1,000, far-out calls sold
// at ₹2 that put the whole index at risk, stops off the tick, on the wrong
// side of their limit or already crossed, and the same shares bought on
// NSE and on BSE. Each is refused before anyone is asked, with words that
// say why, and nothing is held.
func TestHostileDeskSizesOrdersAtKite(t *testing.T) {
	t.Parallel()
	s, kt, tr := mustKiteTrading(t, map[string]string{"DESKS_FILE": configtest.DesksFile(t, sizingDesks), "KITE_EXCHANGES": "NSE,BSE,NFO,CDS"})
	expiry := time.Date(2026, 12, 29, 0, 0, 0, 0, time.UTC)
	kt.AddInstruments(
		kitetest.Instrument{Exchange: "BSE", Tradingsymbol: "INFY", Name: "INFOSYS", Token: 128053508, LastPrice: 1500},
		kitetest.Instrument{Exchange: "NSE", Tradingsymbol: "NIFTY 50", Name: "NIFTY 50", Token: 256265, LastPrice: 24000, Segment: "INDICES"},
		kitetest.Instrument{Exchange: "NFO", Tradingsymbol: "NIFTY26DEC30000CE", Name: "NIFTY", Token: 12346602, LastPrice: 0, LotSize: 75, Type: "CE", Strike: 30000, Expiry: expiry},
		kitetest.Instrument{Exchange: "NFO", Tradingsymbol: "NIFTY26DEC28000CE", Name: "NIFTY", Token: 12346858, LastPrice: 2, LotSize: 75, Type: "CE", Strike: 28000, Expiry: expiry},
		kitetest.Instrument{Exchange: "CDS", Tradingsymbol: "USDINR26DECFUT", Name: "USDINR", Token: 2001603, LastPrice: 83.5, TickSize: 0.0025, Type: "FUT", Expiry: expiry},
	)
	// A new list is read at the next login: log in again so the day's list
	// holds them.
	state, _ := mustLoginState(t, s, asha)
	if code, body := callback(t, s, redirect(state, kt.Login(kiteUser))); code != 200 {
		t.Fatalf("login: %d %s", code, body)
	}
	mustListed(t, s, "CDS:USDINR26DECFUT")

	for _, tc := range []struct {
		name, args, want string
	}{
		{"a strike that has not traded, at the market", `{"symbol":"NFO:NIFTY26DEC30000CE","side":"buy","quantity":75000}`,
			"the market has no last price for NFO:NIFTY26DEC30000CE, and this MARKET buy order is counted at the market's price, so it cannot be sized. Nobody was asked."},
		{"a currency future counted by its contract", `{"symbol":"CDS:USDINR26DECFUT","side":"buy","quantity":100,"price":83.5}`,
			"its notional ₹83,50,000.00 at this price × contract size 1,000 is above the desk's limit of ₹10,00,000.00 for one order"},
		{"calls sold at ₹2 are the index at risk", `{"symbol":"NFO:NIFTY26DEC28000CE","side":"sell","quantity":7500,"price":2}`,
			"its notional ₹18,00,00,000.00 at its underlying's price of ₹24,000.00 is above the desk's limit of ₹10,00,000.00 for one order"},
		{"a trigger off the tick", `{"symbol":"INFY","side":"sell","quantity":10,"order_type":"SL-M","trigger_price":1490.03}`,
			"trigger_price 1490.03 is not a multiple of the tick 0.05; send 1490.00 or 1490.05"},
		{"an SL's trigger above its buy limit", `{"symbol":"INFY","side":"buy","quantity":10,"order_type":"SL","price":1505,"trigger_price":1510}`,
			"a buy SL order's trigger_price (1510) may not be above its price (1505)"},
		{"a buy stop the market has crossed", `{"symbol":"INFY","side":"buy","quantity":10,"order_type":"SL-M","trigger_price":1490}`,
			"the trigger_price 1,490.00 of this buy SL-M is already crossed by the market's last price 1,500.00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s.tg.InjectText(asha, groupID, "/tell main place "+tc.args, 0)
			tr.mustSee(t, tc.want)
			if open, err := s.main.Store.OpenRequests(t.Context()); err != nil || len(open) != 0 {
				t.Fatalf("open requests %v, %v; want none: nobody is asked", open, err)
			}
		})
	}

	// The same shares on NSE and on BSE are one position under one limit:
	// 600 INFY waiting for approval count as held when 600 more are asked
	// for on BSE (₹18 lakh against ₹15 lakh).
	s.tg.InjectText(asha, groupID, `/tell main place {"symbol":"INFY","side":"buy","quantity":600,"price":1500}`, 0)
	s.mustBotMessage(t, "the NSE order held", func(m telegramtest.Message) bool {
		return len(m.Keyboard) > 0 && strings.Contains(m.Plain, "BUY 600 INFY LIMIT")
	})
	s.tg.InjectText(asha, groupID, `/tell main place {"symbol":"BSE:INFY","side":"buy","quantity":600,"price":1500}`, 0)
	tr.mustSee(t, "it would take the desk's INFY position to long 1,200 (₹18,00,000.00 at this price, orders waiting for approval on the same side counted as filled), above the desk's position limit of ₹15,00,000.00")
	if open, err := s.main.Store.OpenRequests(t.Context()); err != nil || len(open) != 1 {
		t.Fatalf("open requests %d, %v; want the NSE order alone", len(open), err)
	}
	if got := kt.AllOrdersPlaced(); got != 0 {
		t.Errorf("Kite holds %d orders; want none", got)
	}

	// What an approver reads of a contract and of an option: its exposure,
	// and for an option the premium beside it; four eyes counts the
	// exposure (₹8,35,000 needs two).
	for _, tc := range []struct{ args, shows, needs string }{
		{`{"symbol":"CDS:USDINR26DECFUT","side":"buy","quantity":10,"price":83.5}`,
			"Exposure ₹8,35,000.00 at this price × contract size 1,000", "needs 2 approvers"},
		{`{"symbol":"NFO:NIFTY26DEC28000CE","side":"buy","quantity":75,"price":2}`,
			"Premium ₹150.00 · exposure ₹150.00 at this price", "Allow once"},
	} {
		s.tg.InjectText(asha, groupID, "/tell main place "+tc.args, 0)
		held := s.mustBotMessage(t, "the held order showing "+tc.shows, func(m telegramtest.Message) bool {
			return len(m.Keyboard) > 0 && strings.Contains(m.Plain, tc.shows)
		})
		if !strings.Contains(held.Plain, tc.needs) && !strings.Contains(strings.Join(buttonsOf(held), " "), tc.needs) {
			t.Errorf("the held order does not say %q:\n%s", tc.needs, held.Plain)
		}
	}
}

// buttonsOf is a message's button labels.
func buttonsOf(m telegramtest.Message) []string {
	var out []string
	for _, row := range m.Keyboard {
		for _, b := range row {
			out = append(out, b.Text)
		}
	}
	return out
}

// mustListed waits until the day's instrument list holds symbol.
func mustListed(t *testing.T, s *service, symbol string) {
	t.Helper()
	deskbottest.EventuallyWithin(t, 15*time.Second, "the day's list holds "+symbol, func() bool {
		_, err := s.main.Broker.Instrument(t.Context(), symbol)
		return err == nil
	})
}
