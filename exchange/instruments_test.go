package exchange

import (
	"net/http"
	"slices"
	"testing"
	"time"
	"unsafe"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker/kitetest"
	kiteconnect "github.com/zerodha/gokiteconnect/v4"
	"github.com/zerodha/gokiteconnect/v4/models"
)

func TestFromKite(t *testing.T) {
	rows := kiteRows()
	// An expiry the way a caller might build it by hand, midnight UTC:
	// still the same date in India.
	rows = append(rows,
		kiteconnect.Instrument{InstrumentToken: 2002603, Tradingsymbol: "USDINR27JANFUT", TickSize: 0.0025, LotSize: 1, InstrumentType: "FUT", Segment: "CDS-FUT", Exchange: "CDS",
			Expiry: models.Time{Time: time.Date(2027, 1, 27, 0, 0, 0, 0, time.UTC)}},
		kiteconnect.Instrument{Tradingsymbol: "NOEXCHANGE", LotSize: 1, TickSize: 0.05},
		kiteconnect.Instrument{Exchange: "NSE", LotSize: 1, TickSize: 0.05},
		// A second INFY row on NSE: the later one is kept.
		kiteconnect.Instrument{InstrumentToken: 999, Tradingsymbol: "INFY", TickSize: 0.1, LotSize: 1, InstrumentType: "EQ", Segment: "NSE", Exchange: "NSE"},
	)
	ins := FromKite(rows)
	if got, want := ins.Len(), 8; got != want {
		t.Errorf("Len: got %d, want %d", got, want)
	}
	if got, want := ins.Exchanges(), []string{"BSE", "CDS", "NFO", "NSE"}; !slices.Equal(got, want) {
		t.Errorf("Exchanges: got %v, want %v", got, want)
	}
	for _, want := range []Instrument{
		{Exchange: "NSE", Tradingsymbol: "INFY", Token: 999, LotSize: 1, TickSize: 0.1, Type: "EQ", Segment: "NSE"},
		{Exchange: "BSE", Tradingsymbol: "INFY", Token: 128053508, LotSize: 1, TickSize: 0.05, Type: "EQ", Segment: "BSE"},
		{Exchange: "NSE", Tradingsymbol: "NIFTY 50", Token: 256265, Type: "EQ", Segment: "INDICES"},
		{Exchange: "NFO", Tradingsymbol: "NIFTY26DECFUT", Token: 12345602, LotSize: 75, TickSize: 0.05, Expiry: Date{2026, 12, 29}, Type: "FUT", Segment: "NFO-FUT", Name: "NIFTY"},
		{Exchange: "NFO", Tradingsymbol: "NIFTY2612024000CE", Token: 12346602, LotSize: 75, TickSize: 0.05, Expiry: Date{2026, 12, 4}, Type: "CE", Segment: "NFO-OPT", Name: "NIFTY"},
		{Exchange: "CDS", Tradingsymbol: "USDINR26DECFUT", Token: 2001603, LotSize: 1, TickSize: 0.0025, Expiry: Date{2026, 12, 29}, Type: "FUT", Segment: "CDS-FUT", Name: "USDINR"},
		{Exchange: "CDS", Tradingsymbol: "USDINR27JANFUT", Token: 2002603, LotSize: 1, TickSize: 0.0025, Expiry: Date{2027, 1, 27}, Type: "FUT", Segment: "CDS-FUT"},
	} {
		got, ok := ins.Lookup(want.Exchange, want.Tradingsymbol)
		if !ok {
			t.Errorf("Lookup(%s): not found", want.Key())
			continue
		}
		if got != want {
			t.Errorf("Lookup(%s):\n got %+v\nwant %+v", want.Key(), got, want)
		}
	}
	for _, miss := range []struct{ exchange, symbol string }{
		{"NFO", "INFY"}, {"NSE", "INF"}, {"NSE", "INFYX"}, {"NSE", "infy"}, {"NSE", ""},
		{"", "INFY"}, {"nse", "INFY"}, {"MCX", "INFY"}, {"CDS", "A"}, {"CDS", "ZZZ"},
		{"", "NOEXCHANGE"},
	} {
		if got, ok := ins.Lookup(miss.exchange, miss.symbol); ok {
			t.Errorf("Lookup(%q, %q): got %+v, want not found", miss.exchange, miss.symbol, got)
		}
	}
	var none *Instruments
	if _, ok := none.Lookup("NSE", "INFY"); ok || none.Len() != 0 || none.Exchanges() != nil {
		t.Error("a nil list holds something")
	}
}

func TestLookupDoesNotAllocate(t *testing.T) {
	ins := FromKite(kiteRows())
	if n := testing.AllocsPerRun(100, func() { ins.Lookup("NFO", "NIFTY26DECFUT") }); n != 0 {
		t.Errorf("Lookup allocates %v times, want 0", n)
	}
}

