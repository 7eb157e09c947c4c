package kite

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker/kitetest"
	"github.com/deskbot/deskbot/deskbottest"
)

// The morning's reminder asks for a login when no session Kite takes is
// kept: none yet, or one Kite ended; a live session gets none. Kite's end
// of a session is told once.
func TestRemindLogin(t *testing.T) {
	s := mustFake(t)
	l, _, events, _ := mustLoginDay(t, s, time.Now)
	ctx := t.Context()
	const ask = "🔑 No Kite session today yet: an approver, send /login before the market opens."

	if err := l.RemindLogin(ctx); err != nil {
		t.Fatal(err)
	}
	if got := events.texts(); len(got) != 1 || got[0] != ask {
		t.Fatalf("with no session the group was told %q; want the ask", got)
	}

	loginAs(t, l, s, deskbot.Person{ID: 101, Name: "Asha"})
	if err := l.RemindLogin(ctx); err != nil {
		t.Fatal(err)
	}
	if got := events.texts(); len(got) != 2 || !strings.HasPrefix(got[1], "🔑 Asha logged in to Kite") {
		t.Fatalf("after a login the group was told %q; want the login and no ask", got)
	}

	sess, err := l.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l.Ended(ctx, sess)
	l.Ended(ctx, sess) // a second refusal by Kite: not told again
	if _, err := l.Session(ctx); deskbot.ErrorCode(err) != deskbot.EUNAUTHORIZED || !strings.Contains(deskbot.ErrorMessage(err), "an approver must send /login") {
		t.Errorf("the session after Kite ended it: %v; want refused, saying to log in", err)
	}
	if err := l.RemindLogin(ctx); err != nil {
		t.Fatal(err)
	}
	got := events.texts()
	if len(got) != 4 || !strings.HasPrefix(got[2], "⚠️ Kite ended the session Asha started at ") || got[3] != ask {
		t.Errorf("after Kite ended the session the group was told %q; want the end once, then the ask", got)
	}
	// The ask and the end offer the login button; the login itself does not.
	want := []deskbot.EventKind{deskbot.EventBrokerLogin, deskbot.EventBroker, deskbot.EventBrokerLogin, deskbot.EventBrokerLogin}
	if got := events.kinds(); !slices.Equal(got, want) {
		t.Errorf("the events' kinds are %v; want %v", got, want)
	}
}

// Kite takes one quote call a second: once a book's symbols have been
// asked for, a later round of them is one call, not one a symbol.
func TestDayPricesTogether(t *testing.T) {
	s := mustFake(t)
	s.SetLimits(nil)
	s.AddInstruments(
		kitetest.Instrument{Exchange: "NSE", Tradingsymbol: "TCS", Token: 2953217, LastPrice: 4000},
		kitetest.Instrument{Exchange: "NSE", Tradingsymbol: "SBIN", Token: 779521, LastPrice: 800},
	)
	fake := deskbottest.NewClock(time.Now())
	clock := fake.Now
	l, _, _, _ := mustLoginDay(t, s, clock)
	loginAs(t, l, s, deskbot.Person{ID: 101, Name: "Asha"})
	// Quotes unlimited here: the test counts calls, not waits.
	d := NewDay(New(Options{APIKey: testKey, APIURL: s.URL, QuotesPerSecond: 1000}), l, nil, nil, clock, nil)
	quotes := func() int {
		n := 0
		for _, c := range s.Calls() {
			if strings.HasPrefix(c.Path, "/quote") {
				n++
			}
		}
		return n
	}
	symbols := []string{"NSE:INFY", "NSE:TCS", "NSE:SBIN"}
	want := map[string]float64{"NSE:INFY": 1500, "NSE:TCS": 4000, "NSE:SBIN": 800}
	round := func() {
		for _, sym := range symbols {
			got, ok, err := d.LastPrice(t.Context(), sym)
			if err != nil || !ok || got.Value != want[sym] {
				t.Fatalf("LastPrice(%s) = %v, %v, %v; want %v", sym, got, ok, err, want[sym])
			}
		}
	}
	round()
	before := quotes()
	fake.Add(2 * priceLife)
	round()
	if got := quotes() - before; got != 1 {
		t.Errorf("a second round of 3 symbols made %d quote calls; want 1", got)
	}
}

// Kite ends a session at the next 06:00 India time: a login before dawn
// lasts until that morning, not the next.
func TestSessionEnd(t *testing.T) {
	ist := func(d, h, m int) time.Time { return time.Date(2026, 12, d, h, m, 0, 0, deskbot.IST) }
	for _, tt := range []struct {
		at, want time.Time
	}{
		{ist(4, 8, 50), ist(5, 6, 0)},
		{ist(4, 23, 59), ist(5, 6, 0)},
		{ist(4, 5, 30), ist(4, 6, 0)},
		{ist(4, 6, 0), ist(5, 6, 0)},
		{ist(4, 8, 50).UTC(), ist(5, 6, 0)}, // 03:20 UTC is 08:50 in India
	} {
		if got := SessionEnd(tt.at); !got.Equal(tt.want) {
			t.Errorf("SessionEnd(%v) = %v, want %v", tt.at, got, tt.want)
		}
	}
}
