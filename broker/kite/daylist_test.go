package kite

import (
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker/kitetest"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/exchange"
	"github.com/deskbot/deskbot/store/storetest"
)

// The same as TestMorningLoginLoadsTheDaysList with two instances:
// the morning's login is served by one (any instance may serve the
// callback), the desks' orders are checked on the other, whose Run must
// then load the day's list too.
func TestMorningLoginOnAnotherInstanceLoadsTheDaysList(t *testing.T) {
	clock := deskbottest.NewClock(time.Date(2026, 12, 3, 14, 0, 0, 0, deskbot.IST))
	set, now := clock.Set, clock.Now
	kt := mustFake(t)
	kt.SetNow(now)
	st := storetest.MustOpen(t)
	cal, _ := exchange.ParseCalendar("Mon-Sun 00:00-24:00", "")
	instance := func() (*Login, *Day) {
		l, _ := mustLoginOn(t, kt, st, now)
		return l, NewDay(l.kite, l, cal, []string{"NSE"}, now, nil)
	}
	la, _ := instance()
	_, db := instance()
	ctx := ctxFor(t, 20*time.Second)

	loginAs(t, la, kt, deskbot.Person{ID: 1, Name: "Asha"})
	if err := db.Load(ctx); err != nil {
		t.Fatal(err)
	}
	set(time.Date(2026, 12, 4, 0, 1, 0, 0, deskbot.IST))
	if err := db.Load(ctx); err != nil {
		t.Fatalf("load after midnight: %v", err)
	}
	set(time.Date(2026, 12, 4, 8, 45, 0, 0, deskbot.IST))
	kt.AddInstruments(kitetest.Instrument{Exchange: "NSE", Tradingsymbol: "NEWCO", Name: "NEWCO", Token: 9990001, LastPrice: 100, TickSize: 0.05, LotSize: 1})
	loginAs(t, la, kt, deskbot.Person{ID: 1, Name: "Asha"})
	set(time.Date(2026, 12, 4, 9, 20, 0, 0, deskbot.IST))
	if err := db.Load(ctx); err != nil { // Run's minute
		t.Fatal(err)
	}
	if err := db.Check(deskbot.Order{Symbol: "NSE:NEWCO", Side: deskbot.Buy, Quantity: 1, Price: 100}); err != nil {
		t.Errorf("an instrument Kite lists this morning is refused all day on the instance that did not serve the login: %v", err)
	}
}
