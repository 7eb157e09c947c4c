package store_test

import (
	"sync"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/store/storetest"
)

// A resume names the halt its approver read: a later halt is not lifted
// by it, two resumes of one halt lift it once, and a desk not halted is
// not "resumed" from a halt at all.
func TestResumeLiftsOnlyTheHaltItNames(t *testing.T) {
	s := storetest.MustOpen(t)
	ctx := t.Context()
	at := time.Date(2026, 12, 3, 10, 0, 0, 123456789, deskbot.IST)
	halt := func(at time.Time) {
		t.Helper()
		h := deskbot.Halt{Rule: deskbot.RuleMaxDailyLoss, Figures: "P&L today -₹6,000.00", At: at}
		if won, err := s.HaltDesk(ctx, "alpha", h, deskbot.AuditEntry{Action: "halt", By: "risk", At: at}); err != nil || !won {
			t.Fatalf("HaltDesk: %v, %v", won, err)
		}
	}
	resume := func(halt time.Time) error {
		return s.Resume(ctx, "alpha", halt, deskbot.AuditEntry{Action: "resume", By: "Asha (101)", At: at.Add(time.Hour)})
	}
	halted := func() bool {
		t.Helper()
		st, err := s.DeskStatus(ctx, "alpha")
		if err != nil {
			t.Fatal(err)
		}
		return st.Halt != nil && st.Paused
	}
	resumes := func() int {
		t.Helper()
		trail, err := s.AuditTrail(ctx, 100)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range trail {
			if e.Action == "resume" {
				n++
			}
		}
		return n
	}

	if err := resume(at); deskbot.ErrorCode(err) != deskbot.ECONFLICT {
		t.Errorf("the resume of a desk not halted: %v; want ECONFLICT", err)
	}
	halt(at)
	if err := s.FinishHalt(ctx, "alpha", "paused the desk"); err != nil {
		t.Fatal(err)
	}
	for _, wrong := range []time.Time{at.Add(-time.Hour), at.Add(time.Millisecond), {}} {
		if err := resume(wrong); deskbot.ErrorCode(err) != deskbot.ECONFLICT || !halted() {
			t.Errorf("a resume of the halt at %v: %v, halted %v; want ECONFLICT and still halted", wrong, err, halted())
		}
	}
	// Two approvers' taps at once: one resume.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() { errs[i] = resume(at) })
	}
	wg.Wait()
	if halted() {
		t.Fatal("still halted after two resumes")
	}
	if (errs[0] == nil) == (errs[1] == nil) {
		t.Errorf("two resumes of one halt answered %v and %v; want one nil, one ECONFLICT", errs[0], errs[1])
	}
	if got := resumes(); got != 1 {
		t.Errorf("resumes audited: %d, want 1", got)
	}
	// Halted again: the first halt's resume does not lift the second.
	later := at.Add(30 * time.Minute)
	halt(later)
	if err := resume(at); deskbot.ErrorCode(err) != deskbot.ECONFLICT || !halted() {
		t.Errorf("the first halt's resume of the second: %v, halted %v", err, halted())
	}
	if err := resume(later); err != nil || halted() {
		t.Errorf("the second halt's own resume: %v, halted %v", err, halted())
	}
}
