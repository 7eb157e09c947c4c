package agent_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
)

// The hostile desk below plays against the hard limits and four eyes with
// TCS trading at ₹1,000 (mustLimits), a position limit of ₹10 lakh and a
// two-approver threshold of ₹10 lakh where the test says so.

// mustGrant gives a standing grant for desk main's place_order, as one
// approver's Always allow would, covering orders up to limit.
func (f *limitFixture) mustGrant(t *testing.T, limit float64) {
	t.Helper()
	g := deskbot.Grant{Desk: "main", Tool: deskbot.ToolPlaceOrder, GrantedBy: "Asha (1)", GrantedAt: f.now, Limit: limit, Approvers: 1}
	if err := f.store.PutGrant(t.Context(), g, deskbot.AuditEntry{Action: "grant", Desk: "main", Tool: deskbot.ToolPlaceOrder, By: "Asha (1)", At: f.now}); err != nil {
		t.Fatal(err)
	}
}

// mustTCS is the desk's TCS quantity in its book.
func (f *limitFixture) mustTCS(t *testing.T) float64 {
	t.Helper()
	book, err := f.paper.Book(t.Context(), "main")
	if err != nil {
		t.Fatal(err)
	}
	return deskbot.PositionAfter(book, deskbot.Order{Symbol: "TCS"})
}

// mustApproversNeeded is how many approvers each open request needs, in
// the order the desk put them forward (their expiries are all the same).
func (f *limitFixture) mustApproversNeeded(t *testing.T) []int {
	t.Helper()
	open, err := f.store.OpenRequests(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(open, func(a, b *deskbot.Request) int { return strings.Compare(a.TriggerID, b.TriggerID) })
	var got []int
	for _, r := range open {
		got = append(got, r.Required)
	}
	return got
}

// outcome names what became of a call, for tables.
func outcome(held, refused bool) string {
	switch {
	case held:
		return "held"
	case refused:
		return "refused"
	}
	return "ran"
}

// A waiting sell never makes room for a buy: the sell may be denied or
// lapse, and the buy would then stand past the limit.
func TestHostileSellWaitsWhileTheDeskBuysPastThePositionLimit(t *testing.T) {
	t.Run("held buy", func(t *testing.T) {
		f := mustLimits(t, deskbot.ToolPolicy{MaxPositionNotional: 1000000}, true)
		if ex := f.place(t, "sell", order("sell", 1000, 1000)); !ex.Held {
			t.Fatalf("the sell: %+v; want held", ex)
		}
		// Denied the sell and allowed the buy, the desk would be long
		// 2,000: ₹20 lakh against a limit of ₹10 lakh.
		ex := f.place(t, "buy", order("buy", 2000, 1000))
		if got, want := outcome(ex.Held, ex.Refused), "refused"; got != want {
			t.Fatalf("the buy while the sell waits: %s (%q); want %s", got, ex.Result.Text, want)
		}
	})
	t.Run("granted buys", func(t *testing.T) {
		f := mustLimits(t, deskbot.ToolPolicy{MaxPositionNotional: 1000000}, true)
		f.mustGrant(t, 500000) // small buys run without asking
		if ex := f.place(t, "sell", order("sell", 1000, 1000)); !ex.Held {
			t.Fatalf("the sell: %+v; want held (above the grant)", ex)
		}
		var got []string
		for i := range 3 {
			ex := f.place(t, fmt.Sprintf("buy-%d", i), order("buy", 500, 1000)) // ₹5 lakh each
			got = append(got, outcome(ex.Held, ex.Refused))
		}
		if want := []string{"ran", "ran", "refused"}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("three granted buys while the sell waits: %v; want %v", got, want)
		}
		// The sell lapses: the book is what ran, within the limit.
		if got, want := f.mustTCS(t), 1000.0; got != want {
			t.Errorf("TCS position = %v; want %v (₹10 lakh, the limit)", got, want)
		}
	})
}

