package risk

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/broker"
	"github.com/deskbot/deskbot/deskbottest"
)

// A halt deletes the desk's GTTs in the same step as it cancels its
// orders, whether or not its positions are closed: none fires into the
// halted desk's book afterwards.
func TestHaltDeletesTheDesksGTTs(t *testing.T) {
	for _, flatten := range []bool{false, true} {
		t.Run(map[bool]string{false: "positions left open", true: "positions closed"}[flatten], func(t *testing.T) {
			w := newWorld(t)
			w.trade(t, "buy", 100)
			g := deskbot.GTT{Symbol: "TCS", Side: deskbot.Sell, Quantity: 100, Product: deskbot.ProductMIS, Stop: deskbot.GTTLeg{Trigger: 950, Price: 945}}
			if _, err := w.paper.PlaceGTT(t.Context(), "main", deskbottest.NewKey(), g); err != nil {
				t.Fatal(err)
			}
			wt := w.watcher(deskbot.RiskRules{MaxDailyLoss: 1000, FlattenOnHalt: flatten})
			w.quotes.Set("TCS", 985)
			w.Set(thursday.Add(time.Minute))
			wt.Check(t.Context(), "main")
			if st := w.status(t); st.Halt == nil || !st.Halt.Done {
				t.Fatalf("halt = %+v; want done", st.Halt)
			}
			gs, err := w.paper.GTTs(t.Context(), "main")
			if err != nil || len(gs) != 1 || gs[0].State != deskbot.GTTDeleted {
				t.Fatalf("GTTs after the halt: %+v, %v; want the one deleted", gs, err)
			}
			before, err := w.paper.Book(t.Context(), "main")
			if err != nil {
				t.Fatal(err)
			}
			w.quotes.Set("TCS", 940)
			if _, err := w.paper.Sync(t.Context()); err != nil {
				t.Fatal(err)
			}
			after, err := w.paper.Book(t.Context(), "main")
			if err != nil {
				t.Fatal(err)
			}
			if got, want := deskbot.Held(after, "TCS"), deskbot.Held(before, "TCS"); got != want {
				t.Errorf("the halted desk's TCS went from %v to %v at the deleted stop's price", want, got)
			}
		})
	}
}

// refusing is the paper broker whose GTT deletions and order
// cancellations fail with err while it is set, as Kite's do from an
// address it does not take, or while it is down; it counts the tries.
type refusing struct {
	*broker.Paper
	mu    sync.Mutex
	err   error
	tries int
}

func (r *refusing) set(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.err = err
}

func (r *refusing) tried() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.tries
}

func (r *refusing) refused() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tries++
	return r.err
}

func (r *refusing) CancelGTT(ctx context.Context, desk, id string) (deskbot.PlacedGTT, error) {
	if err := r.refused(); err != nil {
		return deskbot.PlacedGTT{}, err
	}
	return r.Paper.CancelGTT(ctx, desk, id)
}

func (r *refusing) CancelOrder(ctx context.Context, desk, id string) (deskbot.PlacedOrder, error) {
	if err := r.refused(); err != nil {
		return deskbot.PlacedOrder{}, err
	}
	return r.Paper.CancelOrder(ctx, desk, id)
}

// haltWithAGTTAndARestingOrder is a world whose desk main holds 100 TCS
// with a stop on it and a buy resting, about to be halted (its positions
// left open) at its next check; its broker is rb.
func haltWithAGTTAndARestingOrder(t *testing.T) (*world, *refusing, *Watcher) {
	t.Helper()
	w := newWorld(t)
	w.trade(t, "buy", 100)
	g := deskbot.GTT{Symbol: "TCS", Side: deskbot.Sell, Quantity: 100, Product: deskbot.ProductMIS, Stop: deskbot.GTTLeg{Trigger: 950, Price: 945}}
	if _, err := w.paper.PlaceGTT(t.Context(), "main", deskbottest.NewKey(), g); err != nil {
		t.Fatal(err)
	}
	if _, err := w.paper.PlaceOrder(t.Context(), "main", deskbottest.NewKey(), deskbot.Order{Symbol: "TCS", Side: deskbot.Buy, Quantity: 10, Price: 900}); err != nil {
		t.Fatal(err)
	}
	rb := &refusing{Paper: w.paper}
	wt := w.watcher(deskbot.RiskRules{MaxDailyLoss: 1000})
	wt.Broker = rb
	w.quotes.Set("TCS", 985)
	w.Set(thursday.Add(time.Minute))
	return w, rb, wt
}

// A halt whose GTT deletion and order cancellation the broker refuses
// for the server's address (mended only at its console): the halt is
// done, not tried again at every check, and the group is told in the
// halt's own words what was left and why.
func TestHaltWhoseCancelsAreRefusedForTheAddressSaysWhatItLeft(t *testing.T) {
	w, rb, wt := haltWithAGTTAndARestingOrder(t)
	rb.set(deskbot.Errorf(deskbot.ESOURCE, "Kite refused the request because this server's address is not in the Kite app's IP whitelist"))
	for range 3 {
		wt.Check(t.Context(), "main")
		w.Add(time.Minute)
	}
	if st := w.status(t); st.Halt == nil || !st.Halt.Done {
		t.Fatalf("halt = %+v; want done", st.Halt)
	}
	if got, want := rb.tried(), 2; got != want {
		t.Errorf("deletions and cancels sent: %d, want %d (the GTT's and the order's, once)", got, want)
	}
	halts := 0
	for _, text := range w.riskTexts(t) {
		if strings.Contains(text, "halted") {
			halts++
			if !strings.Contains(text, "IP whitelist") || !strings.Contains(text, "GTT") {
				t.Errorf("the halt's words do not say the GTT was left, and why: %s", text)
			}
		}
	}
	if halts != 1 {
		t.Errorf("halts told: %d, want 1", halts)
	}
}

