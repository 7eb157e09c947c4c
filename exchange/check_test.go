package exchange

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	kiteconnect "github.com/zerodha/gokiteconnect/v4"
	"github.com/zerodha/gokiteconnect/v4/models"
)

// wantError checks an error's code and exact message ("" code: no error).
func wantError(t *testing.T, err error, code, msg string) {
	t.Helper()
	if code == "" {
		if err != nil {
			t.Fatalf("got error %v, want none", err)
		}
		return
	}
	var e *deskbot.Error
	if !errors.As(err, &e) {
		t.Fatalf("got %T %v, want a *deskbot.Error %s", err, err, code)
	}
	if e.Code != code || e.Message != msg {
		t.Fatalf("got %s %q\nwant %s %q", e.Code, e.Message, code, msg)
	}
}

// expiry is how the official client reads an expiry date from Kite's CSV.
func expiry(y int, m time.Month, d int) models.Time {
	return models.Time{Time: time.Date(y, m, d, 0, 0, 0, 0, time.FixedZone("+0530", 5*3600+30*60))}
}

// kiteRows are instruments as the official client returns them.
func kiteRows() []kiteconnect.Instrument {
	return []kiteconnect.Instrument{
		{InstrumentToken: 408065, ExchangeToken: 1594, Tradingsymbol: "INFY", Name: "INFOSYS", LastPrice: 1500, TickSize: 0.05, LotSize: 1, InstrumentType: "EQ", Segment: "NSE", Exchange: "NSE"},
		{InstrumentToken: 128053508, ExchangeToken: 500209, Tradingsymbol: "INFY", Name: "INFOSYS", LastPrice: 1500, TickSize: 0.05, LotSize: 1, InstrumentType: "EQ", Segment: "BSE", Exchange: "BSE"},
		{InstrumentToken: 256265, ExchangeToken: 1001, Tradingsymbol: "NIFTY 50", Name: "NIFTY 50", TickSize: 0, LotSize: 0, InstrumentType: "EQ", Segment: "INDICES", Exchange: "NSE"},
		{InstrumentToken: 12345602, ExchangeToken: 48225, Tradingsymbol: "NIFTY26DECFUT", Name: "NIFTY", LastPrice: 24500, Expiry: expiry(2026, 12, 29), TickSize: 0.05, LotSize: 75, InstrumentType: "FUT", Segment: "NFO-FUT", Exchange: "NFO"},
		{InstrumentToken: 12345002, ExchangeToken: 48200, Tradingsymbol: "NIFTY25NOVFUT", Name: "NIFTY", LastPrice: 24000, Expiry: expiry(2025, 11, 25), TickSize: 0.05, LotSize: 75, InstrumentType: "FUT", Segment: "NFO-FUT", Exchange: "NFO"},
		{InstrumentToken: 12346602, ExchangeToken: 48230, Tradingsymbol: "NIFTY2612024000CE", Name: "NIFTY", LastPrice: 150, Expiry: expiry(2026, 12, 4), TickSize: 0.05, LotSize: 75, InstrumentType: "CE", Segment: "NFO-OPT", Exchange: "NFO"},
		{InstrumentToken: 2001603, ExchangeToken: 7818, Tradingsymbol: "USDINR26DECFUT", Name: "USDINR", LastPrice: 83.25, Expiry: expiry(2026, 12, 29), TickSize: 0.0025, LotSize: 1, InstrumentType: "FUT", Segment: "CDS-FUT", Exchange: "CDS"},
	}
}

func mustMarket(t *testing.T, hours, holidays string) Market {
	t.Helper()
	return Market{Calendar: mustCalendar(t, hours, holidays), Instruments: FromKite(kiteRows())}
}

