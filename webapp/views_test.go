package webapp

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/words"
)

// pricedBroker answers the last price and the margin, the margin after
// block (ignoring its context, as a hung broker would).
type pricedBroker struct {
	deskbot.Broker
	last  float64
	block time.Duration
}

func (b pricedBroker) LastPrice(context.Context, string) (deskbot.Price, bool, error) {
	return deskbot.Price{Value: b.last, At: time.Now()}, true, nil
}
func (b pricedBroker) Margin(context.Context, deskbot.Order) (deskbot.OrderMargin, bool, error) {
	time.Sleep(b.block)
	return deskbot.OrderMargin{Required: 15000, Available: 250000}, true, nil
}

func mustServer(t *testing.T, br deskbot.Broker) *Server {
	t.Helper()
	s, err := New(Config{URL: "https://desks.example.com/desks/", Token: "t", Desks: []Desk{{Name: "alpha", Product: deskbot.ProductNRML}}},
		Deps{Broker: br}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The page shows a held order in the chat's trading words: with the
// desk's product, at the last price when at market, with the margin the
// broker gives in time, and never later than the words' 2 s.
func TestHeldOrderOnThePage(t *testing.T) {
	q := &deskbot.Request{ID: "r1", Desk: "alpha", State: deskbot.StateOpen,
		Content: deskbot.PermissionContent{ToolName: deskbot.ToolPlaceOrder, Arguments: []byte(`{"symbol":"NSE:INFY","side":"buy","quantity":50}`)}}
	for _, tt := range []struct {
		name  string
		block time.Duration
		want  string
	}{
		{"margin in time", 0, "BUY 50 INFY MARKET · NRML\nNotional ≈ ₹75,000.00 at the last price\nMargin needed ₹15,000.00 · available ₹2,50,000.00"},
		{"margin hangs", 5 * time.Second, "BUY 50 INFY MARKET · NRML\nNotional ≈ ₹75,000.00 at the last price"},
	} {
		s := mustServer(t, pricedBroker{last: 1500, block: tt.block})
		start := time.Now()
		live := s.liveOf(t.Context(), q)
		card := renderRequest(q, live)
		if got := strings.Join(card.Words, "\n"); got != tt.want {
			t.Errorf("%s: the page reads %q; want %q", tt.name, got, tt.want)
		}
		if took := time.Since(start); took > 4*time.Second {
			t.Errorf("%s: the words took %v; want 2s at most", tt.name, took)
		}
	}
}

// unownedBroker holds what no desk owns, after block (a hung broker
// ignores its context).
type unownedBroker struct {
	deskbot.Broker
	block time.Duration
}

func (b unownedBroker) Unowned(context.Context) ([]deskbot.Position, error) {
	time.Sleep(b.block)
	return []deskbot.Position{{Symbol: "INFY", Quantity: 5, LastPrice: 1500}}, nil
}

// The desks page shows what the account holds that belongs to no desk, as
// /desks does, and says so when the broker does not answer within 2 s.
func TestUnownedOnThePage(t *testing.T) {
	for _, tt := range []struct {
		name  string
		block time.Duration
		want  string
	}{
		{"answered", 0, "<li>INFY: long 5, last 1,500.00</li>"},
		{"hung", 5 * time.Second, "Not read just now: the broker did not answer."},
	} {
		s := mustServer(t, unownedBroker{block: tt.block})
		start := time.Now()
		var b strings.Builder
		data := page{Data: map[string]any{"Unowned": s.unowned(t.Context())}}
		if err := s.tmpl.ExecuteTemplate(&b, "desks", data); err != nil {
			t.Fatal(err)
		}
		if got := b.String(); !strings.Contains(got, "At the broker, no desk&#39;s (trades made by hand)") || !strings.Contains(got, tt.want) {
			t.Errorf("%s: the page reads %q; want the account's card with %q", tt.name, got, tt.want)
		}
		if took := time.Since(start); took > 4*time.Second {
			t.Errorf("%s: took %v; want 2s at most", tt.name, took)
		}
	}
}

// A desk's page lists its price watches, and says so when they could not
// be read rather than showing none.
func TestWatchesOnThePage(t *testing.T) {
	s := mustServer(t, unownedBroker{})
	at := time.Date(2026, 12, 4, 14, 2, 0, 0, deskbot.IST)
	w := deskbot.Watch{ID: "wabc123", Desk: "alpha", Symbol: "INFY", Direction: deskbot.WatchAbove, Level: 1600, Note: "<b>breakout</b>", CreatedAt: at}
	for _, tt := range []struct {
		name string
		data map[string]any
		want string
	}{
		{"listed", map[string]any{"Watches": []string{words.WatchLine(w)}, "WatchesRead": true}, "<li>wabc123 · INFY above 1,600.00 · &#34;&lt;b&gt;breakout&lt;/b&gt;&#34; · set 14:02</li>"},
		{"none", map[string]any{"WatchesRead": true}, "No price watches."},
		{"unread", map[string]any{}, "Price watches: not known"},
	} {
		tt.data["Desk"] = deskCard{Name: "alpha"}
		var b strings.Builder
		if err := s.tmpl.ExecuteTemplate(&b, "desk", page{Data: tt.data}); err != nil {
			t.Fatal(err)
		}
		if got := b.String(); !strings.Contains(got, tt.want) {
			t.Errorf("%s: the page lacks %q:\n%s", tt.name, tt.want, got)
		}
	}
}

// grantsGate is a gate that lists grants.
type grantsGate struct {
	deskbot.Gate
	gs []deskbot.Grant
}

func (g grantsGate) Grants(context.Context) ([]deskbot.Grant, error) { return g.gs, nil }

// memberTeam is a team in which everyone is a member and no one an approver.
type memberTeam struct{ Team }

func (memberTeam) Approver(int64) bool { return false }

// The page's grants say when each ends, and a grant with no end (GRANT_TTL
// 0) that it lasts until revoked.
func TestGrantsOnThePageSayWhenEachEnds(t *testing.T) {
	now := time.Date(2026, 12, 1, 8, 30, 0, 0, time.UTC) // 14:00 IST
	s, err := New(Config{URL: "https://desks.example.com/desks/", Token: "t", Desks: []Desk{{Name: "alpha"}}, Now: func() time.Time { return now }},
		Deps{Team: memberTeam{}, Gate: grantsGate{gs: []deskbot.Grant{
			{Desk: "alpha", Tool: "flatten_desk", GrantedBy: "Ravi (102)", GrantedAt: now},
			{Desk: "alpha", Tool: "place_order", GrantedBy: "Asha (101)", GrantedAt: now, ExpiresAt: now.Add(2 * time.Hour), Limit: 50000},
		}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	name, data, err := s.grantsView(t.Context(), nil, Viewer{ID: 7})
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	s.render(w, 200, name, data)
	page := w.Body.String()
	for _, want := range []string{
		"<p>Covers every call, until revoked.</p>",
		"<p>Covers orders up to ₹50,000.00 of exposure each and over the India day, until 16:00 IST.</p>",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page's grants read:\n%s\nwant %q", page, want)
		}
	}
}