// A halt whose GTT deletion fails otherwise (the broker down) is tried
// again, after a backoff rather than at every check, and done once the
// broker answers.
func TestHaltWhoseCancelsFailIsTriedAgainAfterABackoff(t *testing.T) {
	w, rb, wt := haltWithAGTTAndARestingOrder(t)
	rb.set(deskbot.Errorf(deskbot.EUNAVAILABLE, "Kite did not answer the GTT deletion; try again"))
	wt.Check(t.Context(), "main")
	w.Add(time.Second)
	wt.Check(t.Context(), "main")
	if got, want := rb.tried(), 1; got != want {
		t.Errorf("deletions sent by two checks a second apart: %d, want %d", got, want)
	}
	w.Add(time.Minute)
	wt.Check(t.Context(), "main")
	if got, want := rb.tried(), 2; got != want {
		t.Errorf("deletions sent once the backoff passed: %d, want %d", got, want)
	}
	if st := w.status(t); st.Halt == nil || st.Halt.Done {
		t.Fatalf("halt = %+v; want taken, not done", st.Halt)
	}
	rb.set(nil)
	w.Add(10 * time.Minute)
	wt.Check(t.Context(), "main")
	mustHaltDoneWithItsGTTDeleted(t, w, "once the broker answers")
}

// unconfirmed is the paper broker whose GTTs read as Kite's do while its
// answer to their placing is not known yet: active, without the broker's
// id, and not to be deleted until it is known (confirm).
type unconfirmed struct {
	*broker.Paper
	mu        sync.Mutex
	confirmed bool
}

func (u *unconfirmed) confirm() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.confirmed = true
}

func (u *unconfirmed) known() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.confirmed
}

func (u *unconfirmed) GTTs(ctx context.Context, desk string) ([]deskbot.PlacedGTT, error) {
	gs, err := u.Paper.GTTs(ctx, desk)
	if u.known() {
		return gs, err
	}
	for i := range gs {
		gs[i].ID = ""
	}
	return gs, err
}

func (u *unconfirmed) CancelGTT(ctx context.Context, desk, id string) (deskbot.PlacedGTT, error) {
	if !u.known() {
		return deskbot.PlacedGTT{}, deskbot.Errorf(deskbot.ECONFLICT, "GTT %s is not confirmed by Kite yet, so it cannot be deleted yet.", id)
	}
	return u.Paper.CancelGTT(ctx, desk, id)
}

// A halt that finds a GTT whose placing the broker has not confirmed yet
// (Kite's answer was lost) cannot delete it yet, as it cannot cancel an
// order not yet confirmed: the halt is not done, and is tried again
// until the GTT is known and deleted, rather than told done with a GTT
// that may still fire into the halted desk.
func TestHaltWithAnUnconfirmedGTTIsTriedAgainUntilItIsDeleted(t *testing.T) {
	w := newWorld(t)
	w.trade(t, "buy", 100)
	g := deskbot.GTT{Symbol: "TCS", Side: deskbot.Sell, Quantity: 100, Product: deskbot.ProductMIS, Stop: deskbot.GTTLeg{Trigger: 950, Price: 945}}
	if _, err := w.paper.PlaceGTT(t.Context(), "main", deskbottest.NewKey(), g); err != nil {
		t.Fatal(err)
	}
	ub := &unconfirmed{Paper: w.paper}
	wt := w.watcher(deskbot.RiskRules{MaxDailyLoss: 1000})
	wt.Broker = ub
	w.quotes.Set("TCS", 985)
	w.Set(thursday.Add(time.Minute))
	wt.Check(t.Context(), "main")
	if st := w.status(t); st.Halt == nil || st.Halt.Done {
		t.Fatalf("halt with a GTT not confirmed yet = %+v; want taken, not done", st.Halt)
	}
	ub.confirm()
	w.Add(10 * time.Minute)
	wt.Check(t.Context(), "main")
	mustHaltDoneWithItsGTTDeleted(t, w, "once the GTT is known")
}

// mustHaltDoneWithItsGTTDeleted checks that main's halt is done (when
// says by when), its one GTT deleted, and the group told of the halt once.
func mustHaltDoneWithItsGTTDeleted(t *testing.T, w *world, when string) {
	t.Helper()
	if st := w.status(t); st.Halt == nil || !st.Halt.Done {
		t.Fatalf("halt = %+v; want done %s", st.Halt, when)
	}
	gs, err := w.paper.GTTs(t.Context(), "main")
	if err != nil || len(gs) != 1 || gs[0].State != deskbot.GTTDeleted {
		t.Errorf("GTTs after the halt: %+v, %v; want the one deleted", gs, err)
	}
	if got, want := w.countRisk(t, "halted"), 1; got != want {
		t.Errorf("halts told: %d, want %d", got, want)
	}
}
