package store_test

import (
	"sync"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/store"
)

func mustStatus(t *testing.T, s *store.Store, desk string) deskbot.DeskStatus {
	t.Helper()
	st, err := s.DeskStatus(t.Context(), desk)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// A halt is taken once however many callers race for it, pauses the desk,
// survives in its status, and is lifted only by Resume: /pause and
// /resume's switch cannot undo it.
func TestHaltIsFirstCallerWinsAndOnlyResumeLiftsIt(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		h := deskbot.Halt{Rule: deskbot.RuleMaxDailyLoss, Figures: "P&L today −₹5,000.00, limit ₹5,000.00", At: base}
		var wg sync.WaitGroup
		var mu sync.Mutex
		won := 0
		for range 8 {
			wg.Go(func() {
				ok, err := s.HaltDesk(ctx, "alpha", h, deskbot.AuditEntry{Action: "halt", By: "risk", At: base, Detail: h.Figures})
				if err != nil {
					t.Error(err)
				}
				if ok {
					mu.Lock()
					won++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if won != 1 {
			t.Fatalf("halts taken: got %d, want 1", won)
		}
		st := mustStatus(t, s, "alpha")
		if !st.Paused || st.Halt == nil || st.Halt.Rule != deskbot.RuleMaxDailyLoss || st.Halt.Done {
			t.Fatalf("status after the halt: %+v (halt %+v)", st, st.Halt)
		}
		err := s.SetPaused(ctx, "alpha", false, deskbot.AuditEntry{Action: "resume", By: "Asha", At: base})
		if got, want := deskbot.ErrorCode(err), deskbot.ECONFLICT; got != want {
			t.Fatalf("resuming a halted desk with the pause switch: code %q, want %q", got, want)
		}
		if st := mustStatus(t, s, "alpha"); !st.Paused || st.Halt == nil {
			t.Fatalf("the switch changed a halted desk: %+v", st)
		}
		if err := s.FinishHalt(ctx, "alpha", "cancelled no orders"); err != nil {
			t.Fatal(err)
		}
		if st := mustStatus(t, s, "alpha"); !st.Halt.Done || st.Halt.Did != "cancelled no orders" || st.Halt.Figures != h.Figures {
			t.Fatalf("finished halt: %+v", st.Halt)
		}
		if err := s.Resume(ctx, "alpha", h.At, deskbot.AuditEntry{Action: "resume", By: "Asha (101)", At: base}); err != nil {
			t.Fatal(err)
		}
		if st := mustStatus(t, s, "alpha"); st.Paused || st.Halt != nil {
			t.Fatalf("after Resume: %+v", st)
		}
		trail, err := s.AuditTrail(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		var actions []string
		for _, e := range trail {
			actions = append(actions, e.Action+" by "+e.By)
		}
		if got, want := actions, []string{"halt by risk", "resume by Asha (101)"}; !eq(got, want) {
			t.Fatalf("audit: got %q, want %q", got, want)
		}
	})
}

// The run of refusals counts each event once, in stream order, and an
// allow ends it.
func TestCountInARowCountsEachEventOnce(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		steps := []struct {
			id      string
			refused bool
			want    int
		}{
			{"100-0", true, 1},
			{"100-0", true, 1}, // redelivered
			{"100-1", true, 2},
			{"99-5", true, 2}, // older than the last counted
			{"101-0", false, 0},
			{"102-0", true, 1},
		}
		for _, st := range steps {
			got, err := s.CountInARow(t.Context(), "alpha", st.id, st.refused)
			if err != nil {
				t.Fatal(err)
			}
			if got != st.want {
				t.Fatalf("after %s (refused %v): got %d, want %d", st.id, st.refused, got, st.want)
			}
		}
		if _, err := s.CountInARow(t.Context(), "alpha", "x-1", true); deskbot.ErrorCode(err) != deskbot.EINVALID {
			t.Fatalf("a forged id: %v", err)
		}
	})
}

// The day's best P&L rises with the samples, never falls, and starts again
// on the next India day; the samples read back in order.
func TestPnLSamplesKeepTheDaysBest(t *testing.T) {
	backends(t, func(t *testing.T, s *store.Store) {
		day := time.Date(2026, 12, 3, 4, 0, 0, 0, time.UTC) // 09:30 IST
		steps := []struct {
			at   time.Time
			pnl  float64
			best float64
		}{
			{day, -100, -100},
			{day.Add(time.Minute), 2500.5, 2500.5},
			{day.Add(2 * time.Minute), 1000, 2500.5},
			{day.Add(24 * time.Hour), -50, -50},
		}
		for _, st := range steps {
			best, err := s.AddPnLSample(t.Context(), "alpha", deskbot.PnLSample{At: st.at, PnL: st.pnl})
			if err != nil {
				t.Fatal(err)
			}
			if best != st.best {
				t.Fatalf("best after %v at %v: got %v, want %v", st.pnl, st.at, best, st.best)
			}
		}
		got, err := s.PnLSamples(t.Context(), "alpha", "2026-12-03")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 || got[0].PnL != -100 || got[2].PnL != 1000 || !got[1].At.Equal(day.Add(time.Minute)) {
			t.Fatalf("samples: %+v", got)
		}
	})
}
