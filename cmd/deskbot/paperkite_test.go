package main

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/broker/kitetest"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/model/modeltest"
)

// toolResults is a fake model that calls the tool a person's words name
// ("place {json}", "positions") and keeps what each call answered.
type toolResults struct {
	mu   sync.Mutex
	seen []string
}

func (tr *toolResults) handle(r modeltest.Request) modeltest.Reply {
	last := r.Last()
	switch {
	case last.Role == "tool":
		tr.mu.Lock()
		tr.seen = append(tr.seen, last.Text)
		tr.mu.Unlock()
		return modeltest.Text("noted")
	case last.Role == "user" && strings.Contains(last.Text, "place {"):
		args := last.Text[strings.Index(last.Text, "place {")+len("place "):]
		return modeltest.Calls(modeltest.ToolCall{Name: deskbot.ToolPlaceOrder, Arguments: args[:strings.LastIndex(args, "}")+1]})
	case last.Role == "user" && strings.Contains(last.Text, "cancel {"):
		args := last.Text[strings.Index(last.Text, "cancel {")+len("cancel "):]
		return modeltest.Calls(modeltest.ToolCall{Name: deskbot.ToolCancelOrder, Arguments: args[:strings.LastIndex(args, "}")+1]})
	case last.Role == "user" && strings.HasSuffix(last.Text, "positions"):
		return modeltest.Calls(modeltest.ToolCall{Name: deskbot.ToolGetPositions, Arguments: `{}`})
	case strings.Contains(last.Text, "The user allowed "), strings.Contains(last.Text, "Your order"):
		tr.mu.Lock()
		tr.seen = append(tr.seen, last.Text)
		tr.mu.Unlock()
	}
	return modeltest.Text("noted")
}

// mustSee waits until a call's answer holds want, and returns it.
func (tr *toolResults) mustSee(t *testing.T, want string) string {
	t.Helper()
	var got string
	defer func() {
		if t.Failed() {
			tr.mu.Lock()
			t.Logf("the desk was told: %q", tr.seen)
			tr.mu.Unlock()
		}
	}()
	deskbottest.EventuallyWithin(t, 15*time.Second, "the desk told "+want, func() bool {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		for _, s := range tr.seen {
			if strings.Contains(s, want) {
				got = s
				return true
			}
		}
		return false
	})
	return got
}

// Paper trading on Kite's live prices (BROKER=paper-kite): before the day's
// session no order can be checked; once an approver has logged in, the
// day's instrument list is loaded and an order is checked against it before
// anyone is asked (its exchange, whole lots, the tick), a held order
// allowed from the chat fills at Kite's last price, not the desk's; and
// when Kite ends the session the group is told once and prices, so orders,
// are refused until a login.
func TestPaperKite(t *testing.T) {
	t.Parallel()
	kt := kitetest.New(t, kiteKey, kiteSecret)
	kt.AddInstruments(
		kitetest.Instrument{Exchange: "NSE", Tradingsymbol: "INFY", Name: "INFOSYS", Token: 408065, LastPrice: 1500, TickSize: 0.05, LotSize: 1},
		kitetest.Instrument{Exchange: "NFO", Tradingsymbol: "NIFTY27DECFUT", Name: "NIFTY", Token: 12345602, LastPrice: 24000, TickSize: 0.1, LotSize: 75,
			Type: "FUT", Expiry: time.Date(2027, 12, 30, 0, 0, 0, 0, kitetest.IST)},
	)
	s := mustStart(t, map[string]string{
		"BROKER": "paper-kite", "MARKET_HOURS": "Mon-Sun 00:00-24:00", "APPROVAL_TOOLS": "place_order",
		"KITE_API_KEY": kiteKey, "KITE_API_SECRET": kiteSecret, "KITE_USER_ID": kiteUser,
		"KITE_API_URL": kt.URL, "BROKER_CALLBACK_URL": "http://127.0.0.1:8080/kite/callback",
	})
	tr := &toolResults{}
	s.model.SetHandler(tr.handle)
	tell := func(words string) { s.tg.InjectText(asha, groupID, "/tell main "+words, 0) }

	tell(`place {"symbol":"NSE:INFY","side":"buy","quantity":10,"price":1600}`)
	tr.mustSee(t, "the day's instrument list is not loaded yet, so no order can be checked")

	state, _ := mustLoginState(t, s, asha)
	if code, body := callback(t, s, redirect(state, kt.Login(kiteUser))); code != 200 {
		t.Fatalf("login: %d %s", code, body)
	}
	deskbottest.EventuallyWithin(t, 15*time.Second, "the day's instrument list loaded", func() bool {
		return s.main.Broker.Check(deskbot.Order{Symbol: "INFY", Side: deskbot.Buy, Quantity: 1, Price: 1600}) == nil
	})

	refused := []struct{ args, want string }{
		{`{"symbol":"NFO:NIFTY27DECFUT","side":"buy","quantity":30,"price":24000}`, "not a multiple of NIFTY27DECFUT's lot size 75"},
		{`{"symbol":"NSE:INFY","side":"buy","quantity":10,"price":1600.03}`, "is not a multiple of the tick 0.05"},
		{`{"symbol":"INFY","side":"buy","quantity":10,"price":1600.01}`, "is not a multiple of the tick 0.05"}, // a bare symbol is NSE's, checked against NSE's list
		{`{"symbol":"NSE:TCS","side":"buy","quantity":10,"price":1600}`, "NSE:TCS is not an instrument on NSE today"},
	}
	for _, tt := range refused {
		tell("place " + tt.args)
		tr.mustSee(t, tt.want)
	}
	if open, err := s.main.Store.OpenRequests(t.Context()); err != nil || len(open) != 0 {
		t.Fatalf("%d requests held for orders the exchange refuses (%v); want none", len(open), err)
	}

	tell(`place {"symbol":"INFY","side":"buy","quantity":10,"price":1600}`) // a bare symbol means NSE
	held := s.mustBotMessage(t, "the held order", func(m telegramtest.Message) bool {
		return len(m.Keyboard) > 0 && strings.Contains(m.Plain, "INFY")
	})
	s.tg.InjectCallback(asha, groupID, held.ID, button(t, held, "Allow once"))
	tr.mustSee(t, "BUY 10 INFY LIMIT @ 1,600.00 · MIS · complete 10 @ 1,500.00 avg") // Kite's last price, within the desk's limit of 1,600

	// Kite ends the session: the group is told once, and a price read (a
	// book, an order) is refused saying an approver must log in.
	kt.ExpireSession()
	time.Sleep(1100 * time.Millisecond) // past the second a price is reused
	tell("positions")
	tr.mustSee(t, "an approver must send /login")
	tell("positions")
	s.mustBotMessage(t, "the group told the session ended", func(m telegramtest.Message) bool {
		return strings.HasPrefix(m.Plain, "⚠️ Kite ended the session Asha started at ")
	})
	deskbottest.EventuallyWithin(t, 10*time.Second, "the second refusal", func() bool {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return strings.Count(strings.Join(tr.seen, "\n"), "an approver must send /login") >= 2
	})
	if n := botMessagesStarting(s, "⚠️ Kite ended the session"); n != 1 {
		t.Errorf("the group was told %d times that Kite ended the session; want once", n)
	}
}

// botMessagesStarting counts the bot's messages in the group that start
// with prefix.
func botMessagesStarting(s *service, prefix string) int {
	n := 0
	for _, m := range s.tg.BotMessages(groupID) {
		if strings.HasPrefix(m.Plain, prefix) {
			n++
		}
	}
	return n
}
