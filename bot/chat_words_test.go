package bot_test

import (
	"context"
	"github.com/deskbot/deskbot/deskbottest"
	"slices"
	"strings"
	"testing"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/bot/telegramtest"
)

// holdOrder holds a place_order call with args on desk and waits for its
// message in the group.
func (h *e2e) holdOrder(desk, args string) (*deskbot.Request, telegramtest.Message) {
	h.t.Helper()
	r := h.holdCall(desk, args)
	return r, h.waitMessage(func(m telegramtest.Message) bool {
		return strings.Contains(m.Text, shortID(r.ID)) && len(m.Keyboard) > 0
	})
}

func TestHeldOrderReadsInTradingWords(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	if _, err := h.broker.PlaceOrder(t.Context(), "alpha", deskbottest.NewKey(), deskbot.Order{Symbol: "NIFTY24DECFUT", Side: deskbot.Buy, Quantity: 20, Price: 24500}); err != nil {
		t.Fatalf("place order: %v", err)
	}
	r, m := h.holdOrder("alpha", `{"symbol":"NIFTY24DECFUT","side":"sell","quantity":50,"price":24512.5}`)
	words := []string{
		"SELL 50 NIFTY24DECFUT LIMIT @ 24,512.50 · MIS",
		"Notional ₹12,25,625.00",
		"Position after: short 30",
		"Desk P&L: realised +\u2060₹0.00, open +\u2060₹0.00",
		`{"price":24512.5,"quantity":50,"side":"sell","symbol":"NIFTY24DECFUT"}`, // the call, whole, beneath
	}
	for _, want := range words {
		if !strings.Contains(m.Plain, want) {
			t.Errorf("request message reads %q; missing %q", m.Plain, want)
		}
	}
	if got := m.Labels(); !slices.Equal(got, []string{"Allow once", "Always allow", "Deny", "Why?", "Change…"}) {
		t.Errorf("buttons %q, want Allow once, Always allow, Deny, Why?, Change…", got)
	}

	// /requests shows the same words.
	id := h.say(asha, "/requests", 0)
	again := h.replyTo(groupID, id)
	for _, want := range words {
		if !strings.Contains(again.Plain, want) {
			t.Errorf("/requests reads %q; missing %q", again.Plain, want)
		}
	}
	if !strings.Contains(again.Plain, shortID(r.ID)) {
		t.Errorf("/requests reads %q; missing the request id", again.Plain)
	}
}

// failingBook is a broker whose book cannot be read: a hung one when hang
// is set, else one that fails at once.
type failingBook struct {
	deskbot.Broker
	hang bool
}

func (f failingBook) Book(ctx context.Context, desk string) (deskbot.Book, error) {
	if f.hang {
		<-ctx.Done()
		return deskbot.Book{}, ctx.Err()
	}
	return deskbot.Book{}, deskbot.Errorf(deskbot.EUNAVAILABLE, "broker down")
}

func TestHeldOrderIsShownWithoutTheBookWhenTheBrokerFails(t *testing.T) {
	t.Parallel()
	for _, hang := range []bool{false, true} {
		h := mustE2E(t)
		h.brokerFor = func(b deskbot.Broker) deskbot.Broker { return failingBook{Broker: b, hang: hang} }
		h.restart()
		_, m := h.holdOrder("alpha", `{"symbol":"INFY","side":"buy","quantity":100000,"price":1500.5}`)
		for _, want := range []string{"BUY 1,00,000 INFY LIMIT @ 1,500.50 · MIS", "Notional ₹15,00,50,000.00", `"quantity":100000`} {
			if !strings.Contains(m.Plain, want) {
				t.Errorf("hang=%v: request reads %q; missing %q", hang, m.Plain, want)
			}
		}
		if strings.Contains(m.Plain, "Position after") || strings.Contains(m.Plain, "Desk P&L") {
			t.Errorf("hang=%v: request reads %q; words that need the book are shown without it", hang, m.Plain)
		}
		if got := m.Labels(); len(got) != 5 {
			t.Errorf("hang=%v: buttons %q, want all five (Change… with an order)", hang, got)
		}
	}
}

// A /tell is acknowledged with a reaction, not a message: the group's
// message budget is for held calls. Where reactions are refused for good,
// a short reply says it instead.
func TestTellIsAcknowledgedWithAReaction(t *testing.T) {
	t.Parallel()
	h := mustE2E(t)
	before := len(h.tg.Sent("sendMessage"))
	id := h.say(asha, "/tell alpha keep it small", 0)
	h.waitReaction(groupID, id)
	h.waitTriggers("alpha", 1)
	// A later command's reply is answered after the reaction, from the
	// same queue: when it is there, no message was sent for the /tell.
	h.replyTo(groupID, h.say(asha, "/whoami", 0))
	if sent := h.tg.Sent("sendMessage")[before:]; len(sent) != 1 {
		t.Errorf("messages sent for a /tell and a /whoami = %d, want 1 (the /whoami's)", len(sent))
	}

	h.tg.Fail(telegramtest.Failure{Method: "setMessageReaction", Code: 400, Description: "Bad Request: REACTION_INVALID"})
	id = h.say(asha, "/tell alpha and log it", 0)
	if got := h.replyTo(groupID, id).Plain; got != "Sent to alpha." {
		t.Errorf("with reactions refused, /tell answered %q, want %q", got, "Sent to alpha.")
	}
	h.waitTriggers("alpha", 1)
}
