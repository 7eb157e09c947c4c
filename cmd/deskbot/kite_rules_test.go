package main

import (
	"strings"
	"testing"

	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/broker/kitetest"
	"github.com/deskbot/deskbot/config"
	"github.com/deskbot/deskbot/config/configtest"
	"github.com/deskbot/deskbot/store/storetest"
)

// The service on an address Kite's IP whitelist lacks: the allowed order
// is refused by Kite, the desk is told it was not placed, the group is
// told once how to fix it, and nothing is sent again.
func TestKiteOrderFromAnUnregisteredAddress(t *testing.T) {
	t.Parallel()
	s, kt, tr := mustKiteTrading(t, map[string]string{"KITE_ALGO_ID": "ALGO1"})
	kt.AllowSources("127.0.0.2")
	held, _ := mustHeld(t, s, `{"symbol":"NSE:INFY","side":"buy","quantity":10,"price":1490}`, "BUY 10 INFY LIMIT @ 1,490.00 · MIS")
	s.tg.InjectCallback(asha, groupID, held.ID, button(t, held, "Allow once"))
	tr.mustSee(t, "was not placed: Kite refuses orders from this server's address")
	s.mustBotMessage(t, "the notice naming the fix", func(m telegramtest.Message) bool {
		return strings.Contains(m.Plain, "register this server's address in the Kite developer console's IP whitelist")
	})
	if got, want := kt.Requests("POST", "/orders/*"), 1; got != want {
		t.Errorf("order requests = %d, want %d", got, want)
	}
	if got := kt.AllOrdersPlaced(); got != 0 {
		t.Errorf("Kite holds %d orders, want none", got)
	}
}

// With KITE_SOURCE_IP on the registered address and KITE_ALGO_ID set, the
// allowed order leaves from that address carrying the algo id.
func TestKiteOrderFromTheSourceAddressCarriesTheAlgoID(t *testing.T) {
	t.Parallel()
	s, kt, tr := mustKiteTrading(t, map[string]string{"KITE_ALGO_ID": "ALGO1", "KITE_SOURCE_IP": "127.0.0.2"})
	kt.AllowSources("127.0.0.2")
	held, id := mustHeld(t, s, `{"symbol":"NSE:INFY","side":"buy","quantity":10,"price":1490}`, "BUY 10 INFY LIMIT @ 1,490.00 · MIS")
	s.tg.InjectCallback(asha, groupID, held.ID, button(t, held, "Allow once"))
	tr.mustSee(t, "algo id ALGO1 · open. It rests at the broker")
	tag := broker.Tag(id)
	var found bool
	for _, o := range kt.Orders() {
		if o.Tag == tag {
			found = true
			if o.AlgoID != "ALGO1" {
				t.Errorf("algo_id at Kite = %q, want ALGO1", o.AlgoID)
			}
		}
	}
	if !found {
		t.Fatalf("no order tagged %s at Kite", tag)
	}
	if src := kt.OrderSources(); len(src) != 1 || src[0] != "127.0.0.2" {
		t.Errorf("order requests came from %v, want [127.0.0.2]", src)
	}
}

// deskbot check prints the address Kite's orders leave from: the host's
// route to Kite's API, or KITE_SOURCE_IP.
func TestCheckKitePrintsTheOrdersAddress(t *testing.T) {
	t.Parallel()
	storetest.MustOpen(t)
	kt := kitetest.New(t, kiteKey, kiteSecret)
	tests := []struct {
		name, source, want string
	}{
		{"the host's route", "", "ok orders leave from 127.0.0.1 (this host's route to 127.0.0.1)"},
		{"KITE_SOURCE_IP", "127.0.0.2", "ok orders leave from 127.0.0.2 (KITE_SOURCE_IP)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := configtest.GoodEnv(t)
			for k, v := range storetest.Env() {
				env[k] = v
			}
			for k, v := range map[string]string{
				"REDIS_PREFIX": storetest.RandomPrefix(), "KITE_API_KEY": kiteKey, "KITE_API_SECRET": kiteSecret,
				"KITE_USER_ID": kiteUser, "KITE_API_URL": kt.URL, "BROKER_CALLBACK_URL": "http://127.0.0.1:8080/kite/callback",
				"KITE_TICKER_URL": strings.Replace(kt.URL, "http://", "ws://", 1), "KITE_SOURCE_IP": tt.source,
			} {
				env[k] = v
			}
			if _, out, lines := configtest.CheckOut(t, config.RunCheck, env); !strings.HasPrefix(lines["kite orders"], tt.want) {
				t.Errorf("kite orders: %q, want it to start %q\n%s", lines["kite orders"], tt.want, out)
			}
		})
	}
}