func TestCheck(t *testing.T) {
	m := mustMarket(t, "", "")
	open := ist(2026, 12, 4, 10, 0, 0)    // Fri, open
	closed := ist(2026, 12, 4, 16, 0, 0)  // Fri after the close
	weekend := ist(2026, 12, 5, 12, 0, 0) // Sat
	fut := func(q, p float64) Order {
		return Order{Exchange: "NFO", Tradingsymbol: "NIFTY26DECFUT", Quantity: q, Price: p}
	}
	infy := func(q, p float64) Order { return Order{Exchange: "NSE", Tradingsymbol: "INFY", Quantity: q, Price: p} }
	const inv = deskbot.EINVALID
	for _, tc := range []struct {
		name string
		o    Order
		now  time.Time
		code string
		msg  string
	}{
		{"market order", infy(10, 0), open, "", ""},
		{"limit on the tick", infy(10, 1500.05), open, "", ""},
		{"future in whole lots at 24512.35", fut(150, 24512.35), open, "", ""},
		{"price with float noise 0.1+0.2", infy(1, 0.1+0.2), open, "", ""},
		{"price with float noise 24512.3+0.05", fut(75, 24512.3+0.05), open, "", ""},
		{"price with float noise 1.1*3", infy(1, 1.1*3), open, "", ""},
		{"currency on a 0.0025 tick", Order{Exchange: "CDS", Tradingsymbol: "USDINR26DECFUT", Quantity: 1, Price: 83.2525}, open, "", ""},
		{"option on its expiry day", Order{Exchange: "NFO", Tradingsymbol: "NIFTY2612024000CE", Quantity: 75, Price: 150.5}, open, "", ""},

		{"unknown future", Order{Exchange: "NFO", Tradingsymbol: "NIFTY25DECFUT", Quantity: 75}, open, inv,
			"NFO:NIFTY25DECFUT is not an instrument on NFO today; check the symbol and exchange"},
		{"cash symbol on NFO", Order{Exchange: "NFO", Tradingsymbol: "INFY", Quantity: 1}, open, inv,
			"NFO:INFY is not an instrument on NFO today; check the symbol and exchange (INFY is listed on BSE, NSE)"},
		{"lower case", Order{Exchange: "NSE", Tradingsymbol: "infy", Quantity: 1}, open, inv,
			"NSE:infy is not an instrument on NSE today; check the symbol and exchange (symbols are listed in upper case)"},
		{"invisible character shown", Order{Exchange: "NSE", Tradingsymbol: "INFY\u00a0", Quantity: 1}, open, inv,
			`"NSE:INFY\u00a0" is not an instrument on NSE today; check the symbol and exchange`},
		{"unknown exchange", Order{Exchange: "NSX", Tradingsymbol: "INFY", Quantity: 1}, open, inv,
			`exchange "NSX" has no instruments today; send one of BSE, CDS, NFO, NSE, spelled that way`},
		{"no exchange", Order{Tradingsymbol: "INFY", Quantity: 1}, open, inv,
			"exchange is required; send one of BSE, CDS, NFO, NSE"},
		{"no symbol", Order{Exchange: "NSE", Quantity: 1}, open, inv,
			"tradingsymbol is required, spelled exactly as NSE lists it"},
		{"an index", Order{Exchange: "NSE", Tradingsymbol: "NIFTY 50", Quantity: 1}, open, inv,
			"NSE:NIFTY 50 is an index, which cannot be traded; check the symbol and exchange"},
		{"expired", Order{Exchange: "NFO", Tradingsymbol: "NIFTY25NOVFUT", Quantity: 75}, open, inv,
			"NFO:NIFTY25NOVFUT expired on 2025-11-25 and can no longer be traded; check the symbol for a contract that has not expired"},
		{"expired is told before its lot", Order{Exchange: "NFO", Tradingsymbol: "NIFTY25NOVFUT", Quantity: 30}, open, inv,
			"NFO:NIFTY25NOVFUT expired on 2025-11-25 and can no longer be traded; check the symbol for a contract that has not expired"},
		{"option the day after expiry", Order{Exchange: "NFO", Tradingsymbol: "NIFTY2612024000CE", Quantity: 75}, ist(2026, 12, 7, 10, 0, 0), inv,
			"NFO:NIFTY2612024000CE expired on 2026-12-04 and can no longer be traded; check the symbol for a contract that has not expired"},

		{"under one lot", fut(30, 0), open, inv,
			"quantity 30 is not a multiple of NIFTY26DECFUT's lot size 75; send 75, 150 or another multiple of 75"},
		{"between lots", fut(100, 0), open, inv,
			"quantity 100 is not a multiple of NIFTY26DECFUT's lot size 75; send 75 or 150 (1 or 2 lots)"},
		{"fractional quantity of a future", fut(1.5, 0), open, inv,
			"quantity 1.5 is not a whole number; send a whole number of units, a multiple of NIFTY26DECFUT's lot size 75"},
		{"fractional quantity of a share", infy(2.5, 0), open, inv,
			"quantity 2.5 is not a whole number; send a whole number of units"},
		{"zero quantity", infy(0, 0), open, inv, "quantity must be a whole number greater than 0, not 0"},
		{"negative quantity", infy(-10, 0), open, inv, "quantity must be a whole number greater than 0, not -10"},
		{"NaN quantity", infy(math.NaN(), 0), open, inv, "quantity must be a whole number greater than 0, not NaN"},
		{"huge quantity", infy(1e12, 0), open, inv, "quantity 1000000000000 is too large; send at most 1000000000"},

		{"price off the tick", fut(75, 24512.33), open, inv,
			"price 24512.33 is not a multiple of the tick 0.05; send 24512.30 or 24512.35"},
		{"price a hair off the tick", fut(75, 24512.351), open, inv,
			"price 24512.351 is not a multiple of the tick 0.05; send 24512.35 or 24512.40"},
		{"price with more decimals than units", fut(75, 24512.35001), open, inv,
			"price 24512.35001 is not a multiple of the tick 0.05; send 24512.35 or 24512.40"},
		{"price under one tick", infy(1, 0.03), open, inv,
			"price 0.03 is not a multiple of the tick 0.05; send 0.05 or a higher multiple of it"},
		{"currency off its tick", Order{Exchange: "CDS", Tradingsymbol: "USDINR26DECFUT", Quantity: 1, Price: 83.251}, open, inv,
			"price 83.251 is not a multiple of the tick 0.0025; send 83.2500 or 83.2525"},
		{"negative price", infy(1, -5), open, inv, "price must be 0 for a market order or a limit price greater than 0, not -5"},
		{"infinite price", infy(1, math.Inf(1)), open, inv, "price must be 0 for a market order or a limit price greater than 0, not +Inf"},

		{"closed", infy(1, 0), closed, inv,
			"the market is closed (opens Mon 7 Dec 09:15 IST); send amo: true to place an after-market order, or wait"},
		{"weekend", fut(75, 24512.35), weekend, inv,
			"the market is closed (opens Mon 7 Dec 09:15 IST); send amo: true to place an after-market order, or wait"},
		{"amo when closed", Order{Exchange: "NSE", Tradingsymbol: "INFY", Quantity: 1, Price: 1500, AMO: true}, closed, "", ""},
		{"amo at the weekend", Order{Exchange: "NFO", Tradingsymbol: "NIFTY26DECFUT", Quantity: 75, AMO: true}, weekend, "", ""},
		{"amo while open", Order{Exchange: "NSE", Tradingsymbol: "INFY", Quantity: 1, AMO: true}, open, inv,
			"the market is open; send the order without amo: true, which is only for when the market is closed"},
		{"amo for a contract expiring before the next open", Order{Exchange: "NFO", Tradingsymbol: "NIFTY2612024000CE", Quantity: 75, AMO: true}, closed, inv,
			"NFO:NIFTY2612024000CE expires on 2026-12-04, before the market opens again (Mon 7 Dec 09:15 IST), so an after-market order for it cannot run; check the symbol for a contract that has not expired"},
		{"amo just after the close", Order{Exchange: "NSE", Tradingsymbol: "INFY", Quantity: 1, AMO: true}, ist(2026, 12, 4, 15, 35, 0), inv,
			"the market is closed (opens Mon 7 Dec 09:15 IST) and after-market orders are taken again from Fri 4 Dec 16:00 IST; send it with amo: true from then, or wait for the open"},
		{"regular order just after the close", infy(1, 0), ist(2026, 12, 4, 15, 30, 0), inv,
			"the market is closed (opens Mon 7 Dec 09:15 IST) and after-market orders are taken again from Fri 4 Dec 16:00 IST; send it with amo: true from then, or wait for the open"},
		{"amo at 16:00", Order{Exchange: "NSE", Tradingsymbol: "INFY", Quantity: 1, AMO: true}, ist(2026, 12, 4, 16, 0, 0), "", ""},
		{"amo in Kite's maintenance", Order{Exchange: "NSE", Tradingsymbol: "INFY", Quantity: 1, AMO: true}, ist(2026, 12, 5, 2, 0, 0), inv,
			"the market is closed (opens Mon 7 Dec 09:15 IST) and after-market orders are taken again from Sat 5 Dec 05:30 IST; send it with amo: true from then, or wait for the open"},
		{"amo at 05:30", Order{Exchange: "NSE", Tradingsymbol: "INFY", Quantity: 1, AMO: true}, ist(2026, 12, 5, 5, 30, 0), "", ""},
		{"amo at 00:59", Order{Exchange: "NSE", Tradingsymbol: "INFY", Quantity: 1, AMO: true}, ist(2026, 12, 5, 0, 59, 0), "", ""},
		{"amo at 08:57:59", Order{Exchange: "NSE", Tradingsymbol: "INFY", Quantity: 1, AMO: true}, ist(2026, 12, 7, 8, 57, 59), "", ""},
		{"amo at 08:58", Order{Exchange: "NSE", Tradingsymbol: "INFY", Quantity: 1, AMO: true}, ist(2026, 12, 7, 8, 58, 0), inv,
			"the market is closed (opens Mon 7 Dec 09:15 IST) and after-market orders are no longer taken before it opens; wait, and send the order without amo once it opens"},
		{"regular order before the open", infy(1, 0), ist(2026, 12, 7, 9, 10, 0), inv,
			"the market is closed (opens Mon 7 Dec 09:15 IST) and after-market orders are no longer taken before it opens; wait, and send the order without amo once it opens"},
		{"lot is told before the hour", fut(30, 0), closed, inv,
			"quantity 30 is not a multiple of NIFTY26DECFUT's lot size 75; send 75, 150 or another multiple of 75"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantError(t, m.Check(tc.o, tc.now), tc.code, tc.msg)
		})
	}
}

