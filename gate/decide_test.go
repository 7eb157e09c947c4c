package gate_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/gate"
	"github.com/deskbot/deskbot/gate/gatetest"
	"github.com/deskbot/deskbot/store/storetest"
	"github.com/deskbot/deskbot/words"
)

// The decision entry answers in the words both the chat and the page say,
// runs a won allow on the gate's lifetime, and tells a second tap what
// already happened.
func TestDecide(t *testing.T) {
	tests := []struct {
		name      string
		first     deskbot.Decision
		want      string
		wantRuns  int
		wantGrant bool
		awaits    bool
	}{
		{"allow once runs once", deskbot.AllowOnce, "Allowed; running…", 1, false, false},
		{"always allow grants", deskbot.AlwaysAllow, "Always allowed; running…", 1, true, false},
		{"deny runs nothing", deskbot.Deny, "Denied; it will not run.", 0, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mustFixture(t)
			r := gatetest.MustHold(t, f, "alpha", "flatten_desk", "")
			got, err := gatetest.Resolve(t.Context(), f.gate, r.ID, tt.first, "", asha)
			if err != nil {
				t.Fatalf("decide: %v", err)
			}
			if got.Text != tt.want || got.AwaitsReason != tt.awaits {
				t.Errorf("answer = %q (awaits reason %v), want %q (%v)", got.Text, got.AwaitsReason, tt.want, tt.awaits)
			}
			// A second tap, by anyone, is told what happened and changes nothing.
			_, err = gatetest.Resolve(t.Context(), f.gate, r.ID, deskbot.AllowOnce, "", ravi)
			if deskbot.ErrorCode(err) != deskbot.ECONFLICT || !strings.HasPrefix(deskbot.ErrorMessage(err), "Already") {
				t.Errorf("second tap: %v, want ECONFLICT saying what already happened", err)
			}
			f.gate.Stop() // waits for the call it started
			if got, want := len(f.runner.runs()), tt.wantRuns; got != want {
				t.Errorf("runs = %d, want %d", got, want)
			}
			grants, err := f.gate.Grants(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if got, want := len(grants) == 1, tt.wantGrant; got != want {
				t.Errorf("grant written = %v, want %v (%v)", got, want, grants)
			}
		})
	}
}

func TestDecideLapsed(t *testing.T) {
	f := mustFixture(t)
	r := gatetest.MustHold(t, f, "alpha", "flatten_desk", "")
	f.clock.Add(6 * time.Minute)
	_, err := gatetest.Resolve(t.Context(), f.gate, r.ID, deskbot.AllowOnce, "", asha)
	if deskbot.ErrorCode(err) != deskbot.ECONFLICT || !strings.Contains(deskbot.ErrorMessage(err), "lapsed") {
		t.Errorf("decide a lapsed request: %v, want ECONFLICT saying it lapsed", err)
	}
	f.gate.Stop()
	if got := len(f.runner.runs()); got != 0 {
		t.Errorf("runs = %d, want 0", got)
	}
}

// An allowed call runs on the gate's lifetime, not on the context of the
// tap that allowed it, which ends as soon as the person is answered; and
// Stop waits for it.
func TestAllowedCallOutlivesTheTap(t *testing.T) {
	f := mustFixture(t)
	f.runner.block = make(chan struct{})
	r := gatetest.MustHold(t, f, "alpha", "flatten_desk", "")
	tap, cancel := context.WithCancel(t.Context())
	ans, err := f.gate.Decide(tap, r.ID, deskbot.Seen{Changes: -1, Whole: true}, deskbot.AllowOnce, "", asha)
	cancel()
	if err != nil || ans.Request.State != deskbot.StateRunning {
		t.Fatalf("allow: %+v, %v; want it running", ans, err)
	}
	close(f.runner.block)
	f.gate.Stop()
	if got, err := f.gate.Request(t.Context(), r.ID); err != nil || got.State != deskbot.StateRan {
		t.Errorf("after the tap's context ended the call is %v (%v); want it ran", got, err)
	}
}

