package decision_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/decision"
	"github.com/deskbot/deskbot/gate"
	"github.com/deskbot/deskbot/store"
	"github.com/deskbot/deskbot/store/storetest"
)

type runner struct {
	mu    sync.Mutex
	calls int
}

func (r *runner) RunTool(ctx context.Context, desk string, call deskbot.ToolCall) (deskbot.ToolResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	return deskbot.ToolResult{Text: "closed"}, nil
}

func (r *runner) runs() int { r.mu.Lock(); defer r.mu.Unlock(); return r.calls }

type world struct {
	store  *store.Store
	gate   *gate.Gate
	runner *runner
	now    time.Time
	wg     sync.WaitGroup
}

func mustWorld(t *testing.T) *world {
	t.Helper()
	w := &world{store: storetest.MustOpen(t), runner: &runner{}, now: time.Date(2026, 11, 30, 8, 30, 0, 0, time.UTC)}
	cfg := gate.Config{Tools: []string{"flatten_desk"}, Expiry: 5 * time.Minute}
	w.gate = gate.New(cfg, w.store, w.runner, func() time.Time { return w.now }, slog.New(slog.DiscardHandler))
	return w
}

// start runs an allowed call as the service does, on a lifetime of its
// own; the test waits for it with w.wg.
func (w *world) start(run func(context.Context)) bool {
	w.wg.Add(1)
	go func() { defer w.wg.Done(); run(context.Background()) }()
	return true
}

func (w *world) mustHold(t *testing.T) *deskbot.Request {
	t.Helper()
	r, _, err := w.gate.Hold(t.Context(), "alpha", "trigger-1", deskbot.ToolCall{ID: "c1", Name: "flatten_desk", Arguments: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatalf("hold: %v", err)
	}
	return r
}

var asha = deskbot.Person{ID: 101, Name: "Asha"}
var ravi = deskbot.Person{ID: 102, Name: "Ravi"}

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
			w := mustWorld(t)
			r := w.mustHold(t)
			got, err := decision.DecideShown(t.Context(), w.gate, w.start, slog.New(slog.DiscardHandler), r.ID, -1, tt.first, "", asha)
			if err != nil {
				t.Fatalf("decide: %v", err)
			}
			if got.Text != tt.want || got.AwaitsReason != tt.awaits {
				t.Errorf("answer = %q (awaits reason %v), want %q (%v)", got.Text, got.AwaitsReason, tt.want, tt.awaits)
			}
			// A second tap, by anyone, is told what happened and changes nothing.
			_, err = decision.DecideShown(t.Context(), w.gate, w.start, slog.New(slog.DiscardHandler), r.ID, -1, deskbot.AllowOnce, "", ravi)
			if deskbot.ErrorCode(err) != deskbot.ECONFLICT || !strings.HasPrefix(deskbot.ErrorMessage(err), "Already") {
				t.Errorf("second tap: %v, want ECONFLICT saying what already happened", err)
			}
			w.wg.Wait()
			if got, want := w.runner.runs(), tt.wantRuns; got != want {
				t.Errorf("runs = %d, want %d", got, want)
			}
			grants, err := w.gate.Grants(t.Context())
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
	w := mustWorld(t)
	r := w.mustHold(t)
	w.now = w.now.Add(6 * time.Minute)
	_, err := decision.DecideShown(t.Context(), w.gate, w.start, slog.New(slog.DiscardHandler), r.ID, -1, deskbot.AllowOnce, "", asha)
	if deskbot.ErrorCode(err) != deskbot.ECONFLICT || !strings.Contains(deskbot.ErrorMessage(err), "lapsed") {
		t.Errorf("decide a lapsed request: %v, want ECONFLICT saying it lapsed", err)
	}
	w.wg.Wait()
	if got := w.runner.runs(); got != 0 {
		t.Errorf("runs = %d, want 0", got)
	}
}
