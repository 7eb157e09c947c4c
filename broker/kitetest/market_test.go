package kitetest

import (
	"net/http"
	"testing"
	"time"

	kiteconnect "github.com/zerodha/gokiteconnect/v4"
)

func TestGetLTPReadsTheSetPrice(t *testing.T) {
	s := newFake(t)
	c := login(t, s, testUser)
	s.SetLTP("NSE:INFY", 1523.45)
	q, err := c.GetLTP("NSE:INFY", "NSE:NOSUCH")
	if err != nil {
		t.Fatalf("GetLTP: %v", err)
	}
	if got, want := q["NSE:INFY"].LastPrice, 1523.45; got != want {
		t.Errorf("last_price: got %v, want %v", got, want)
	}
	if _, ok := q["NSE:NOSUCH"]; ok {
		t.Error("an unknown instrument is in the answer; Kite leaves it out")
	}
	// gokiteconnect v4.4.1's GetLTP calls /quote/ltp (v4.4.0's called /quote).
	if got, want := s.Requests(http.MethodGet, "/quote/ltp"), 1; got != want {
		t.Errorf("GET /quote/ltp requests: got %d, want %d", got, want)
	}
}

func TestInstrumentsCSVParsesInTheClient(t *testing.T) {
	s := newFake(t)
	c := login(t, s, testUser)
	list, err := c.GetInstrumentsByExchange("NFO")
	if err != nil {
		t.Fatalf("GetInstrumentsByExchange: %v", err)
	}
	if len(list) != 1 {
		t.Fatalf("got %d NFO instruments, want 1", len(list))
	}
	got := list[0]
	if got.Tradingsymbol != fut.Tradingsymbol || got.InstrumentToken != int(fut.Token) || got.LotSize != 75 ||
		got.TickSize != 0.1 || got.Segment != "NFO-FUT" || got.InstrumentType != "FUT" || got.Exchange != "NFO" {
		t.Errorf("got %+v, want the NIFTY future with lot 75 and tick 0.1", got)
	}
	if want := time.Date(2026, 12, 29, 0, 0, 0, 0, IST); !got.Expiry.Equal(want) {
		t.Errorf("expiry: got %v, want %v", got.Expiry.Time, want)
	}
	nse, err := c.GetInstrumentsByExchange("NSE")
	if err != nil {
		t.Fatalf("GetInstrumentsByExchange NSE: %v", err)
	}
	if len(nse) != 1 || !nse[0].Expiry.IsZero() || nse[0].LotSize != 1 {
		t.Errorf("got NSE %+v, want INFY with no expiry and lot 1", nse)
	}
}

func TestMarginsFollowPositions(t *testing.T) {
	s := newFake(t)
	s.SetFunds(testUser, 100000)
	c := login(t, s, testUser)
	need, err := c.GetOrderMargins(kiteconnect.GetMarginParams{OrderParams: []kiteconnect.OrderMarginParam{{
		Exchange: "NSE", Tradingsymbol: "INFY", TransactionType: "BUY", Variety: "regular",
		Product: "MIS", OrderType: "MARKET", Quantity: 10,
	}}})
	if err != nil {
		t.Fatalf("GetOrderMargins: %v", err)
	}
	if len(need) != 1 || need[0].Total != 3000 || need[0].Leverage != 5 {
		t.Fatalf("got %+v, want 3000 at leverage 5 for 10 INFY MIS", need)
	}
	place(t, c, marketBuy(10, ""))
	m, err := c.GetUserMargins()
	if err != nil {
		t.Fatalf("GetUserMargins: %v", err)
	}
	if m.Equity.Available.Cash != 100000 || m.Equity.Used.Debits != 3000 || m.Equity.Net != 97000 {
		t.Errorf("got cash %v debits %v net %v, want 100000, 3000, 97000",
			m.Equity.Available.Cash, m.Equity.Used.Debits, m.Equity.Net)
	}
}

func TestOrderMarginsRefusesUnknownInstrument(t *testing.T) {
	s := newFake(t)
	c := login(t, s, testUser)
	_, err := c.GetOrderMargins(kiteconnect.GetMarginParams{OrderParams: []kiteconnect.OrderMarginParam{{
		Exchange: "NSE", Tradingsymbol: "NOSUCH", TransactionType: "BUY", Variety: "regular",
		Product: "MIS", OrderType: "MARKET", Quantity: 1,
	}}})
	wantErrorType(t, err, InputException, http.StatusBadRequest)
}

// The client parses GET /instruments without looking at the status, so an
// error answer (here an expired session) reaches the caller as a CSV parse
// failure, a GeneralException, not as the TokenException it is.
func TestInstrumentsHideTheTokenException(t *testing.T) {
	s := newFake(t)
	c := login(t, s, testUser)
	s.ExpireSession()
	_, err := c.GetInstrumentsByExchange("NSE")
	wantErrorType(t, err, GeneralException, http.StatusInternalServerError)
	if got, want := s.Calls()[len(s.Calls())-1].ErrorType, TokenException; got != want {
		t.Errorf("the fake answered %q, want %q", got, want)
	}
}
