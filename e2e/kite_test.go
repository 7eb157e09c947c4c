package e2e

import (
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/bot/telegramtest"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/broker/kitetest"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/model/modeltest"
)

const (
	kiteKey    = "e2eapikey"
	kiteSecret = "e2e-kite-api-secret-never-shown"
	kiteUser   = "AB1234"
)

// kiteWorld is a drill's world trading at a fake Kite the drill holds, with
// a desk whose model places the order its words carry and remembers what
// it is told.
type kiteWorld struct {
	*world
	kt   *kitetest.Server
	mu   sync.Mutex
	told []string
}

func newKiteWorld(t *testing.T, extra map[string]string) *kiteWorld {
	t.Helper()
	kt := kitetest.New(t, kiteKey, kiteSecret)
	kt.AddInstruments(kitetest.Instrument{Exchange: "NSE", Tradingsymbol: "INFY", Name: "INFOSYS", Token: 408065, LastPrice: 1500, TickSize: 0.05, LotSize: 1})
	env := map[string]string{
		"DESKS": "main", "BROKER": "kite", "MARKET_HOURS": "Mon-Sun 00:00-24:00", "APPROVAL_TOOLS": "place_order",
		"KITE_API_KEY": kiteKey, "KITE_API_SECRET": kiteSecret, "KITE_USER_ID": kiteUser, "KITE_API_URL": kt.URL,
		"KITE_TICKER_URL": strings.Replace(kt.URL, "http://", "ws://", 1),
	}
	for k, v := range extra {
		env[k] = v
	}
	kw := &kiteWorld{kt: kt}
	kw.world = newWorld(t, env)
	kw.env["BROKER_CALLBACK_URL"] = "http://" + kw.env["HTTP_ADDR"] + "/kite/callback"
	kw.model.SetHandler(func(r modeltest.Request) modeltest.Reply {
		last := r.Last()
		kw.mu.Lock()
		kw.told = append(kw.told, last.Text)
		kw.mu.Unlock()
		if last.Role == "user" && strings.Contains(last.Text, "place {") {
			args := last.Text[strings.Index(last.Text, "place {")+len("place "):]
			return modeltest.Calls(modeltest.ToolCall{Name: deskbot.ToolPlaceOrder, Arguments: args[:strings.LastIndex(args, "}")+1]})
		}
		return modeltest.Text("noted")
	})
	t.Cleanup(func() {
		if t.Failed() {
			kw.mu.Lock()
			t.Logf("the desk was told: %q", kw.told)
			kw.mu.Unlock()
			kw.dumpChat()
		}
		logs := readFile(kw.logs)
		for _, m := range kw.tg.Calls("") {
			logs += m.Text
		}
		for _, secret := range append(kt.AccessTokens(), kiteSecret) {
			if strings.Contains(logs, secret) {
				t.Errorf("a Kite secret (%.6s…) reached the logs or the chat", secret)
			}
		}
	})
	return kw
}

// login logs asha in from the chat: /login's button, Kite's redirect back.
func (kw *kiteWorld) login() {
	t := kw.t
	t.Helper()
	asked := kw.tg.InjectText(asha, groupID, "/login", 0)
	m := kw.botMessage("the login button", 20*time.Second, func(m telegramtest.Message) bool {
		return m.ReplyTo == asked && len(m.Keyboard) > 0 && m.Keyboard[0][0].Text == "Log in to Kite"
	})
	u, err := url.Parse(m.Keyboard[0][0].URL)
	if err != nil {
		t.Fatal(err)
	}
	params, _ := url.ParseQuery(u.Query().Get("redirect_params"))
	q := url.Values{"status": {"success"}, "action": {"login"}, "type": {"login"}, "request_token": {kw.kt.Login(kiteUser)}, "state": {params.Get("state")}}
	resp, err := http.Get("http://" + kw.env["HTTP_ADDR"] + "/kite/callback?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("Kite's redirect back: %d %s", resp.StatusCode, body)
	}
}

// heldOrder waits for the day's instrument list (loaded a moment after
// the login), has the desk place args and returns the held order's message.
func (kw *kiteWorld) heldOrder(args string) telegramtest.Message {
	kw.t.Helper()
	deskbottest.EventuallyWithin(kw.t, 30*time.Second, "the day's instrument list loaded", func() bool {
		return strings.Contains(readFile(kw.logs), "the day's instrument list is loaded")
	})
	kw.tell("main", "place "+args)
	return kw.botMessage("the order held", 30*time.Second, func(m telegramtest.Message) bool {
		return len(m.Keyboard) > 0 && strings.Contains(m.Plain, "INFY")
	})
}

// sawWords waits until the desk's model was told something containing want.
func (kw *kiteWorld) sawWords(want string, within time.Duration) {
	kw.t.Helper()
	deskbottest.EventuallyWithin(kw.t, within, "the desk told "+want, func() bool {
		kw.mu.Lock()
		defer kw.mu.Unlock()
		for _, s := range kw.told {
			if strings.Contains(s, want) {
				return true
			}
		}
		return false
	})
}

// TestKiteKillBetweenSendAndAnswer kills the service with SIGKILL while
// Kite holds the allowed order's POST (the order is made after the caller
// is gone, as Kite carries on with an order whose caller vanished), then
// starts it again. The call is reported interrupted, never sent again; the
// order Kite made is found by its tag and its outcome told to the desk and
// the chat once: one allowed call, one order.
func TestKiteKillBetweenSendAndAnswer(t *testing.T) {
	kw := newKiteWorld(t, nil)
	kw.start()
	kw.login()
	held := kw.heldOrder(`{"symbol":"NSE:INFY","side":"buy","quantity":10}`)
	id := requestOf(t, held)

	kw.kt.Slow("POST", "/orders/*", 4*time.Second)
	kw.tg.InjectCallback(asha, groupID, held.ID, button(t, held, "Allow once"))
	deskbottest.EventuallyWithin(t, 15*time.Second, "the allowed call running", func() bool {
		return kw.request(id).State == deskbot.StateRunning
	})
	time.Sleep(500 * time.Millisecond) // the POST is on its way, held at Kite
	kw.svc.kill()
	tag := broker.Tag(id)
	deskbottest.EventuallyWithin(t, 15*time.Second, "Kite making the order its dead caller sent", func() bool {
		return kw.kt.OrdersPlaced(tag) == 1
	})
	kw.kt.ClearFaults()

	restarted := time.Now()
	kw.start()
	kw.sawWords("service stopped while it was running", 30*time.Second)
	kw.sawWords("complete", 120*time.Second)
	told := time.Since(restarted)
	if got := kw.kt.AllOrdersPlaced(); got != 1 {
		t.Errorf("Kite holds %d orders after the kill and restart; want exactly the one allowed", got)
	}
	isFill := func(m telegramtest.Message) bool {
		return strings.Contains(m.Plain, "INFY") && strings.Contains(m.Plain, "complete")
	}
	kw.botMessage("the fill in the chat", 20*time.Second, isFill)
	time.Sleep(3 * time.Second) // a poll or two more: nothing is told again
	fills := 0
	for _, m := range kw.tg.BotMessages(groupID) {
		if isFill(m) {
			fills++
		}
	}
	if fills != 1 {
		kw.dumpChat()
		t.Errorf("the chat shows the fill %d times; want once", fills)
	}
	summary(t, "kite-kill", "orders per allowed call 1 (want 1); outcome told %.2fs after the restart", told.Seconds())
}

func readFile(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}
