package gate_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deskbot/deskbot/gate/gatetest"

	"github.com/deskbot/deskbot"
	"github.com/deskbot/deskbot/gate"
	"github.com/deskbot/deskbot/store"
	"github.com/deskbot/deskbot/store/storetest"
)

// readCounter is the store, counting reads of a request.
type readCounter struct {
	*store.Store
	reads atomic.Int64
}

func (c *readCounter) Request(ctx context.Context, id string) (*deskbot.Request, error) {
	c.reads.Add(1)
	return c.Store.Request(ctx, id)
}

// A request this gate held is decided without reading it back (its content
// never changes; the transition checks its state), and the whole allow is
// the decision and the record of the run. A gate that did not hold it (a
// second process) reads it once, and decides the same.
func TestResolveReadsNothingBackItHeld(t *testing.T) {
	st := &readCounter{Store: storetest.MustOpen(t)}
	clk := newClock()
	cfg := gate.Config{Tools: []string{"place_order"}, Expiry: 5 * time.Minute, Limits: &market{}}
	holder := gatetest.MustNew(t, cfg, st, &runner{}, clk.Now, quietLog())
	other := gatetest.MustNew(t, cfg, st, &runner{}, clk.Now, quietLog())
	for _, c := range []struct {
		name      string
		decider   *gate.Gate
		wantReads int64
	}{
		{"the gate that held it", holder, 0},
		{"another gate", other, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, _, err := holder.Hold(t.Context(), "main", "trig", deskbot.ToolCall{ID: "c1", Name: "place_order", Arguments: []byte(`{"qty": 24512.123456789012}`)})
			if err != nil {
				t.Fatal(err)
			}
			before := st.reads.Load()
			if _, err := c.decider.Decide(t.Context(), r.ID, deskbot.Seen{Changes: -1, Whole: true}, deskbot.AllowOnce, "", asha); err != nil {
				t.Fatal(err)
			}
			c.decider.WaitRuns()
			if got := st.reads.Load() - before; got != c.wantReads {
				t.Errorf("reads of the request = %d; want %d", got, c.wantReads)
			}
			after, err := st.Store.Request(t.Context(), r.ID)
			if err != nil {
				t.Fatal(err)
			}
			if after.State != deskbot.StateRan || string(after.Content.Arguments) != `{"qty": 24512.123456789012}` {
				t.Errorf("after resolve: %+v", after)
			}
			if _, err := gatetest.Resolve(t.Context(), c.decider, r.ID, deskbot.AllowOnce, "", ravi); deskbot.ErrorCode(err) != deskbot.ECONFLICT {
				t.Errorf("second resolve: %v; want ECONFLICT", err)
			}
		})
	}
}