// An allow from a view that did not show the call whole is refused, in
// the words both the chat and the page say, and nothing is decided.
func TestAllowNotShownWholeIsRefused(t *testing.T) {
	f := mustFixture(t)
	r := gatetest.MustHold(t, f, "alpha", "flatten_desk", "")
	for _, d := range []deskbot.Decision{deskbot.AllowOnce, deskbot.AlwaysAllow} {
		_, err := f.gate.Decide(t.Context(), r.ID, deskbot.Seen{Changes: -1}, d, "", asha)
		if deskbot.ErrorCode(err) != deskbot.ECONFLICT || deskbot.ErrorMessage(err) != words.NotShownWholeAnswer {
			t.Errorf("%s of a call not shown whole: %v; want ECONFLICT %q", d, err, words.NotShownWholeAnswer)
		}
	}
	if cur, err := f.gate.Request(t.Context(), r.ID); err != nil || cur.State != deskbot.StateOpen || len(f.runner.runs()) != 0 {
		t.Errorf("request %v (%v), %d runs; want it open and nothing run", cur, err, len(f.runner.runs()))
	}
	// A denial needs no whole view: denying is always safe.
	if _, err := f.gate.Decide(t.Context(), r.ID, deskbot.Seen{Changes: -1}, deskbot.Deny, "", asha); err != nil {
		t.Errorf("deny from a cut view: %v", err)
	}
}

// A grant's confirmation is checked on the server: it grants only when the
// terms it showed are the ones the gate would grant now. A confirmation
// that shows none (a tap that never asked), forged terms, or terms shown
// by a process whose cap was another (the service restarted with a new
// GRANT_MAX_NOTIONAL between the ask and the confirm) grant nothing, run
// nothing and say why; the terms the gate gives now grant what they say.
func TestGrantConfirmationMustShowTheTermsGrantedNow(t *testing.T) {
	order := `{"symbol":"TCS","side":"buy","quantity":10,"price":4000}`
	f := mustFixture(t, func(c *gate.Config) { c.GrantMaxNotional = 50000; c.GrantTTL = 2 * time.Hour })
	r := gatetest.MustHold(t, f, "main", "place_order", order)
	g, shown, ok, err := f.gate.GrantTerms(t.Context(), r.ID)
	if err != nil || !ok || g.Limit != 50000 {
		t.Fatalf("terms = %+v, %v, %v; want a grant capped at ₹50,000", g, ok, err)
	}
	cfg := f.cfg
	cfg.GrantMaxNotional = 80000
	restarted := gatetest.MustNew(t, cfg, storetest.MustReopen(t, f.store), f.runner, f.clock.Now, quietLog())
	_, now, _, err := restarted.GrantTerms(t.Context(), r.ID)
	if err != nil || now == shown {
		t.Fatalf("terms after the restart = %q (%v); want other than %q", now, err, shown)
	}
	for _, tt := range []struct{ name, terms string }{
		{"no terms", ""},
		{"forged terms", "0123456789ab"},
		{"terms shown before the restart", shown},
	} {
		_, err := restarted.Decide(t.Context(), r.ID, deskbot.Seen{Changes: 0, Whole: true, Terms: tt.terms}, deskbot.AlwaysAllow, "", asha)
		if deskbot.ErrorCode(err) != deskbot.ECONFLICT || deskbot.ErrorMessage(err) != words.GrantTermsChanged {
			t.Errorf("confirmation with %s: %v; want ECONFLICT %q", tt.name, err, words.GrantTermsChanged)
		}
		if gs, _ := restarted.Grants(t.Context()); len(gs) != 0 || len(f.runner.runs()) != 0 {
			t.Fatalf("confirmation with %s granted %+v and ran %d", tt.name, gs, len(f.runner.runs()))
		}
		if cur, err := restarted.Request(t.Context(), r.ID); err != nil || cur.State != deskbot.StateOpen {
			t.Fatalf("confirmation with %s left the request %v (%v)", tt.name, cur, err)
		}
	}
	ans, err := restarted.Decide(t.Context(), r.ID, deskbot.Seen{Changes: 0, Whole: true, Terms: now}, deskbot.AlwaysAllow, "", asha)
	if err != nil || ans.Text != "Always allowed; running…" {
		t.Fatalf("confirmation with the terms given now: %+v, %v", ans, err)
	}
	if gs, err := restarted.Grants(t.Context()); err != nil || len(gs) != 1 || gs[0].Limit != 80000 {
		t.Errorf("grants = %+v (%v); want the one confirmed, up to ₹80,000", gs, err)
	}
}
