package gate_test

import (
	"context"
	"fmt"
	"github.com/deskbot/deskbot/deskbottest"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/broker/brokertest"
	"github.com/deskbot/deskbot/gate"
	"github.com/deskbot/deskbot/sizing"
	"github.com/deskbot/deskbot/store"
	"github.com/deskbot/deskbot/store/storetest"
	"github.com/deskbot/deskbot/words"
)

// countingDesks counts the reads of a desk's state the limits make.
type countingDesks struct {
	st    *store.Store
	reads atomic.Int64
}

func (c *countingDesks) DeskStatus(ctx context.Context, desk string) (deskbot.DeskStatus, error) {
	c.reads.Add(1)
	return c.st.DeskStatus(ctx, desk)
}

type riskLimits struct {
	st     *store.Store
	paper  *broker.Paper
	desks  *countingDesks
	limits *gate.HardLimits
	now    atomic.Pointer[time.Time]
}

// mustRiskLimits is the limits of desk main with rules (and of desk other,
// without), on the real store and paper broker; TCS trades at ₹1,000.
func mustRiskLimits(t *testing.T, rules deskbot.RiskRules, at time.Time) *riskLimits {
	t.Helper()
	f := &riskLimits{st: storetest.MustOpen(t)}
	f.now.Store(&at)
	now := func() time.Time { return *f.now.Load() }
	q := &brokertest.Quotes{}
	q.Set("TCS", 1000)
	f.paper = broker.NewPaperMarket(f.st, now, q)
	f.desks = &countingDesks{st: f.st}
	f.limits = &gate.HardLimits{Risk: map[string]deskbot.RiskRules{"main": rules}, Desks: f.desks, Broker: f.paper,
		Sizer:    &sizing.Sizer{Market: f.paper, Check: f.paper.Check, Now: now},
		Requests: f.st, Counter: f.st, Audit: f.st, Now: now, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	return f
}

// check is the limits' answer to an order of desk; "" when it may run.
func (f *riskLimits) check(t *testing.T, desk, side string, qty float64) string {
	t.Helper()
	call, err := f.limits.Sizer.Read(t.Context(), "alpha", deskbot.ToolCall{ID: "c", Name: deskbot.ToolPlaceOrder, Arguments: []byte(fmt.Sprintf(`{"symbol":"TCS","side":%q,"quantity":%v,"price":1000}`, side, qty))})
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	release, refusal := f.limits.Check(t.Context(), desk, call)
	if release == nil {
		if refusal == "" {
			t.Fatal("refused without a reason")
		}
		return refusal
	}
	release()
	if refusal != "" {
		t.Fatalf("released with a refusal %q", refusal)
	}
	return ""
}

func (f *riskLimits) hold(t *testing.T, desk string, qty float64) {
	t.Helper()
	side := "buy"
	if qty < 0 {
		side, qty = "sell", -qty
	}
	limit := 1e6
	if side == "sell" {
		limit = 1
	}
	if _, err := f.paper.PlaceOrder(t.Context(), desk, deskbottest.NewKey(), deskbot.Order{Symbol: "TCS", Side: side, Quantity: qty, Price: limit}); err != nil {
		t.Fatal(err)
	}
}

var thursdayMorning = time.Date(2026, 12, 3, 10, 0, 0, 0, deskbot.IST)

// A turn under way when its desk was halted: its next order is refused
// with the halt's words, whatever else it calls is not the limits'.
func TestLimitsRefuseAHaltedDesksOrders(t *testing.T) {
	f := mustRiskLimits(t, deskbot.RiskRules{MaxDailyLoss: 1000}, thursdayMorning)
	if got := f.check(t, "main", "buy", 1); got != "" {
		t.Fatalf("before the halt: refused %q", got)
	}
	h := deskbot.Halt{Rule: deskbot.RuleMaxDailyLoss, Figures: "P&L today -₹1,500.00", At: thursdayMorning}
	if won, err := f.st.HaltDesk(t.Context(), "main", h, deskbot.AuditEntry{Action: "halt", Desk: "main", By: "risk", At: h.At}); err != nil || !won {
		t.Fatalf("HaltDesk: %v, %v", won, err)
	}
	for _, side := range []string{"buy", "sell"} {
		if got, want := f.check(t, "main", side, 1), words.HaltedOrderMessage(deskbot.ToolPlaceOrder); got != want {
			t.Errorf("a halted desk's %s: %q; want %q", side, got, want)
		}
	}
	release, refusal := f.limits.Check(t.Context(), "main", deskbot.ToolCall{ID: "b", Name: "get_book", Arguments: []byte(`{}`)})
	if release == nil {
		t.Errorf("a halted desk's read of its book refused by the limits: %q", refusal)
	} else {
		release()
	}
	if err := f.st.Resume(t.Context(), "main", h.At, deskbot.AuditEntry{Action: "resume", Desk: "main", By: "Asha", At: thursdayMorning}); err != nil {
		t.Fatal(err)
	}
	if got := f.check(t, "main", "buy", 1); got != "" {
		t.Errorf("after the resume: refused %q", got)
	}
}

// After square_off_at an order that opens, grows or flips a position is
// refused and one that reduces it runs; before the time, and on the next
// trading day, both run.
func TestLimitsAfterTheSquareOff(t *testing.T) {
	ist := func(day, hh, mm int) time.Time { return time.Date(2026, 12, day, hh, mm, 0, 0, deskbot.IST) }
	after := ist(3, 15, 20)
	tests := []struct {
		name    string
		at      time.Time
		holding float64 // TCS held before the order (short below 0)
		side    string
		qty     float64
		refused bool
	}{
		{"a buy that opens, before the time", ist(3, 15, 14), 0, "buy", 10, false},
		{"a buy that opens, at the time", ist(3, 15, 15), 0, "buy", 10, true},
		{"a buy that opens, after", after, 0, "buy", 10, true},
		{"a sell that opens a short, after", after, 0, "sell", 10, true},
		{"a buy that grows a long", after, 10, "buy", 1, true},
		{"a sell that reduces a long", after, 10, "sell", 4, false},
		{"a sell that closes a long", after, 10, "sell", 10, false},
		{"a sell that flips long to short", after, 10, "sell", 15, true},
		{"a buy that reduces a short", after, -10, "buy", 10, false},
		{"a buy that flips short to long", after, -10, "buy", 11, true},
		{"saturday", ist(5, 10, 0), 0, "buy", 10, true},
		{"the next trading day, before the time", ist(4, 9, 15), 0, "buy", 10, false},
		{"monday after a weekend", ist(7, 9, 15), 0, "buy", 10, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mustRiskLimits(t, deskbot.RiskRules{SquareOffAt: "15:15"}, ist(3, 10, 0))
			if tt.holding != 0 {
				f.hold(t, "main", tt.holding)
			}
			f.now.Store(&tt.at)
			got := f.check(t, "main", tt.side, tt.qty)
			if tt.refused {
				want := words.LimitMessage(deskbot.ToolPlaceOrder, words.SquareOffReason("15:15"))
				if got != want {
					t.Errorf("refusal %q; want %q", got, want)
				}
			} else if got != "" {
				t.Errorf("refused %q; want run", got)
			}
		})
	}
}

// A desk without rules (and without hard limits) costs its orders no
// read of the desk's state; a desk with rules, one.
func TestLimitsReadTheDeskOnlyForDesksWithRules(t *testing.T) {
	f := mustRiskLimits(t, deskbot.RiskRules{MaxDenialsInARow: 3}, thursdayMorning)
	for range 3 {
		if got := f.check(t, "other", "buy", 1); got != "" {
			t.Fatalf("desk other refused: %q", got)
		}
	}
	if got := f.desks.reads.Load(); got != 0 {
		t.Errorf("reads of the state of a desk without rules: %d, want 0", got)
	}
	if got := f.check(t, "main", "buy", 1); got != "" {
		t.Fatalf("desk main refused: %q", got)
	}
	if got := f.desks.reads.Load(); got != 1 {
		t.Errorf("reads for one order of a desk with rules: %d, want 1", got)
	}
	if !strings.Contains(words.HaltedOrderMessage("place_order"), "End this turn") {
		t.Error("the halted order's words do not end the turn")
	}
}