// TestLookupEverySyntheticRow builds a large list and finds every row in it
// with its own fields, and misses for symbols just off each one.
func TestLookupEverySyntheticRow(t *testing.T) {
	rows := syntheticRows(20_000)
	ins := FromKite(rows)
	if got, want := ins.Len(), len(rows); got != want {
		t.Fatalf("Len: got %d, want %d", got, want)
	}
	for _, r := range rows {
		got, ok := ins.Lookup(r.Exchange, r.Tradingsymbol)
		if !ok || got.Token != uint32(r.InstrumentToken) || float64(got.LotSize) != r.LotSize || got.TickSize != r.TickSize || got.Expiry != DateOf(r.Expiry.Time) {
			t.Fatalf("Lookup(%s:%s): got %+v %v, want the row %+v", r.Exchange, r.Tradingsymbol, got, ok, r)
		}
		if _, ok := ins.Lookup(r.Exchange, r.Tradingsymbol+"X"); ok {
			t.Fatalf("Lookup(%s:%sX) found something", r.Exchange, r.Tradingsymbol)
		}
	}
}

// TestCheckAgainstKiteFake fetches the instrument CSV from the fake Kite
// with the official client, as the service does each morning, and checks
// orders against what the client parsed.
func TestCheckAgainstKiteFake(t *testing.T) {
	const key, secret = "exchangekey", "exchangesecret"
	s := kitetest.New(t, key, secret)
	s.AddInstruments(
		kitetest.Instrument{Exchange: "NSE", Tradingsymbol: "INFY", Name: "INFOSYS", Token: 408065, LastPrice: 1500, TickSize: 0.05, LotSize: 1},
		kitetest.Instrument{Exchange: "NFO", Tradingsymbol: "NIFTY26DECFUT", Name: "NIFTY", Token: 12345602, LastPrice: 24500,
			TickSize: 0.05, LotSize: 75, Type: "FUT", Expiry: time.Date(2026, 12, 29, 0, 0, 0, 0, kitetest.IST)},
	)
	c := kiteconnect.New(key)
	c.SetBaseURI(s.URL)
	c.SetHTTPClient(&http.Client{Timeout: 5 * time.Second})
	if _, err := c.GenerateSession(s.Login("AB1234"), secret); err != nil {
		t.Fatalf("GenerateSession: %v", err)
	}
	var rows []kiteconnect.Instrument
	for _, ex := range []string{"NFO", "NSE"} {
		list, err := c.GetInstrumentsByExchange(ex)
		if err != nil {
			t.Fatalf("GetInstrumentsByExchange(%s): %v", ex, err)
		}
		rows = append(rows, list...)
	}
	m := Market{Calendar: mustCalendar(t, "", ""), Instruments: FromKite(rows)}

	got, ok := m.Instruments.Lookup("NFO", "NIFTY26DECFUT")
	want := Instrument{Exchange: "NFO", Tradingsymbol: "NIFTY26DECFUT", Token: 12345602, LotSize: 75, TickSize: 0.05,
		Expiry: Date{2026, 12, 29}, Type: "FUT", Segment: "NFO-FUT", Name: "NIFTY"}
	if !ok || got != want {
		t.Fatalf("Lookup after the CSV:\n got %+v %v\nwant %+v", got, ok, want)
	}
	open := ist(2026, 12, 4, 10, 0, 0)
	wantError(t, m.Check(Order{Exchange: "NFO", Tradingsymbol: "NIFTY26DECFUT", Quantity: 150, Price: 24512.35}, open), "", "")
	wantError(t, m.Check(Order{Exchange: "NSE", Tradingsymbol: "INFY", Quantity: 10}, open), "", "")
	wantError(t, m.Check(Order{Exchange: "NFO", Tradingsymbol: "NIFTY26DECFUT", Quantity: 30, Price: 24512.35}, open), deskbot.EINVALID,
		"quantity 30 is not a multiple of NIFTY26DECFUT's lot size 75; send 75, 150 or another multiple of 75")
	wantError(t, m.Check(Order{Exchange: "NFO", Tradingsymbol: "NIFTY26DECFUT", Quantity: 75, Price: 24512.33}, open), deskbot.EINVALID,
		"price 24512.33 is not a multiple of the tick 0.05; send 24512.30 or 24512.35")
	wantError(t, m.Check(Order{Exchange: "NFO", Tradingsymbol: "NIFTY26DECFUT", Quantity: 75}, ist(2026, 12, 30, 10, 0, 0)), deskbot.EINVALID,
		"NFO:NIFTY26DECFUT expired on 2026-12-29 and can no longer be traded; check the symbol for a contract that has not expired")
}

// TestEntryIsTwentyFourBytes guards the layout the memory figures rest on.
func TestEntryIsTwentyFourBytes(t *testing.T) {
	if got := unsafe.Sizeof(entry{}); got != 24 {
		t.Errorf("entry is %d bytes, want 24", got)
	}
}
