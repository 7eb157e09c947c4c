package kite

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/broker/kitetest"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/exchange"
	"github.com/deskbot/deskbot/store"
	"github.com/deskbot/deskbot/store/storetest"
)

// teller is the Teller the store gives the service, as a test keeps it:
// each key tells once, whoever asks and however often.
type teller struct {
	mu       sync.Mutex
	keys     map[string]bool
	order    []string // the keys told, in order
	triggers []deskbot.Trigger
	events   []deskbot.Event
	down     bool // every TellOnce fails, as the store down does
}

var _ deskbot.Teller = (*teller)(nil)

// setDown makes every TellOnce fail (down) or work again.
func (t *teller) setDown(down bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.down = down
}

func newTeller() *teller { return &teller{keys: map[string]bool{}} }

func (t *teller) TellOnce(_ context.Context, key string, tr *deskbot.Trigger, e *deskbot.Event) (bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.down {
		return false, errors.New("teller: the store is down")
	}
	if t.keys[key] {
		return false, nil
	}
	t.keys[key] = true
	t.order = append(t.order, key)
	if tr != nil {
		t.triggers = append(t.triggers, *tr)
	}
	if e != nil {
		t.events = append(t.events, *e)
	}
	return true, nil
}

// versions is what the desks were told of the order tagged tag, in
// order: its versions ("partly filled 4").
func (t *teller) versions(tag string) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := []string{}
	for _, k := range t.order {
		if v, ok := strings.CutPrefix(k, "order:"+tag+":"); ok {
			out = append(out, v)
		}
	}
	return out
}

// told is the texts desk's inbox was given, in order.
func (t *teller) told(desk string) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for _, tr := range t.triggers {
		if tr.Desk == desk {
			out = append(out, tr.Text)
		}
	}
	return out
}

// chat is the texts the chat was given, in order.
func (t *teller) chat() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for _, e := range t.events {
		out = append(out, e.Text)
	}
	return out
}

// countWith counts desk's inbox texts holding s.
func (t *teller) countWith(desk, s string) int {
	n := 0
	for _, text := range t.told(desk) {
		if strings.Contains(text, s) {
			n++
		}
	}
	return n
}

// rig is one deployment's Redis and one fake Kite, on which any number of
// brokers (processes) are built.
type rig struct {
	kt    *kitetest.Server
	st    *store.Store
	clock *deskbottest.Clock
	tell  *teller
	logs  *syncBuffer
}

// mustRig starts a fake holding INFY and TCS, a Redis store and a clock
// standing at now.
func mustRig(t testing.TB) *rig {
	t.Helper()
	kt := mustFake(t)
	kt.AddInstruments(tcs)
	return &rig{kt: kt, st: storetest.MustOpen(t), clock: deskbottest.NewClock(time.Now()), tell: newTeller(), logs: &syncBuffer{}}
}

var tcs = kitetest.Instrument{Exchange: "NSE", Tradingsymbol: "TCS", Name: "TCS", Token: 2953217, LastPrice: 3500, TickSize: 0.05, LotSize: 1}

// options tune one broker of the rig.
type options struct {
	settle, every time.Duration
	clientOpts    Options
	noLogin       bool
	hours         string       // MARKET_HOURS; "" is always open
	admit         broker.Admit // the broker's last check of each send
	exchanges     []string     // the day's lists; nil is NSE's
	heard         *heard       // what the login and the broker tell the group; nil: a new one
	algoID        string       // KITE_ALGO_ID
	deskAlgoIDs   map[string]string
	perDay        int // the account's orders a day; 0 is Kite's 5,000
}

