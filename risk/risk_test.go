package risk

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/broker/brokertest"
	"github.com/deskbot/deskbot/deskbottest"
	"github.com/deskbot/deskbot/store"
	"github.com/deskbot/deskbot/store/storetest"
)

// world is one desk, main, on the real store and the real paper broker,
// at prices and a clock the test sets. TCS starts at ₹1,000.
type world struct {
	st     *store.Store
	paper  *broker.Paper
	quotes *brokertest.Quotes
	broker *flaky
	*deskbottest.Clock

	events []deskbot.Event // every event read so far
}

// A thursday, India time, in trading hours.
var thursday = time.Date(2026, 12, 3, 11, 0, 0, 0, deskbot.IST)

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{st: storetest.MustOpen(t), quotes: &brokertest.Quotes{}, Clock: deskbottest.NewClock(thursday)}
	w.quotes.Set("TCS", 1000)
	w.paper = broker.NewPaperMarket(w.st, w.Now, w.quotes)
	w.broker = &flaky{Paper: w.paper}
	if err := w.st.CreateEventGroupAtEnd(t.Context(), "test"); err != nil {
		t.Fatal(err)
	}
	return w
}

// watcher is a Watcher of desk main with rules, as a fresh process would
// start it.
func (w *world) watcher(rules deskbot.RiskRules) *Watcher {
	return &Watcher{Desks: []string{"main"}, Rules: map[string]deskbot.RiskRules{"main": rules},
		Store: w.st, Broker: w.broker, Now: w.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

func (w *world) trade(t *testing.T, side string, qty float64) {
	t.Helper()
	limit := 1e6
	if side == "sell" {
		limit = 0.05
	}
	if _, err := w.paper.PlaceOrder(t.Context(), "main", deskbottest.NewKey(), deskbot.Order{Symbol: "TCS", Side: side, Quantity: qty, Price: limit}); err != nil {
		t.Fatalf("%s %v TCS: %v", side, qty, err)
	}
}

// riskTexts are the texts of the EventRisk events published so far.
func (w *world) riskTexts(t *testing.T) []string {
	t.Helper()
	for {
		evs, err := w.st.ReadEvents(t.Context(), "test", "t", 100, 10*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 0 {
			break
		}
		for _, e := range evs {
			if err := w.st.AckEvent(t.Context(), "test", e.ID); err != nil {
				t.Fatal(err)
			}
		}
		w.events = append(w.events, evs...)
	}
	var out []string
	for _, e := range w.events {
		if e.Kind == deskbot.EventRisk {
			out = append(out, e.Text)
		}
	}
	return out
}

// countRisk counts the EventRisk texts that contain s.
func (w *world) countRisk(t *testing.T, s string) int {
	t.Helper()
	n := 0
	for _, text := range w.riskTexts(t) {
		if strings.Contains(text, s) {
			n++
		}
	}
	return n
}

func (w *world) audits(t *testing.T, action string) int {
	t.Helper()
	trail, err := w.st.AuditTrail(t.Context(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range trail {
		if e.Action == action && e.Desk == "main" {
			n++
		}
	}
	return n
}

func (w *world) status(t *testing.T) deskbot.DeskStatus {
	t.Helper()
	st, err := w.st.DeskStatus(t.Context(), "main")
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func (w *world) positions(t *testing.T) int {
	t.Helper()
	b, err := w.paper.Book(t.Context(), "main")
	if err != nil {
		t.Fatal(err)
	}
	return len(b.Positions)
}

// flaky is the paper broker whose book can be made to fail, as a real
// broker's API does when it is down.
type flaky struct {
	*broker.Paper
	down atomic.Bool
}

func (f *flaky) Book(ctx context.Context, desk string) (deskbot.Book, error) {
	if f.down.Load() {
		return deskbot.Book{}, deskbot.Errorf(deskbot.EUNAVAILABLE, "the broker is not answering")
	}
	return f.Paper.Book(ctx, desk)
}

// The day's P&L rules, on price paths of a long 100 TCS bought at ₹1,000:
// each halts at the first check that breaks it, and only then.
func TestRulesHaltAtTheFirstCheckThatBreaksThem(t *testing.T) {
	tests := []struct {
		name     string
		rules    deskbot.RiskRules
		prices   []float64 // one check at each
		haltedAt int       // index of prices; -1 never
		rule     string
	}{
		{"loss below the limit", deskbot.RiskRules{MaxDailyLoss: 1000}, []float64{995, 991, 990.5}, -1, ""},
		{"loss at the limit", deskbot.RiskRules{MaxDailyLoss: 1000}, []float64{995, 990, 985}, 1, deskbot.RuleMaxDailyLoss},
		{"loss recovered before a check", deskbot.RiskRules{MaxDailyLoss: 1000}, []float64{1010, 1000, 995}, -1, ""},
		// A drawdown is from the day's best, even while the day is up.
		{"drawdown while up", deskbot.RiskRules{MaxDrawdown: 500}, []float64{1010, 1006, 1005}, 2, deskbot.RuleMaxDrawdown},
		{"drawdown short of the limit", deskbot.RiskRules{MaxDrawdown: 500}, []float64{1010, 1006, 1005.5, 1020}, -1, ""},
		{"drawdown from a best that came later", deskbot.RiskRules{MaxDrawdown: 500}, []float64{1002, 1020, 1014.9}, 2, deskbot.RuleMaxDrawdown},
		{"loss first when both break", deskbot.RiskRules{MaxDailyLoss: 1000, MaxDrawdown: 500}, []float64{1000, 989}, 1, deskbot.RuleMaxDailyLoss},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			w.trade(t, "buy", 100)
			wt := w.watcher(tt.rules)
			for i, p := range tt.prices {
				w.quotes.Set("TCS", p)
				w.Set(thursday.Add(time.Duration(i+1) * time.Minute))
				wt.Check(t.Context(), "main")
				st := w.status(t)
				wantHalted := tt.haltedAt >= 0 && i >= tt.haltedAt
				if got := st.Halt != nil; got != wantHalted {
					t.Fatalf("after the check at ₹%v: halted %v, want %v (%+v)", p, got, wantHalted, st.Halt)
				}
				if st.Halt != nil {
					if got, want := st.Halt.Rule, tt.rule; got != want {
						t.Errorf("rule %q, want %q", got, want)
					}
					if !st.Paused {
						t.Error("halted but not paused")
					}
				}
			}
		})
	}
}

// However many checks follow a halt, it is one halt: one audit entry, one
// message to the group, one flatten.
func TestDailyLossHaltsOnceHoweverManyChecks(t *testing.T) {
	w := newWorld(t)
	w.trade(t, "buy", 100)
	wt := w.watcher(deskbot.RiskRules{MaxDailyLoss: 1000, FlattenOnHalt: true})
	w.quotes.Set("TCS", 985)
	for i := range 10 {
		w.Set(thursday.Add(time.Duration(i) * time.Second))
		wt.Check(t.Context(), "main")
	}
	if got, want := w.audits(t, "halt"), 1; got != want {
		t.Errorf("halt audits: %d, want %d", got, want)
	}
	if got, want := w.audits(t, "flatten"), 1; got != want {
		t.Errorf("flatten audits: %d, want %d", got, want)
	}
	if got, want := w.countRisk(t, "halted"), 1; got != want {
		t.Errorf("halts told: %d, want %d (%q)", got, want, w.riskTexts(t))
	}
	if got := w.positions(t); got != 0 {
		t.Errorf("open positions after flatten_on_halt: %d", got)
	}
	if st := w.status(t); st.Halt == nil || !st.Halt.Done || !strings.Contains(st.Halt.Did, "closed") {
		t.Errorf("halt = %+v; want done, having closed the position", st.Halt)
	}
}

// Two instances (a leader and the one taking over) check the same desk
// at the same moment: one halt, told once.
func TestTwoWatchersHaltOnce(t *testing.T) {
	for trial := range 8 {
		t.Run(fmt.Sprint(trial), func(t *testing.T) {
			w := newWorld(t)
			w.trade(t, "buy", 100)
			rules := deskbot.RiskRules{MaxDailyLoss: 1000, FlattenOnHalt: true}
			a, b := w.watcher(rules), w.watcher(rules)
			w.quotes.Set("TCS", 985)
			var wg sync.WaitGroup
			for _, wt := range []*Watcher{a, b} {
				wg.Go(func() {
					for range 3 {
						wt.Check(t.Context(), "main")
					}
				})
			}
			wg.Wait()
			if got, want := w.audits(t, "halt"), 1; got != want {
				t.Errorf("halt audits: %d, want %d", got, want)
			}
			if got, want := w.countRisk(t, "halted"), 1; got != want {
				t.Errorf("halts told: %d, want %d", got, want)
			}
			if st := w.status(t); st.Halt == nil || !st.Halt.Done {
				t.Errorf("halt = %+v; want done", st.Halt)
			}
		})
	}
}

// A leader that took the halt and died before doing the rest: the next
// leader's first check closes the positions, tells the group, and marks
// the halt done, once.
func TestUndoneHaltIsFinishedByTheNextWatcher(t *testing.T) {
	w := newWorld(t)
	w.trade(t, "buy", 100)
	w.quotes.Set("TCS", 985)
	h := deskbot.Halt{Rule: deskbot.RuleMaxDailyLoss, Figures: "P&L today -₹1,500.00", At: w.Now(), PnL: -1500}
	won, err := w.st.HaltDesk(t.Context(), "main", h, deskbot.AuditEntry{Action: "halt", Desk: "main", By: By, At: h.At})
	if err != nil || !won {
		t.Fatalf("HaltDesk: %v, %v", won, err)
	}
	// The process died here.
	wt := w.watcher(deskbot.RiskRules{MaxDailyLoss: 1000, FlattenOnHalt: true})
	for range 3 {
		wt.Check(t.Context(), "main")
	}
	if got := w.positions(t); got != 0 {
		t.Errorf("open positions: %d; want the halt's flatten done", got)
	}
	st := w.status(t)
	if st.Halt == nil || !st.Halt.Done || st.Halt.Rule != deskbot.RuleMaxDailyLoss {
		t.Fatalf("halt = %+v; want the same halt, done", st.Halt)
	}
	if got, want := w.countRisk(t, "halted"), 1; got != want {
		t.Errorf("halts told: %d, want %d", got, want)
	}
	if got, want := w.audits(t, "halt"), 1; got != want {
		t.Errorf("halt audits: %d, want %d (the halt is not taken again)", got, want)
	}
	if got, want := w.audits(t, "flatten"), 1; got != want {
		t.Errorf("flatten audits: %d, want %d", got, want)
	}
}

// After an approver's resume, the loss rule trips again only on a further
// max_daily_loss below the P&L the desk was halted at; the tokens rule
// likewise counts from the halt's tokens.
func TestResumeRestartsTheDayFromTheHalt(t *testing.T) {
	w := newWorld(t)
	w.trade(t, "buy", 100)
	wt := w.watcher(deskbot.RiskRules{MaxDailyLoss: 1000})
	w.quotes.Set("TCS", 989) // -1,100
	wt.Check(t.Context(), "main")
	st := w.status(t)
	if st.Halt == nil || st.Halt.PnL != -1100 {
		t.Fatalf("halt = %+v; want one at -1,100", st.Halt)
	}
	w.Set(thursday.Add(time.Minute))
	if err := w.st.Resume(t.Context(), "main", w.status(t).Halt.At, deskbot.AuditEntry{Action: "resume", Desk: "main", By: "Asha", At: w.Now()}); err != nil {
		t.Fatal(err)
	}
	for i, tt := range []struct {
		price  float64
		halted bool
	}{
		{989, false},    // the figures it was halted on: the approver said go on
		{980, false},    // -2,000: 900 more
		{979.01, false}, // -2,099
		{979, true},     // -2,100: 1,000 below the halt's P&L
	} {
		w.quotes.Set("TCS", tt.price)
		w.Set(thursday.Add(time.Duration(2+i) * time.Minute))
		wt.Check(t.Context(), "main")
		if got := w.status(t).Halt != nil; got != tt.halted {
			t.Fatalf("at ₹%v after the resume: halted %v, want %v", tt.price, got, tt.halted)
		}
	}
	if got, want := w.audits(t, "halt"), 2; got != want {
		t.Errorf("halt audits: %d, want %d", got, want)
	}
}

// A halt of one day resumed on the next: the new day's rules count from
// nothing, not from the old day's figures — yesterday's halt is no
// allowance for today.
func TestResumeOnALaterDayDoesNotCarryTheHaltsFigures(t *testing.T) {
	w := newWorld(t)
	w.trade(t, "buy", 100)
	w.trade(t, "sell", 100) // flat: the day's P&L is only what is realised
	rules := deskbot.RiskRules{MaxDailyLoss: 1000, MaxModelTokensPerDay: 100}
	wt := w.watcher(rules)
	day := deskbot.OrderDay(thursday)
	setTokens := func(day string, n int64) {
		t.Helper()
		if err := w.st.Client().HSet(t.Context(), w.st.Key("desk", "main"), "tokens_day", day, "tokens", n).Err(); err != nil {
			t.Fatal(err)
		}
	}
	setTokens(day, 150)
	wt.Check(t.Context(), "main")
	if st := w.status(t); st.Halt == nil || st.Halt.Rule != deskbot.RuleMaxModelTokensPerDay {
		t.Fatalf("halt = %+v; want by tokens", st.Halt)
	}
	friday := thursday.Add(24 * time.Hour)
	w.Set(friday)
	if err := w.st.Resume(t.Context(), "main", w.status(t).Halt.At, deskbot.AuditEntry{Action: "resume", Desk: "main", By: "Asha", At: friday}); err != nil {
		t.Fatal(err)
	}
	setTokens(deskbot.OrderDay(friday), 120) // past Friday's 100, though short of Thursday's 150 + 100
	w.Set(friday.Add(time.Minute))
	wt.Check(t.Context(), "main")
	st := w.status(t)
	if st.Halt == nil || st.Halt.Rule != deskbot.RuleMaxModelTokensPerDay {
		t.Fatalf("after 120 tokens on the day after the resume: halt = %+v; want halted by tokens", st.Halt)
	}
}

// The broker down: the group is told once that the rules cannot be
// checked, however many checks fail, and told again only after a check
// that worked.
func TestBrokerDownIsToldOnceUntilItRecovers(t *testing.T) {
	w := newWorld(t)
	wt := w.watcher(deskbot.RiskRules{MaxDailyLoss: 1000})
	const unchecked = "cannot be checked"
	steps := []struct {
		down bool
		want int // told so far
	}{
		{false, 0}, {true, 1}, {true, 1}, {true, 1}, {false, 1}, {false, 1}, {true, 2}, {true, 2},
	}
	for i, s := range steps {
		w.broker.down.Store(s.down)
		wt.Check(t.Context(), "main")
		if got := w.countRisk(t, unchecked); got != s.want {
			t.Fatalf("step %d (broker down %v): told %d times, want %d (%q)", i, s.down, got, s.want, w.riskTexts(t))
		}
	}
}

// decisionEvent is a denial (refused) or an allow of a request, as the
// stream carries the decision.
func decisionEvent(id string, at time.Time, refused bool) deskbot.Event {
	d := deskbot.AllowOnce
	if refused {
		d = deskbot.Deny
	}
	return deskbot.Event{ID: id, Kind: deskbot.EventRequestDecided, Desk: "main", Time: at,
		Request: &deskbot.Request{Desk: "main", Decision: d, DecidedAt: at}}
}

// The run of refusals is counted by event: a batch delivered again (the
// watcher died before acknowledging it) counts nothing more, and a halt
// comes at the run's length, not before.
func TestRefusalsInARowCountRedeliveredEventsOnce(t *testing.T) {
	w := newWorld(t)
	wt := w.watcher(deskbot.RiskRules{MaxDenialsInARow: 3})
	at := w.Now()
	first := []deskbot.Event{decisionEvent("1000-0", at, true), decisionEvent("1001-0", at, true)}
	for range 3 {
		if err := wt.handle(t.Context(), first); err != nil {
			t.Fatal(err)
		}
	}
	if st := w.status(t); st.Halt != nil {
		t.Fatalf("two denials, delivered three times, halted the desk: %+v", st.Halt)
	}
	// An allow ends the run; two more denials are a run of two.
	second := []deskbot.Event{decisionEvent("1002-0", at, false), decisionEvent("1003-0", at, true), decisionEvent("1004-0", at, true)}
	for range 2 {
		if err := wt.handle(t.Context(), second); err != nil {
			t.Fatal(err)
		}
	}
	if st := w.status(t); st.Halt != nil {
		t.Fatalf("an allow did not end the run: %+v", st.Halt)
	}
	limit := deskbot.Event{ID: "1005-0", Kind: deskbot.EventToolResult, Desk: "main", Time: at,
		Result: &deskbot.ToolResult{IsError: true, Limit: true, Text: "refused by a hard limit"}}
	if err := wt.handle(t.Context(), []deskbot.Event{limit}); err != nil {
		t.Fatal(err)
	}
	st := w.status(t)
	if st.Halt == nil || st.Halt.Rule != deskbot.RuleMaxDenialsInARow {
		t.Fatalf("after three refusals in a row: halt = %+v", st.Halt)
	}
	if err := wt.handle(t.Context(), []deskbot.Event{limit}); err != nil {
		t.Fatal(err)
	}
	if got, want := w.audits(t, "halt"), 1; got != want {
		t.Errorf("halt audits: %d, want %d", got, want)
	}
}

// The square-off: once on each trading day, at the first check at or
// after square_off_at, never at the weekend.
func TestSquareOffOncePerTradingDay(t *testing.T) {
	ist := func(day, hh, mm int) time.Time { return time.Date(2026, 12, day, hh, mm, 0, 0, deskbot.IST) }
	tests := []struct {
		name   string
		checks []time.Time
		want   int // square-offs
	}{
		{"before the time", []time.Time{ist(3, 9, 15), ist(3, 15, 14)}, 0},
		{"at the time, checked again and again", []time.Time{ist(3, 15, 15), ist(3, 15, 16), ist(3, 15, 45), ist(3, 23, 59)}, 1},
		{"caught up by a first check after the time", []time.Time{ist(3, 17, 40)}, 1},
		{"thursday and friday", []time.Time{ist(3, 15, 15), ist(3, 16, 0), ist(4, 10, 0), ist(4, 15, 20), ist(4, 15, 30)}, 2},
		{"saturday and sunday", []time.Time{ist(5, 15, 15), ist(5, 16, 0), ist(6, 15, 30)}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			wt := w.watcher(deskbot.RiskRules{SquareOffAt: "15:15"})
			for _, at := range tt.checks {
				w.Set(at)
				w.trade(t, "buy", 10) // a position to close, if the square-off is due
				wt.Check(t.Context(), "main")
			}
			if got := w.countRisk(t, "squared off"); got != tt.want {
				t.Errorf("square-offs told: %d, want %d (%q)", got, tt.want, w.riskTexts(t))
			}
			if got := w.audits(t, "flatten"); got != tt.want {
				t.Errorf("square-offs audited: %d, want %d", got, tt.want)
			}
			if st := w.status(t); st.Halt != nil {
				t.Errorf("a square-off halted the desk: %+v", st.Halt)
			}
		})
	}
}

// A square-off whose flatten failed is tried again at the next check.
func TestSquareOffRetriedAfterTheBrokerFailed(t *testing.T) {
	w := newWorld(t)
	w.trade(t, "buy", 10)
	wt := w.watcher(deskbot.RiskRules{SquareOffAt: "15:15"})
	w.Set(time.Date(2026, 12, 3, 15, 16, 0, 0, deskbot.IST))
	failing := &Watcher{Desks: wt.Desks, Rules: wt.Rules, Store: w.st, Broker: downFlatten{w.broker}, Now: w.Now, Log: wt.Log}
	failing.Check(t.Context(), "main")
	if got := w.positions(t); got != 1 {
		t.Fatalf("positions after a failed square-off: %d, want 1", got)
	}
	wt.Check(t.Context(), "main")
	if got := w.positions(t); got != 0 {
		t.Errorf("positions after the retried square-off: %d, want 0", got)
	}
	if got, want := w.countRisk(t, "squared off"), 1; got != want {
		t.Errorf("square-offs told: %d, want %d", got, want)
	}
}

// downFlatten is a broker whose flatten fails.
type downFlatten struct{ *flaky }

func (downFlatten) Flatten(context.Context, string, string) (deskbot.FlattenReport, error) {
	return deskbot.FlattenReport{}, deskbot.Errorf(deskbot.EUNAVAILABLE, "the broker is not answering")
}

// The tokens rule: the desk's models' tokens of the India day, not of an
// earlier one.
func TestTokensRule(t *testing.T) {
	tests := []struct {
		name   string
		day    string
		tokens int64
		halted bool
	}{
		{"below", deskbot.OrderDay(thursday), 99, false},
		{"at", deskbot.OrderDay(thursday), 100, true},
		{"above", deskbot.OrderDay(thursday), 5000, true},
		{"yesterday's", deskbot.OrderDay(thursday.Add(-24 * time.Hour)), 5000, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			if err := w.st.Client().HSet(t.Context(), w.st.Key("desk", "main"), "tokens_day", tt.day, "tokens", tt.tokens).Err(); err != nil {
				t.Fatal(err)
			}
			w.watcher(deskbot.RiskRules{MaxModelTokensPerDay: 100}).Check(t.Context(), "main")
			st := w.status(t)
			if got := st.Halt != nil; got != tt.halted {
				t.Fatalf("halted %v, want %v (%+v)", got, tt.halted, st.Halt)
			}
			if tt.halted && st.Halt.Rule != deskbot.RuleMaxModelTokensPerDay {
				t.Errorf("rule %q", st.Halt.Rule)
			}
		})
	}
}

// The broker as the tools place orders: after the square-off an order
// that opens, grows or flips a position is refused however it came (an
// order allowed after the square-off never asks the limits again); one
// that reduces a position, one before the time, and one of a desk
// without the rule are placed.
func TestBrokerRefusesOpeningOrdersAfterTheSquareOff(t *testing.T) {
	ist := func(day, hh, mm int) time.Time { return time.Date(2026, 12, day, hh, mm, 0, 0, deskbot.IST) }
	tests := []struct {
		name    string
		desk    string
		at      time.Time
		holding float64
		side    string
		qty     float64
		placed  bool
	}{
		{"a buy before the time", "main", ist(3, 15, 14), 0, "buy", 10, true},
		{"a buy after", "main", ist(3, 15, 15), 0, "buy", 10, false},
		{"a buy that grows a long", "main", ist(3, 16, 0), 10, "buy", 1, false},
		{"a sell that reduces a long", "main", ist(3, 16, 0), 10, "sell", 10, true},
		{"a sell that flips a long", "main", ist(3, 16, 0), 10, "sell", 11, false},
		{"saturday", "main", ist(5, 11, 0), 0, "buy", 10, false},
		{"the next trading day", "main", ist(4, 9, 15), 0, "buy", 10, true},
		{"a desk without the rule", "fno", ist(3, 16, 0), 0, "buy", 10, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			w.Set(ist(3, 10, 0))
			if tt.holding > 0 {
				if _, err := w.paper.PlaceOrder(t.Context(), tt.desk, deskbottest.NewKey(), deskbot.Order{Symbol: "TCS", Side: "buy", Quantity: tt.holding, Price: 1e6}); err != nil {
					t.Fatal(err)
				}
			}
			w.Set(tt.at)
			b := w.paper.Admitting(Admission{Desks: w.st, Rules: map[string]deskbot.RiskRules{"main": {SquareOffAt: "15:15"}}, Now: w.Now}.Admit)
			limit := 1e6
			if tt.side == "sell" {
				limit = 1
			}
			_, err := b.PlaceOrder(t.Context(), tt.desk, deskbottest.NewKey(), deskbot.Order{Symbol: "TCS", Side: tt.side, Quantity: tt.qty, Price: limit})
			if got := err == nil; got != tt.placed {
				t.Fatalf("placed %v (%v), want %v", got, err, tt.placed)
			}
			if err != nil && !strings.Contains(deskbot.ErrorMessage(err), "after the desk's square-off at 15:15 IST") {
				t.Errorf("refusal %q does not say why", deskbot.ErrorMessage(err))
			}
		})
	}
}

// dying is a broker whose flatten is where its process dies: nothing of
// the watcher's runs after it.
type dying struct{ *flaky }

func (dying) Flatten(context.Context, string, string) (deskbot.FlattenReport, error) {
	runtime.Goexit()
	return deskbot.FlattenReport{}, nil
}

// die runs one check of a watcher over the dying broker.
func (w *world) die(t *testing.T, rules deskbot.RiskRules) {
	t.Helper()
	dead := w.watcher(rules)
	dead.Broker, dead.ClaimFor = dying{w.broker}, 200*time.Millisecond
	var wg sync.WaitGroup
	wg.Go(func() { dead.Check(t.Context(), "main") })
	wg.Wait()
}

// A leader that died as it squared a desk off: the day is not marked
// squared off with the positions open; the next leader squares it off
// once the dead one's claim lapsed, and once.
func TestSquareOffLeftUndoneByADeadLeaderIsDone(t *testing.T) {
	w := newWorld(t)
	w.trade(t, "buy", 10)
	rules := deskbot.RiskRules{SquareOffAt: "15:15"}
	w.Set(time.Date(2026, 12, 3, 15, 16, 0, 0, deskbot.IST))
	w.die(t, rules)
	next := w.watcher(rules)
	next.Check(t.Context(), "main") // the dead leader's claim still holds
	if got := w.positions(t); got != 1 {
		t.Fatalf("positions while the dead leader's claim holds: %d, want 1", got)
	}
	time.Sleep(300 * time.Millisecond)
	for range 3 {
		next.Check(t.Context(), "main")
	}
	if got := w.positions(t); got != 0 {
		t.Errorf("positions after the next leader's checks: %d, want 0", got)
	}
	if got, want := w.countRisk(t, "squared off"), 1; got != want {
		t.Errorf("square-offs told: %d, want %d", got, want)
	}
}

// A leader that died as it flattened a halted desk: the next finishes the
// halt once the claim lapsed.
func TestHaltLeftUndoneByADeadLeaderIsFinished(t *testing.T) {
	w := newWorld(t)
	w.trade(t, "buy", 100)
	w.quotes.Set("TCS", 985)
	rules := deskbot.RiskRules{MaxDailyLoss: 1000, FlattenOnHalt: true}
	w.die(t, rules)
	if st := w.status(t); st.Halt == nil || st.Halt.Done {
		t.Fatalf("after the dead leader's check: halt %+v; want taken, not done", st.Halt)
	}
	next := w.watcher(rules)
	time.Sleep(300 * time.Millisecond)
	for range 3 {
		next.Check(t.Context(), "main")
	}
	if st := w.status(t); st.Halt == nil || !st.Halt.Done {
		t.Errorf("halt %+v; want done", st.Halt)
	}
	if got := w.positions(t); got != 0 {
		t.Errorf("positions: %d, want 0", got)
	}
	if got, want := w.countRisk(t, "halted"), 1; got != want {
		t.Errorf("halts told: %d, want %d", got, want)
	}
}

// A desk whose only rule is its square-off, with the broker down: the
// group is told once that the rules cannot be checked, and once that the
// square-off could not be done, however many checks fail; the square-off
// is done, and told, when the broker is back.
func TestSquareOffWithTheBrokerDownIsTold(t *testing.T) {
	w := newWorld(t)
	w.trade(t, "buy", 10)
	rules := deskbot.RiskRules{SquareOffAt: "15:15"}
	w.Set(time.Date(2026, 12, 3, 15, 16, 0, 0, deskbot.IST))
	w.broker.down.Store(true)
	wt := w.watcher(rules)
	for range 3 {
		wt.Check(t.Context(), "main")
	}
	if got, want := w.countRisk(t, "cannot be checked"), 1; got != want {
		t.Errorf("told the rules cannot be checked: %d, want %d (%q)", got, want, w.riskTexts(t))
	}
	w.broker.down.Store(false)
	failing := w.watcher(rules)
	failing.Broker = downFlatten{w.broker}
	for range 3 {
		failing.Check(t.Context(), "main")
	}
	if got, want := w.countRisk(t, "could not square off"), 1; got != want {
		t.Errorf("told the square-off failed: %d, want %d (%q)", got, want, w.riskTexts(t))
	}
	if got := w.positions(t); got != 1 {
		t.Fatalf("positions: %d, want 1", got)
	}
	wt.Check(t.Context(), "main")
	if got := w.positions(t); got != 0 {
		t.Errorf("positions once the broker is back: %d, want 0", got)
	}
	if got, want := w.countRisk(t, "squared off at"), 1; got != want {
		t.Errorf("square-offs told: %d, want %d", got, want)
	}
}

// Two watchers at the square-off at once: one square-off, told once.
func TestTwoWatchersSquareOffOnce(t *testing.T) {
	for trial := range 5 {
		t.Run(fmt.Sprint(trial), func(t *testing.T) {
			w := newWorld(t)
			w.trade(t, "buy", 10)
			w.Set(time.Date(2026, 12, 3, 15, 15, 0, 0, deskbot.IST))
			rules := deskbot.RiskRules{SquareOffAt: "15:15"}
			var wg sync.WaitGroup
			for _, wt := range []*Watcher{w.watcher(rules), w.watcher(rules)} {
				wg.Go(func() {
					for range 3 {
						wt.Check(t.Context(), "main")
					}
				})
			}
			wg.Wait()
			if got, want := w.countRisk(t, "squared off at"), 1; got != want {
				t.Errorf("square-offs told: %d, want %d", got, want)
			}
			if got, want := w.audits(t, "flatten"), 1; got != want {
				t.Errorf("flattens audited: %d, want %d", got, want)
			}
			if got := w.positions(t); got != 0 {
				t.Errorf("positions: %d, want 0", got)
			}
		})
	}
}

// After a resume from a drawdown halt, the drawdown counts from the P&L
// the desk was halted at: a new best, then a new fall of max_drawdown.
func TestResumeRestartsTheDrawdownFromTheHalt(t *testing.T) {
	w := newWorld(t)
	w.trade(t, "buy", 100)
	wt := w.watcher(deskbot.RiskRules{MaxDrawdown: 500})
	for i, p := range []float64{1020, 1014} { // best +2,000, then +1,400
		w.quotes.Set("TCS", p)
		w.Set(thursday.Add(time.Duration(i) * time.Minute))
		wt.Check(t.Context(), "main")
	}
	st := w.status(t)
	if st.Halt == nil || st.Halt.Rule != deskbot.RuleMaxDrawdown {
		t.Fatalf("halt = %+v; want by drawdown", st.Halt)
	}
	w.Set(thursday.Add(5 * time.Minute))
	if err := w.st.Resume(t.Context(), "main", st.Halt.At, deskbot.AuditEntry{Action: "resume", Desk: "main", By: "Asha", At: w.Now()}); err != nil {
		t.Fatal(err)
	}
	for i, tt := range []struct {
		price  float64
		halted bool
	}{
		{1014, false},   // where it was halted
		{1010, false},   // 400 below it
		{1016, false},   // a new best, +1,600
		{1011.1, false}, // 490 below it
		{1011, true},    // 500 below it
	} {
		w.quotes.Set("TCS", tt.price)
		w.Set(thursday.Add(time.Duration(6+i) * time.Minute))
		wt.Check(t.Context(), "main")
		if got := w.status(t).Halt != nil; got != tt.halted {
			t.Fatalf("at ₹%v after the resume: halted %v, want %v", tt.price, got, tt.halted)
		}
	}
}

// stopping is the store of a process that is stopping: the stop comes while
// the watcher clears its unchecked note.
type stopping struct {
	*store.Store
	stop context.CancelFunc
}

func (s stopping) DeleteNote(ctx context.Context, key string) error {
	s.stop()
	return ctx.Err()
}

// A stop in the middle of a check is no failure: the watcher logs no
// warning for what the stop cut short.
func TestStopDuringACheckLogsNoWarning(t *testing.T) {
	w := newWorld(t)
	var logs strings.Builder
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	wt := w.watcher(deskbot.RiskRules{MaxDailyLoss: 500})
	wt.Store = stopping{Store: w.st, stop: stop}
	wt.Log = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	wt.Check(ctx, "main")
	if got := logs.String(); got != "" {
		t.Errorf("a check cut short by the stop logged:\n%s", got)
	}
}