func TestCheckClosedOnHoliday(t *testing.T) {
	m := mustMarket(t, "", "2026-12-07")
	err := m.Check(Order{Exchange: "NSE", Tradingsymbol: "INFY", Quantity: 1}, ist(2026, 12, 7, 10, 0, 0))
	wantError(t, err, deskbot.EINVALID, "the market is closed (opens Tue 8 Dec 09:15 IST); send amo: true to place an after-market order, or wait")
	// Where no after-market order can be placed (paper trading), the
	// model is not sent after one.
	m.NoAMO = true
	err = m.Check(Order{Exchange: "NSE", Tradingsymbol: "INFY", Quantity: 1, AMO: true}, ist(2026, 12, 7, 10, 0, 0))
	wantError(t, err, deskbot.EINVALID, "the market is closed (opens Tue 8 Dec 09:15 IST) and paper orders fill only while it is open; wait for the open")
}

func TestCheckNotReady(t *testing.T) {
	o := Order{Exchange: "NSE", Tradingsymbol: "INFY", Quantity: 1}
	now := ist(2026, 12, 4, 10, 0, 0)
	cal := mustCalendar(t, "", "")
	for _, tc := range []struct {
		name string
		m    Market
		msg  string
	}{
		{"no list", Market{Calendar: cal}, "the day's instrument list is not loaded yet, so no order can be checked; try again later"},
		{"empty list", Market{Calendar: cal, Instruments: FromKite(nil)}, "the day's instrument list is not loaded yet, so no order can be checked; try again later"},
		{"no calendar", Market{Instruments: FromKite(kiteRows())}, "the market calendar is not set up, so no order can be checked; try again later"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantError(t, tc.m.Check(o, now), deskbot.EUNAVAILABLE, tc.msg)
		})
	}
}