// The desk names its own prices to look small: the limits value at the
// market's price, and the paper broker fills there.
func TestHostileDeskPricesItsOrdersAwayFromTheMarket(t *testing.T) {
	f := mustLimits(t, deskbot.ToolPolicy{MaxPositionNotional: 1000000}, false)
	steps := []struct {
		name, args string
		want       string
	}{
		{"buy at the market", order("buy", 1000, 1000), "ran"},
		{"buy a million at a tenth of a paisa", order("buy", 1000000, 0.001), "refused"},
		{"sell one", order("sell", 1, 1000), "ran"},
	}
	for _, s := range steps {
		ex := f.place(t, s.name, s.args)
		if got := outcome(ex.Held, ex.Refused); got != s.want || ex.Result.IsError && s.want == "ran" {
			t.Errorf("%s: %s (%q); want %s", s.name, got, ex.Result.Text, s.want)
		}
	}
	if got, want := f.mustTCS(t), 999.0; got != want {
		t.Errorf("TCS position = %v; want %v", got, want)
	}
	book, err := f.paper.Book(t.Context(), "main")
	if err != nil {
		t.Fatal(err)
	}
	if len(book.Positions) != 1 || book.Positions[0].AvgPrice != 1000 {
		t.Errorf("book = %+v; want long 999 at ₹1,000", book)
	}
}

// Four orders of ₹5 lakh are one order of ₹20 lakh: past the threshold
// over the India day, each further order needs two approvers, and no grant
// covers it.
func TestHostileDeskSplitsAnOrderUnderFourEyes(t *testing.T) {
	policy := deskbot.ToolPolicy{Approvals: 2, TwoApproversAbove: 1000000}
	t.Run("held", func(t *testing.T) {
		f := mustLimits(t, policy, true)
		for i := range 4 {
			if ex := f.place(t, fmt.Sprintf("part-%d", i), order("buy", 500, 1000)); !ex.Held {
				t.Fatalf("part %d: %+v; want held", i, ex)
			}
		}
		if got, want := f.mustApproversNeeded(t), []int{1, 1, 2, 2}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("approvers needed = %v; want %v", got, want)
		}
		// A new India day starts afresh.
		f.mu.Lock()
		f.now = f.now.Add(16 * time.Hour)
		f.mu.Unlock()
		ex := f.place(t, "tomorrow", order("buy", 10, 1000))
		r, err := f.store.Request(t.Context(), ex.Request.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := r.Required, 1; got != want {
			t.Errorf("next day's small order needs %d; want %d", got, want)
		}
	})
	t.Run("granted", func(t *testing.T) {
		f := mustLimits(t, policy, true)
		f.mustGrant(t, 1000000) // one approver's Always allow, up to the threshold
		var got []string
		for i := range 4 {
			ex := f.place(t, fmt.Sprintf("part-%d", i), order("buy", 500, 1000))
			got = append(got, outcome(ex.Held, ex.Refused))
		}
		if want := []string{"ran", "ran", "held", "held"}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("four granted parts: %v; want %v", got, want)
		}
		open, err := f.store.OpenRequests(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range open {
			if r.Required != 2 {
				t.Errorf("held part needs %d approvers; want 2", r.Required)
			}
		}
	})
	t.Run("priced below the market", func(t *testing.T) {
		// A sell named at a paisa fills at the market: ₹20 lakh of risk
		// that must not read as ₹20.
		f := mustLimits(t, policy, true)
		f.mustGrant(t, 1000000)
		ex := f.place(t, "cheap", order("sell", 2000, 0.01))
		if !ex.Held {
			t.Fatalf("sell priced at a paisa: %s (%q); want held", outcome(ex.Held, ex.Refused), ex.Result.Text)
		}
		r, err := f.store.Request(t.Context(), ex.Request.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := r.Required, 2; got != want {
			t.Errorf("approvers needed = %d; want %d", got, want)
		}
	})
}

// A bare symbol means NSE, so NSE:TCS is TCS: a desk that spells the stock
// both ways buys one position, under one position limit, not two.
func TestHostileDeskSpellsASymbolTwoWays(t *testing.T) {
	f := mustLimits(t, deskbot.ToolPolicy{MaxPositionNotional: 1000000}, false)
	var got []string
	for i, sym := range []string{"TCS", "NSE:TCS", "TCS", "NSE:TCS"} {
		args := fmt.Sprintf(`{"symbol":%q,"side":"buy","quantity":300,"price":1000}`, sym) // ₹3 lakh each
		ex := f.place(t, fmt.Sprintf("buy-%d", i), args)
		got = append(got, outcome(ex.Held, ex.Refused))
	}
	if want := []string{"ran", "ran", "ran", "refused"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("four buys of ₹3 lakh under a ₹10 lakh limit, spelled two ways: %v; want %v", got, want)
	}
	if got, want := f.mustTCS(t), 900.0; got != want {
		t.Errorf("the desk holds %v TCS; want %v in one position", got, want)
	}
}