// mustBroker builds a broker on the rig, as the service does on its own
// client, login and day over the rig's Redis (a second call is another
// process), logged in unless opts.noLogin, with the day's list loaded.
func (r *rig) mustBroker(t testing.TB, opts options) (*Broker, *Login) {
	t.Helper()
	st := storetest.MustReopen(t, r.st)
	log := slog.New(slog.NewTextHandler(r.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	co := opts.clientOpts
	co.APIKey, co.APIURL, co.Log = testKey, r.kt.URL, log
	c := New(co)
	c.backoffMin, c.backoffMax = 5*time.Millisecond, 50*time.Millisecond
	c.settle = 50 * time.Millisecond
	h := opts.heard
	if h == nil {
		h = &heard{}
	}
	l, err := NewLogin(LoginConfig{APIKey: testKey, APISecret: testSecret, UserID: testUser,
		CallbackURL: "http://127.0.0.1:8080/kite/callback", Now: r.clock.Now}, c, st, h, log)
	if err != nil {
		t.Fatal(err)
	}
	hours := opts.hours
	if hours == "" {
		hours = "Mon-Sun 00:00-24:00"
	}
	cal, err := exchange.ParseCalendar(hours, "")
	if err != nil {
		t.Fatal(err)
	}
	exchanges := opts.exchanges
	if exchanges == nil {
		exchanges = []string{"NSE"}
	}
	d := NewDay(c, l, cal, exchanges, r.clock.Now, log)
	orders := broker.NewOrderLog(st, r.clock.Now, r.tell, log)
	tu := r.kt.TickerURL()
	b, err := NewBroker(BrokerConfig{Kite: c, Login: l, Day: d, Orders: orders, Now: r.clock.Now, Log: log,
		TickerURL: tu.String(), Settle: opts.settle, Every: opts.every, Admit: opts.admit,
		AlgoID: opts.algoID, DeskAlgoIDs: opts.deskAlgoIDs, Sent: st, OrdersPerDay: opts.perDay})
	if err != nil {
		t.Fatal(err)
	}
	if !opts.noLogin {
		if _, err := l.Session(t.Context()); err != nil {
			loginAs(t, l, r.kt, deskbot.Person{ID: 1, Name: "Asha"})
		}
		mustLoad(t, d)
	}
	return b, l
}

func mustLoad(t testing.TB, d *Day) {
	t.Helper()
	deskbottest.Eventually(t, "the day's instrument list", func() bool { return d.Load(t.Context()) == nil && d.list.Load() != nil })
}

// syncBuffer is a log's output, safe for the goroutines that log.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func limit(sym string, side string, q, px float64) deskbot.Order {
	return deskbot.Order{Symbol: sym, Side: side, Quantity: q, Price: px, Type: deskbot.OrderLimit, Product: deskbot.ProductMIS}
}

func market(sym string, side string, q float64) deskbot.Order {
	return deskbot.Order{Symbol: sym, Side: side, Quantity: q, Type: deskbot.OrderMarket, Product: deskbot.ProductMIS}
}

func mustPlaceOrder(t *testing.T, b *Broker, desk string, o deskbot.Order) deskbot.PlacedOrder {
	t.Helper()
	po, err := b.PlaceOrder(ctxFor(t, 30*time.Second), desk, deskbottest.NewKey(), o)
	if err != nil {
		t.Fatalf("PlaceOrder(%s, %+v): %v", desk, o, err)
	}
	return po
}

func mustSync(t *testing.T, b *Broker) int {
	t.Helper()
	n, err := b.Sync(ctxFor(t, 30*time.Second))
	if err != nil {
		t.Fatalf("Sync: %v", err)
	}
	return n
}

func mustFlattenDesk(t *testing.T, b *Broker, desk string) deskbot.FlattenReport {
	t.Helper()
	r, err := b.Flatten(ctxFor(t, 30*time.Second), desk, deskbottest.NewKey())
	if err != nil {
		t.Fatalf("Flatten(%s): %v", desk, err)
	}
	return r
}

func mustBookOf(t *testing.T, b *Broker, desk string) deskbot.Book {
	t.Helper()
	bk, err := b.Book(ctxFor(t, 30*time.Second), desk)
	if err != nil {
		t.Fatalf("Book(%s): %v", desk, err)
	}
	return bk
}

// held is desk's quantity in symbol by its book.
func held(bk deskbot.Book, symbol string) float64 {
	i := slices.IndexFunc(bk.Positions, func(p deskbot.Position) bool { return p.Symbol == symbol })
	if i < 0 {
		return 0
	}
	return bk.Positions[i].Quantity
}

func mustOrderOf(t *testing.T, b *Broker, desk, id string) deskbot.PlacedOrder {
	t.Helper()
	po, err := b.orders.Find(ctxFor(t, 10*time.Second), desk, deskbot.OrderDay(b.now()), id)
	if err != nil {
		t.Fatalf("order %s of %s: %v", id, desk, err)
	}
	return po
}