// TestTickIsExact walks every paisa from 24,500 to 24,520 rupees as a model
// would send it (a decimal read into a float) and wants exactly the
// multiples of 0.05 accepted: no binary rounding may turn one into a
// refusal or let a price off the tick through.
func TestTickIsExact(t *testing.T) {
	inst := Instrument{Tradingsymbol: "NIFTY26DECFUT", LotSize: 75, TickSize: 0.05}
	for paise := 2450000; paise <= 2452000; paise++ {
		s := fmt.Sprintf("%d.%02d", paise/100, paise%100)
		p, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatal(err)
		}
		err = checkPrice(inst, "price", p)
		if onTick := paise%5 == 0; onTick != (err == nil) {
			t.Fatalf("price %s: got %v, want on tick %v", s, err, onTick)
		}
		// The same price reached by float arithmetic, as code computing a
		// price might: still the same verdict.
		if q := float64(paise) * 0.01; (checkPrice(inst, "price", q) == nil) != (paise%5 == 0) {
			t.Fatalf("price %s computed as %v: got %v", s, q, checkPrice(inst, "price", q))
		}
	}
}

// TestCheckDoesNotAllocate: an order that passes costs no garbage, since
// every order a desk sends is checked.
func TestCheckDoesNotAllocate(t *testing.T) {
	m := mustMarket(t, "", "2026-12-25")
	o := Order{Exchange: "NFO", Tradingsymbol: "NIFTY26DECFUT", Quantity: 150, Price: 24512.35}
	now := ist(2026, 12, 4, 10, 0, 0)
	if n := testing.AllocsPerRun(100, func() { _ = m.Check(o, now) }); n != 0 {
		t.Errorf("Check allocates %v times, want 0", n)
	}
}
