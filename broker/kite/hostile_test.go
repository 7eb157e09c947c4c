package kite

import (
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker/kitetest"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/store/storetest"
)

// A price read in flight while an approver logs in again (Kite allows one
// quote a second, so a second read waits for its slot) must not be taken
// for Kite ending the session: the new session is live, so the group is
// not told "Kite ended the session", and the read succeeds under it.
func TestReloginDuringAPriceReadIsNotASessionEnd(t *testing.T) {
	kt := mustFake(t)
	kt.AddInstruments(kitetest.Instrument{Exchange: "NSE", Tradingsymbol: "TCS", Name: "TCS", Token: 2953217, LastPrice: 3500, TickSize: 0.05, LotSize: 1})
	l, d, ev, _ := mustLoginDay(t, kt, time.Now)
	loginAs(t, l, kt, deskbot.Person{ID: 1, Name: "Asha"})
	ctx := ctxFor(t, 10*time.Second)
	if _, ok, err := d.LastPrice(ctx, "NSE:INFY"); err != nil || !ok {
		t.Fatalf("first price: %v %v", ok, err)
	}
	var got error
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _, got = d.LastPrice(ctx, "NSE:TCS") // waits for the next quote slot
	}()
	time.Sleep(200 * time.Millisecond)
	loginAs(t, l, kt, deskbot.Person{ID: 2, Name: "Ravi"}) // Kite replaces Asha's session
	<-done
	if got != nil {
		t.Errorf("a price read across a new login failed: %v", got)
	}
	for _, s := range ev.texts() {
		if strings.Contains(s, "Kite ended the session") {
			t.Errorf("the group was told %q right after a new login, with a live session", s)
		}
	}
	if _, err := d.session(ctx); err != nil {
		t.Errorf("after the new login the day's session is refused: %v", err)
	}
}

// The instrument list loaded just after midnight, under the evening's
// session that Kite keeps until 06:00, is the previous day's (Kite builds
// the day's list in the morning). The next morning's login loads the day's
// list, so an instrument listed that morning is not refused as unknown all
// day.
func TestMorningLoginLoadsTheDaysList(t *testing.T) {
	clock := deskbottest.NewClock(time.Date(2026, 12, 3, 14, 0, 0, 0, deskbot.IST))
	set, now := clock.Set, clock.Now
	kt := mustFake(t)
	kt.SetNow(now)
	l, d, _, _ := mustLoginDay(t, kt, now)
	ctx := ctxFor(t, 20*time.Second)

	loginAs(t, l, kt, deskbot.Person{ID: 1, Name: "Asha"}) // the evening's session, until 06:00
	deskbottest.Eventually(t, "the day's list", func() bool { return d.Load(ctx) == nil && d.list.Load() != nil })

	set(time.Date(2026, 12, 4, 0, 1, 0, 0, deskbot.IST)) // Run's minute after midnight
	if err := d.Load(ctx); err != nil {
		t.Fatalf("load after midnight: %v", err)
	}

	// 06:00 Kite ends the session; in the morning it lists a new instrument.
	set(time.Date(2026, 12, 4, 8, 45, 0, 0, deskbot.IST))
	kt.AddInstruments(kitetest.Instrument{Exchange: "NSE", Tradingsymbol: "NEWCO", Name: "NEWCO", Token: 9990001, LastPrice: 100, TickSize: 0.05, LotSize: 1})
	loginAs(t, l, kt, deskbot.Person{ID: 1, Name: "Asha"})
	set(time.Date(2026, 12, 4, 9, 20, 0, 0, deskbot.IST))
	o := deskbot.Order{Symbol: "NSE:NEWCO", Side: deskbot.Buy, Quantity: 1, Price: 100}
	var err error
	for i := 0; i < 50; i++ {
		_ = d.Load(ctx) // what Run does each minute
		if err = d.Check(o); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("an instrument Kite lists this morning is refused all day: %v", err)
}

// Anyone on the web can call the callback: a state deskbot never gave
// changes nothing, not even a key in Redis (else a stranger could fill
// Redis at will, a key per request).
func TestForgedStateWritesNothing(t *testing.T) {
	kt := mustFake(t)
	st := storetest.MustOpen(t)
	l, _ := mustLoginOn(t, kt, st, nil)
	state := strings.Repeat("z", 64)
	q := url.Values{"status": {"success"}, "request_token": {"x"}, "state": {state}}
	rec := httptest.NewRecorder()
	l.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/kite/callback?"+q.Encode(), nil))
	if rec.Code != 400 {
		t.Fatalf("forged state: %d %s", rec.Code, rec.Body)
	}
	if _, err := st.Note(t.Context(), loginUsedKey(state)); deskbot.ErrorCode(err) != deskbot.ENOTFOUND {
		t.Errorf("a forged state left the note %q in Redis (%v)", loginUsedKey(state), err)
	}
}
